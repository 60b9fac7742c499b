#!/bin/bash
# The CUDA backend's tests and benchmark on a GPU machine, in one go (logs under $OUT or ./out-cuda).
#
#   bench/cuda/run_device.sh [phases]     phases: any of build,make,sweep,test,vtest,acc,bench,tuned,profile,torch,
#                                         cold,compile (default: build,test,acc,make,bench,torch,cold)
#
# sweep: the per-stage profile at 32x512 under each pair of attention variants (ATTN_G[i], ATTN_L[i]),
# twice. vtest: cuda/forward under each pair.
#
# Needs: nvcc, cmake, ninja, python3 with torch + transformers; the laya==0.4.15 wheel in .whl/
# (pip download --no-deps laya==0.4.15 -d .whl) when the machine cannot reach PyPI; utf8proc
# installed, or its Debian packages in .cudadeps/ (apt-get download libutf8proc2 libutf8proc-dev).
# Full-size random checkpoints are generated here (never uploaded): /tmp/laya_ck_{large,mmbert}.
set -u
PHASES=${1:-build,test,acc,make,bench,torch,cold}
OUT=${OUT:-$PWD/out-cuda}
mkdir -p "$OUT"
export PYTHONUNBUFFERED=1
has() { [[ ",$PHASES," == *",$1,"* ]]; }
log() { echo "=== $* ($(date +%T))"; }

nvidia-smi --query-gpu=name,driver_version,memory.total,clocks.max.sm --format=csv,noheader
CM_EXTRA=""
if ! ldconfig -p | grep -q libutf8proc; then
  mkdir -p /tmp/u8 && for f in .cudadeps/*.deb; do dpkg -x "$f" /tmp/u8; done
  CM_EXTRA="-DUTF8PROC_ROOT=/tmp/u8"
fi
if ! python3 -c "import laya" 2>/dev/null && ls .whl/laya-*.whl >/dev/null 2>&1; then
  python3 -m pip install -q --no-index --no-deps --no-compile --target /tmp/site .whl/laya-*.whl
  export PYTHONPATH=/tmp/site
fi

if has build; then
  log build
  cmake -S bench/cuda/device -B build-dev -G Ninja -DCMAKE_BUILD_TYPE=Release $CM_EXTRA >"$OUT/cmake.log" 2>&1 || tail -20 "$OUT/cmake.log"
  ninja -C build-dev 2>&1 | tail -15
fi
if has make; then
  log "make checkpoints"
  for m in ${MAKE_MODELS:-large mmbert}; do
    [ -f /tmp/laya_ck_$m/model.safetensors ] || timeout 300 python3 bench/cuda/torch_bench.py make --model $m --out /tmp/laya_ck_$m
  done 2>&1 | grep -v "^\[transformers\]" | tee "$OUT/make.log"
fi
# attention variant pairs (global, local): the defaults first, then the previous defaults
ATTN_G=(w4m2n32b3 w4m2n64)
ATTN_L=(w4m1n32b4 w4m1n64)
if has sweep; then
  log "attention variants (profile 32x512)"
  prof() { # label env...
    local lab=$1; shift
    env "$@" LAYA_CUDA_PROFILE=1 timeout 60 ./build-dev/bench_cuda /tmp/laya_ck_$m --label $m --shapes 32x512 --reps 5 |
      awk -v m=$m -v lab="$lab" '/attn global/{ag=$3} /attn local/{al=$3} /^  total/{t=$2}
        END{printf "SWEEP %s %s | global %s local %s total %s\n", m, lab, ag, al, t}'
  }
  for m in large mmbert; do
    for k in 1 2; do
      for i in "${!ATTN_G[@]}"; do
        prof "G ${ATTN_G[$i]} L ${ATTN_L[$i]}" LAYA_CUDA_ATTN_G=${ATTN_G[$i]} LAYA_CUDA_ATTN_L=${ATTN_L[$i]}
      done
    done
  done 2>&1 | tee "$OUT/sweep.log"
fi
if has test; then
  log test
  { timeout 300 ./build-dev/test_cuda_forward
    for c in modernbert-tiny mmbert-tiny; do
      timeout 300 ./build-dev/test_cuda_parity tests/fixtures/ckpt/$c tests/fixtures/parity/$c/rows.jsonl
    done; } 2>&1 | tee "$OUT/test.log" | tail -40
fi
if has vtest; then
  log "cuda/forward under both attention variant pairs"
  for i in "${!ATTN_G[@]}"; do
    echo "VTEST G ${ATTN_G[$i]} L ${ATTN_L[$i]}: "
    LAYA_CUDA_ATTN_G=${ATTN_G[$i]} LAYA_CUDA_ATTN_L=${ATTN_L[$i]} timeout 300 ./build-dev/test_cuda_forward 2>&1 |
      grep -E "fail|error|checks"
  done 2>&1 | tee "$OUT/vtest.log"
fi
if has acc; then
  log "accuracy vs cpu-ref (full size, random weights)"
  for m in mmbert large; do
    [ -f "bench/cuda/ref/acc_$m.bin" ] && timeout 120 ./build-dev/fullsize_acc cuda $m "bench/cuda/ref/acc_$m.bin"
  done 2>&1 | tee "$OUT/acc.log"
fi
if has bench; then
  log "laya.c bench"
  for m in large mmbert; do
    for p in bf16 fp16; do
      timeout 200 ./build-dev/bench_cuda /tmp/laya_ck_$m --prec $p --label $m
    done
    timeout 120 python3 bench/cuda/torch_bench.py acc --dir /tmp/laya_ck_$m --out /tmp/acc_$m 2>&1 | grep -v "^\[transformers\]"
    for p in bf16 fp16; do
      echo -n "ACC-TORCH $m $p vs torch fp32 (laya DecisionModel): "
      timeout 60 ./build-dev/bench_cuda /tmp/laya_ck_$m --prec $p --acc /tmp/acc_$m.batch.bin /tmp/acc_$m.ref.bin
    done
  done 2>&1 | tee "$OUT/bench.log"
fi
if has tuned; then
  log "laya.c bench with cuBLASLt candidate timing (LAYA_CUDA_GEMM_TUNE=1)"
  for m in large mmbert; do
    LAYA_CUDA_GEMM_TUNE=1 timeout 200 ./build-dev/bench_cuda /tmp/laya_ck_$m --prec bf16 --label $m-tuned
  done 2>&1 | tee "$OUT/tuned.log"
fi
if has profile; then
  log "per-stage profile (eager, events between stages)"
  for m in large mmbert; do
    [ -f /tmp/laya_ck_$m/model.safetensors ] && LAYA_CUDA_PROFILE=1 timeout 120 ./build-dev/bench_cuda /tmp/laya_ck_$m --label $m --shapes ${PROFILE_SHAPES:-32x512,1x512} --reps 5
  done 2>&1 | tee "$OUT/profile.log"
fi
if has cold; then
  log "cold start (page cache warm)"
  for m in large mmbert; do
    for i in 1 2; do
      a=$(date +%s.%N); ./build-dev/bench_cuda /tmp/laya_ck_$m --cold --label $m; b=$(date +%s.%N)
      echo "COLD-PROCESS laya.c $m wall_s $(awk "BEGIN{print $b - $a}")"
    done
    a=$(date +%s.%N); timeout 200 python3 bench/cuda/torch_bench.py cold --dir /tmp/laya_ck_$m 2>&1 | grep COLD; b=$(date +%s.%N)
    echo "COLD-PROCESS torch $m wall_s $(awk "BEGIN{print $b - $a}")"
  done 2>&1 | tee "$OUT/cold.log"
fi
if has torch; then
  log "torch eager"
  for m in large mmbert; do
    timeout 400 python3 bench/cuda/torch_bench.py bench --dir /tmp/laya_ck_$m --label $m 2>&1 | grep -v "^\[transformers\]"
  done 2>&1 | tee "$OUT/torch.log"
fi
if has compile; then
  # COMPILE_MODELS (default: large); shapes per model from COMPILE_SHAPES_<model>, else COMPILE_SHAPES
  log "torch.compile(dynamic=True)"
  for m in ${COMPILE_MODELS:-large}; do
    v=COMPILE_SHAPES_$m
    timeout ${COMPILE_TIMEOUT:-560} python3 bench/cuda/torch_bench.py bench --dir /tmp/laya_ck_$m --label $m --shapes "" \
      --compile-shapes "${!v:-${COMPILE_SHAPES:-32x512,mixed64,32x1024}}"
  done 2>&1 | grep -v "^\[transformers\]" | tee "$OUT/compile.log"
fi
log done
