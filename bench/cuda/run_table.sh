#!/usr/bin/env bash
# bench/cuda/run_table.sh: issue 16's benchmark in one go on the GPU machine, from binaries built on
# a development machine, so a short device session spends no time compiling. Every engine runs on
# the same machine in the same call: laya.c bf16 / fp16 / fp8, the vendor libraries' floor for the
# encoder GEMMs, Python Laya 0.4.15 (torch eager), laya-cuda 0.1.1, first request after open, and
# laya-serve under load.
#
# On the development machine (a CUDA build, scripts/setup.sh):
#
#   bench/cuda/run_table.sh --collect build out/table      binaries, the CUDA module, the shared
#                                                           libraries the device image lacks
#   pip download --no-deps laya==0.4.15 -d out/table/whl
#   pip download --no-deps --only-binary=:all: --python-version 3.12 --platform any \
#       laya-cuda==0.1.1.post1 -d out/table/whl
#   tar -C out -cJf out/table.tar.xz table
#
# then carry out/table.tar.xz and run in the repository root on the device:
#
#   mkdir -p /tmp/t && tar -xJf out/table.tar.xz -C /tmp/t && /tmp/t/table/run_table.sh [STEPS]
#
# STEPS: a comma list of fwd (bench_cuda, both models, bf16 / fp16 / fp8), floor (torch_bench.py
# floor), torch (torch_bench.py bench: Laya's DecisionModel eager), e2e (bench/cpu/e2e.py --device
# cuda; COMPILE=1 adds torch.compile, ~5 more minutes), first (bench_first), serve (bench/serve/run.py
# on ModernBERT-large, batching and one-at-a-time, CLIENTS, DURATION s a point); default: all of them,
# which takes longer than one 10-minute device call: run fwd,floor,torch in one and e2e,first,serve
# in the next. SHAPES (default 1x128,1x512,32x512,32x1024,mixed64), PRECS (fwd's precisions, default
# "bf16 fp16 fp8"). Logs under $OUT (default
# /tmp/laya-table). The checkpoints are made there (tools/make_random_ckpt.py: full size, random
# weights, Laya's layout) into /tmp/ckl (ModernBERT-large) and /tmp/ckm (mmBERT-base) unless present.
set -u
here=$(cd "$(dirname "$0")" && pwd)
if [ "${1:-}" = "--collect" ]; then
  build=${2:?BUILD}; dest=${3:?DEST}
  mkdir -p "$dest/bin" "$dest/lib" "$dest/eb/bench/cpu"
  for b in bench/cuda/bench_cuda bench/cuda/bench_first laya-serve; do cp "$build/$b" "$dest/bin/" || exit 1; done
  cp "$build/bench/cpu/e2e" "$dest/eb/bench/cpu/" || exit 1 # e2e.py --build wants BUILD/bench/cpu/e2e
  # the CUDA backend module and the shared libraries the device image lacks
  "$here/../../tests/device/copy_libs.sh" "$build" "$dest" "$dest"/bin/* "$dest/eb/bench/cpu/e2e" || exit 1
  strip "$dest"/bin/* "$dest/eb/bench/cpu/e2e" "$dest/lib/liblaya_cuda.so" 2>/dev/null
  cp "$0" "$dest/run_table.sh"
  du -sh "$dest"
  exit 0
fi

STEPS=",${1:-fwd,floor,torch,e2e,first,serve},"
has() { [[ $STEPS == *",$1,"* ]]; }
OUT=${OUT:-/tmp/laya-table}
SHAPES=${SHAPES:-1x128,1x512,32x512,32x1024,mixed64}
mkdir -p "$OUT"
export PYTHONUNBUFFERED=1
export LD_LIBRARY_PATH=$here/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH} LAYA_CUDA_MODULE=$here/lib/liblaya_cuda.so
B=$here/bin
T0=$SECONDS
step() { echo "=== $* (+$((SECONDS - T0)) s)"; }
{ nvidia-smi --query-gpu=name,driver_version,memory.total,clocks.max.sm --format=csv,noheader
  grep -m1 'model name' /proc/cpuinfo; uptime; } | tee "$OUT/machine.txt"
if ls "$here"/whl/*.whl >/dev/null 2>&1; then
  python3 -m pip install -q --no-index --no-deps --target /tmp/site "$here"/whl/*.whl 2>&1 | tail -2
  export PYTHONPATH=/tmp/site${PYTHONPATH:+:$PYTHONPATH}
fi
python3 -c "import torch, transformers; print('torch', torch.__version__, 'transformers', transformers.__version__)"
step checkpoints
[ -f /tmp/ckl/SHA256SUMS ] || (python3 tools/make_random_ckpt.py modernbert-large /tmp/ckl --no-check > "$OUT/make-large.log" 2>&1) &
[ -f /tmp/ckm/SHA256SUMS ] || python3 tools/make_random_ckpt.py mmbert-base /tmp/ckm --no-check > "$OUT/make-mmbert.log" 2>&1
wait
for m in ckl ckm; do [ -f /tmp/$m/SHA256SUMS ] || { echo "no checkpoint /tmp/$m"; tail -5 "$OUT"/make-*.log; exit 1; }; done

if has fwd; then
  step "laya.c forward (bench_cuda)"
  for m in ckl ckm; do for p in ${PRECS:-bf16 fp16 fp8}; do
    timeout 150 "$B/bench_cuda" /tmp/$m --prec $p --label $m-$p --shapes "$SHAPES" --reps 20 2>&1 | grep -v "^#"
  done; done | tee "$OUT/fwd.log"
fi
if has floor; then
  step "the encoder GEMMs alone (torch_bench.py floor)"
  for m in large mmbert; do
    timeout 200 python3 bench/cuda/torch_bench.py floor --model $m --shapes "$SHAPES" 2>&1 | grep FLOOR
  done | tee "$OUT/floor.log"
fi
if has torch; then
  step "Python Laya's DecisionModel, torch eager (torch_bench.py bench)"
  for m in ckl:large ckm:mmbert; do
    timeout 250 python3 bench/cuda/torch_bench.py bench --dir /tmp/${m%%:*} --label ${m##*:} --shapes "$SHAPES" 2>&1 | grep TORCH
  done | tee "$OUT/torch.log"
fi
if has e2e; then
  step "end to end, every Laya GPU runtime (e2e.py --device cuda)"
  skip="torch compile"
  [ "${COMPILE:-0}" = 1 ] && skip=""
  timeout 560 python3 bench/cpu/e2e.py --device cuda --build "$here/eb" --model large=/tmp/ckl --model mmbert=/tmp/ckm \
    --reps 20 --skip "$skip" --out "$OUT/e2e" 2>&1 | tee "$OUT/e2e.log"
fi
if has first; then
  step "first request after open (bench_first)"
  for m in ckl ckm; do timeout 120 "$B/bench_first" /tmp/$m --device cuda --reps 100 --label $m 2>&1 | grep -v "^#"; done |
    tee "$OUT/first.log"
fi
if has serve; then
  step "laya-serve, ModernBERT-large (bench/serve/run.py)"
  timeout 300 python3 bench/serve/run.py --serve "$B/laya-serve" --ckpt /tmp/ckl --device cuda --client loadgen \
    --threads "$(nproc)" --duration "${DURATION:-6}" --clients "${CLIENTS:-1,8,32,128}" --out "$OUT/serve-large.md" 2>&1 |
    tail -30
fi
step done
