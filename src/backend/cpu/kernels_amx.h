/*
 * kernels_amx.h: the AMX GEMMs (kernels_amx.c) and their portable model.
 *
 * The tiling code of kernels_amx_tiles.h is compiled twice: over the AMX tile instructions
 * (tileloadd, tilezero, tdpbf16ps, tdpbusd, tilestored) and over a plain-C emulation of the same
 * instructions (kernels_amx.c, "emulated tiles"), so the tiling, the tails and the reading of the
 * packed layouts are tested on every machine, and on an AMX CPU the two are held against each other.
 *
 * Kernels (each one a gemm slot of kernels.h, same arguments, same packed weights):
 *   bf16   tdpbf16ps over the packed [K/2][32][2] panels read in place (B tile = 16 pairs x 16
 *          columns, row stride 128 bytes)
 *   int8   tdpbusd over the packed [K/4][32][4] panels (u8 activations, colsum compensation)
 *   f32x3  fp32 = bf16 hi + mid + lo parts of both operands; hi*hi + hi*mid + mid*hi products
 *          (relative error of one product <= ~3 * 2^-16 + fp32 rounding)
 *   f32x6  the same plus mid*mid, hi*lo, lo*hi (<= ~12 * 2^-24 + fp32 rounding)
 *   f32x5  activations in two parts (hi, mid), weights in three: hi*hi, hi*mid, mid*hi, mid*mid,
 *          hi*lo (<= ~2^-17, the activations' remainder, + fp32 rounding)
 * The f32x* GEMMs read the operands' parts where the caller gives them (packed_matrix.split: the
 * weights', made at create; gemm_input.split: the rows', split once per call by split_rows in a
 * pool step of the backend) and split what is not given themselves, with the same results.
 */
#ifndef LAYA_CPU_KERNELS_AMX_H
#define LAYA_CPU_KERNELS_AMX_H

#include "backend/cpu/kernels.h"

typedef void (*cpu_gemm_fn)(const gemm_input *x, const packed_matrix *w, int m0, int m1, int p0, int p1,
                            const gemm_epilogue *e);

typedef struct cpu_amx_gemms {
  const char *name; /* "amx" or "amx-emu" */
  cpu_gemm_fn bf16, i8, f32x3, f32x6, f32x5;
  void (*attention_bf16)(const attn_args *a); /* kernels.h's attention_bf16 on tiles (head size 64) */
  /* kernels.h's split_rows_f32: the activation parts the f32x* GEMMs read from gemm_input.split */
  void (*split_rows)(const float *x, int lda, int k, int r0, int r1, int m, uint16_t *parts, int ld, size_t plane);
  cpu_split_panel_fn split_panel; /* kernels.h's split_panel_f32 */
} cpu_amx_gemms;

/* The AMX kernels: NULL unless the compiler built them, CPUID and XCR0 report AMX-BF16/INT8 and
 * the kernel granted this process the tile data state (arch_prctl ARCH_REQ_XCOMP_PERM, asked once). */
const cpu_amx_gemms *cpu_amx_hw(void);
/* The same tiling over emulated tiles (plain C, scalar epilogues): every machine, for tests. */
const cpu_amx_gemms *cpu_amx_emu(void);

/* Tests only: while on, the calling thread's GEMM scratch requests fail as if out of memory (the
 * kernels then take their paths without scratch: one k block; the scalar kernel for split fp32). */
void cpu_amx_scratch_fail_for_tests(int on);

/* The "amx" kernel table: the AVX-512 table with its bf16 and int8 GEMMs and its bf16 attention on AMX; its fp32 GEMM is
 * the split-precision x6 AMX GEMM, or the AVX-512 one with LAYA_AMX_FP32=avx512 (x3 / x5: studies). NULL where
 * cpu_amx_hw() is NULL or the AVX-512 table is not available. */
const cpu_kernels *cpu_kernels_amx(void);

/* The scalar table with the fp32 GEMM above on the emulated tiles (LAYA_CPU_ISA=amx-emu: tests). */
const cpu_kernels *cpu_kernels_amx_emu(void);

#endif
