#!/bin/bash
# bench/cuda/run_ncu.sh: where one ModernBERT-large 32 x 512 forward's kernels stand against the
# hardware (Nsight Compute, on the GPU machine): our Hopper GEMM (Wi + GeGLU), cuBLASLt's GEMMs and
# the attention kernels of the first layers, then cuBLASLt's Wi alone (LAYA_CUDA_GEGLU=0), for the
# question BENCHMARKS.md leaves open (why our GEMM main loop runs at ~80% of cuBLASLt's).
#
#   bench/cuda/run_ncu.sh out/dv.tar.xz        (binaries collected as bench/cuda/run_attn.sh says)
#
# Clocks are left alone (--clock-control none). Full reports under $OUT; the key lines printed.
set -u
OUT=${OUT:-/tmp/laya-ncu}
mkdir -p "$OUT" /tmp/x && tar -xJf "${1:?the collected binaries (tar.xz)}" -C /tmp/x
P=/tmp/x/dv/pre; export LD_LIBRARY_PATH=$P/lib; B=$P/bin/bench_cuda
[ -f /tmp/ck/model.safetensors ] || python3 bench/cuda/make_ckpt_np.py /tmp/ck > /dev/null
SEC="--section SpeedOfLight --section ComputeWorkloadAnalysis --section MemoryWorkloadAnalysis --section WarpStateStats"
keys="^  [a-zA-Z_].*\(|Duration|Compute \(SM\) Throughput|Memory Throughput|L2 Cache Throughput|DRAM Throughput|Issue Slots Busy|Warp Cycles Per Issued"
timeout 240 ncu --clock-control none $SEC -k regex:'gg_|nvjet|gemm|xmma|flash|fa_wg' --launch-count 10 \
  "$B" /tmp/ck --shapes 32x512 --reps 1 > "$OUT/ncu_default.txt" 2>&1
echo "default (rc $?)"; grep -E "$keys" "$OUT/ncu_default.txt" | cut -c1-120
LAYA_CUDA_GEGLU=0 timeout 120 ncu --clock-control none $SEC -k regex:'nvjet|gemm|xmma' --launch-count 4 \
  "$B" /tmp/ck --shapes 32x512 --reps 1 > "$OUT/ncu_geglu0.txt" 2>&1
echo "LAYA_CUDA_GEGLU=0 (rc $?)"; grep -E "$keys" "$OUT/ncu_geglu0.txt" | cut -c1-120
