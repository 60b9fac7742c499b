/*
 * pdl.cuh: programmatic dependent launch (Hopper) for the forward's own kernels.
 *
 * A small pass (one 128-token row) is a chain of ~280 kernels of 3-10 us each, and much of each
 * kernel's time is its launch and ramp-up, not its work. Launched with the programmatic-serialization
 * attribute, a kernel's blocks may be scheduled while the kernel before it in the stream still
 * runs, so the launch and the kernel's own set-up overlap that kernel's tail.
 *
 * The rule that keeps this exact: every kernel launched through launch_dep() calls pdl_enter()
 * first, before it reads or writes any global memory and before any early return. Its
 * `griddepcontrol.wait` returns only once the previous kernel has completed and its writes are
 * visible (the PTX semantics: completion, not the trigger), so the chain stays ordered, and since
 * every block of every such kernel waits, a kernel never completes before its predecessor
 * (ordering stays transitive across the chain, cuBLASLt's kernels included, which are launched
 * normally). `griddepcontrol.launch_dependents` right after only lets the next kernel be scheduled
 * early. The Hopper GEMMs (gemm_sm90.cu) are the one refinement: their producer requests the
 * first weight tiles (which no kernel writes) before its wait and the activation tiles after it,
 * and no other thread of theirs reads global memory before data that came after that wait.
 * Without a programmatic predecessor both are no-ops, and below sm_90 they compile to
 * nothing. LAYA_CUDA_PDL=0 launches every kernel plainly (cuda_set_pdl).
 */
#ifndef LAYA_CUDA_PDL_CUH
#define LAYA_CUDA_PDL_CUH

#include <cuda_runtime.h>

#include <utility>

__device__ __forceinline__ void pdl_wait() {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
  asm volatile("griddepcontrol.wait;" ::: "memory");
#endif
}
__device__ __forceinline__ void pdl_trigger() {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
  asm volatile("griddepcontrol.launch_dependents;" ::: "memory");
#endif
}
__device__ __forceinline__ void pdl_enter() {
  pdl_wait();
  pdl_trigger();
}

/* Enqueue kernel k on stream s, with the programmatic-serialization attribute when cuda_pdl(). */
template <class... P, class... A>
static inline void launch_dep(void (*k)(P...), dim3 grid, dim3 block, size_t smem, cudaStream_t s, A &&...args) {
  cudaLaunchAttribute at;
  at.id = cudaLaunchAttributeProgrammaticStreamSerialization;
  at.val.programmaticStreamSerializationAllowed = 1;
  cudaLaunchConfig_t cfg = {};
  cfg.gridDim = grid;
  cfg.blockDim = block;
  cfg.dynamicSmemBytes = smem;
  cfg.stream = s;
  cfg.attrs = &at;
  cfg.numAttrs = cuda_pdl() ? 1 : 0;
  cudaLaunchKernelEx(&cfg, k, std::forward<A>(args)...);
}

#endif
