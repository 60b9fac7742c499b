#!/bin/bash
# The fused Wi + GeGLU GEMM (LAYA_CUDA_GEGLU, src/backend/cuda/gemm_sm90.cu) on the GPU machine from
# prebuilt binaries: on the development machine
#   tests/device/run_prebuilt.sh --collect BUILD /tmp/dv/pre
#   cp BUILD/bench/cuda/{bench_cuda,fullsize_acc,bench_first} BUILD/tests/cuda/test_cuda_warm /tmp/dv/pre/bin/
# carry /tmp/dv (tar.xz) and run from the repository root there: D=/tmp/dv bench/cuda/run_geglu.sh
# (self-check, parity with the kernel off and each variant, bench_cuda alternating, the stage profile,
# cuda/forward, cuda/warm, cuda/artifact and fullsize_acc with the kernel on). Logs under $OUT.
set -u
D=${D:-/tmp/dv}; B=$D/pre/bin; export LD_LIBRARY_PATH=$D/pre/lib
OUT=${OUT:-/tmp/out}; mkdir -p $OUT; F=$PWD/tests/fixtures
T0=$(date +%s); step() { echo "=== $* (+$(($(date +%s) - T0)) s)"; }
nvidia-smi --query-gpu=name,driver_version,clocks.max.sm --format=csv,noheader; date -u
( timeout 150 python3 bench/cuda/make_ckpt_np.py /tmp/ck_large > $OUT/make.log 2>&1 ) &
MK=$!
step geglu selftest
timeout 40 $B/test_cuda_geglu > $OUT/geglu.log 2>&1; GRC=$?
tail -15 $OUT/geglu.log; echo "geglu rc $GRC"
VARS="0 n256s4 n128s6"
if [ $GRC -ne 0 ]; then export LAYA_CUDA_GEGLU=0; VARS="0"; echo "FUSED BROKEN: the rest with LAYA_CUDA_GEGLU=0"; fi
step parity
for v in $VARS; do for c in modernbert-tiny mmbert-tiny modernbert-tiny-layers; do
  LAYA_CUDA_GEGLU=$v timeout 60 $B/test_cuda_parity $F/ckpt/$c $F/parity/$c/rows.jsonl > $OUT/parity_${v}_$c.log 2>&1
  echo "parity [$v] $c rc $?: $(tail -1 $OUT/parity_${v}_$c.log)"; grep -E "vs cpu-ref" $OUT/parity_${v}_$c.log
done; done
step "bench (wait for the checkpoint)"
wait $MK; tail -1 $OUT/make.log
for k in 1 2; do for v in $VARS; do
  LAYA_CUDA_GEGLU=$v timeout 40 $B/bench_cuda /tmp/ck_large --label large-$v --shapes 32x512,mixed64,1x512,1x128,32x1024 --reps 30 2>&1 | grep -E "BENCH|rror"
done; done | tee $OUT/bench.log | sed -E 's/  weights.*//'
for v in $VARS; do LAYA_CUDA_GEGLU=$v LAYA_CUDA_PROFILE=1 timeout 40 $B/bench_cuda /tmp/ck_large --label large-$v --shapes 32x512 --reps 5; done > $OUT/profile.log 2>&1
grep -E "PROFILE|gemm Wi|geglu|total" $OUT/profile.log
FV=n256s4; [ $GRC -ne 0 ] && FV=0
step "forward, warm, artifact (LAYA_CUDA_GEGLU=$FV)"
LAYA_CUDA_GEGLU=$FV timeout 100 $B/test_cuda_forward > $OUT/forward.log 2>&1; echo "forward rc $?: $(tail -1 $OUT/forward.log)"; grep -iE "fail" $OUT/forward.log | head -5
LAYA_CUDA_GEGLU=$FV timeout 60 $B/test_cuda_warm $F/ckpt/modernbert-tiny $F/parity/modernbert-tiny/cases.jsonl > $OUT/warm.log 2>&1; echo "warm rc $?: $(tail -1 $OUT/warm.log)"
LAYA_CUDA_GEGLU=$FV timeout 60 $B/test_cuda_artifact $F/ckpt/modernbert-tiny-layers $F/parity/modernbert-tiny-layers/cases.jsonl > $OUT/artifact.log 2>&1; echo "artifact rc $?: $(tail -1 $OUT/artifact.log)"
step "accuracy, full size vs cpu-ref"
for m in large mmbert; do for v in 0 n256s4; do LAYA_CUDA_GEGLU=$v timeout 50 $B/fullsize_acc cuda $m bench/cuda/ref/acc_$m.bin 2>&1 | grep ACC | sed "s/^/[$v] /"; done; done | tee $OUT/acc.log
step done
