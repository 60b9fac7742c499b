#!/usr/bin/env bash
# bench/cuda/run_embedbench.sh: bench_embed (what the CUDA embed pass is worth: embedding throughput
# and the shortlist end to end, CUDA bf16 against the CPU fp32 backend at 16 and 8 threads) on the
# H200 machine from a binary built on a development machine, in under 4 minutes of device time.
# Collect it there (a CUDA build: cmake ... && ninja -C build bench_embed):
#
#   bench/cuda/run_embedbench.sh --collect build out/embedbench     (binary + the shared libraries
#   tar -C out -cJf out/embedbench.tar.xz embedbench                  the device image lacks)
#
# carry out/embedbench.tar.xz and run in the repository root on the device:
#
#   tar -xJf out/embedbench.tar.xz -C /tmp && /tmp/embedbench/run_embedbench.sh
#
# It makes the full-size ModernBERT-large-shaped random checkpoint with bench/cuda/make_ckpt_np.py
# (numpy; /tmp/laya_ck_np, kept when there), then runs bench_embed on it; the log goes to
# $OUT/bench_embed.log (default /tmp/laya-embedbench). CONFIGS, REPS, BUDGET_S, DEADLINE_S override
# bench_embed's --configs / --reps / --budget-s / --deadline-s.
set -u
here=$(cd "$(dirname "$0")" && pwd)
if [ "${1:-}" = "--collect" ]; then
  build=${2:?BUILD}; dest=${3:?DEST}
  mkdir -p "$dest/bin" "$dest/lib"
  cp "$build/bench/cuda/bench_embed" "$dest/bin/"
  strip --strip-debug "$dest/bin/bench_embed"
  # the CUDA backend module and the shared libraries the device image lacks
  "$here/../../tests/device/copy_libs.sh" "$build" "$dest" "$dest"/bin/* || exit 1
  cp "$0" "$dest/run_embedbench.sh"
  du -sh "$dest"
  exit 0
fi
OUT=${OUT:-/tmp/laya-embedbench}
mkdir -p "$OUT"
export LD_LIBRARY_PATH=$here/lib:${LD_LIBRARY_PATH:-}
{ grep -m1 'model name' /proc/cpuinfo; echo "cpus $(nproc), $(lscpu 2>/dev/null | grep -m1 'Core(s) per socket' | tr -s ' ')"
  grep -o 'amx[a-z_0-9]*\|avx512_fp16' /proc/cpuinfo | sort -u | tr '\n' ' '; echo
  nvidia-smi -L 2>&1 | head -1; } | tee "$OUT/machine.txt"
CK=${CK:-/tmp/laya_ck_np}
t0=$SECONDS
if [ ! -f "$CK/model.safetensors" ]; then
  timeout 120 python3 bench/cuda/make_ckpt_np.py "$CK" || { echo "make_ckpt_np failed"; exit 1; }
fi
echo "checkpoint: $((SECONDS - t0)) s"
env -u LAYA_BACKEND -u LAYA_PRECISION -u LAYA_CPU_AMP -u LAYA_CPU_ISA -u LAYA_DEVICE -u LAYA_THREADS \
    -u LAYA_ESCALATE LAYA_QUIET_WARNINGS=1 \
  timeout 210 "$here/bin/bench_embed" "$CK" --configs "${CONFIGS:-cuda,cpu:16,cpu:8}" --reps "${REPS:-5}" \
    --budget-s "${BUDGET_S:-25}" --deadline-s "${DEADLINE_S:-165}" 2>&1 | tee "$OUT/bench_embed.log"
rc=${PIPESTATUS[0]}
echo "bench_embed rc $rc (${SECONDS} s in all)"
exit "$rc"
