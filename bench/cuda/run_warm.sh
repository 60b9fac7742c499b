#!/bin/bash
# Issue 16 items 4 and 5 on the GPU machine, in one go: build laya (CUDA backend) with the
# libraries unpacked from $DEPS/*.deb (oniguruma, utf8proc, libmicrohttpd for configure; the GPU
# machine has no Debian packages), run the CUDA tests (cuda/warm, cuda/artifact_*, cuda/forward,
# cuda/parity_*, model/test_reserve on cuda), make a full-size random ModernBERT-large checkpoint
# (bench/cuda/make_ckpt_np.py) and time the first request after open against a warm one
# (bench_first) with and without the warm-up (LAYA_CUDA_WARMUP=0), unreserved and reserved as
# laya-serve does, and from a bf16 artifact. Logs under $OUT.
#   device run: bash bench/cuda/run_warm.sh        (DEPS: folder of the .deb files, default .deps)
set -u
OUT=${OUT:-$PWD/out-warm}
mkdir -p "$OUT"
T0=$(date +%s)
step() { echo "=== $* (+$(($(date +%s) - T0)) s)"; }
nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader
step deps
mkdir -p /tmp/sd && for f in ${DEPS:-.deps}/*.deb; do dpkg -x "$f" /tmp/sd; done
for pc in /tmp/sd/usr/lib/x86_64-linux-gnu/pkgconfig/*.pc; do
  sed -i -e 's|=/usr|=/tmp/sd/usr|' -e '/^Requires.private/d' "$pc"
done
export PKG_CONFIG_PATH=/tmp/sd/usr/lib/x86_64-linux-gnu/pkgconfig
export LD_LIBRARY_PATH=/tmp/sd/usr/lib/x86_64-linux-gnu${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
CK=/tmp/ck_large
( timeout 240 python3 bench/cuda/make_ckpt_np.py $CK > "$OUT/make.log" 2>&1 ) &
MK=$!
step build
B=build-warm
cmake -S . -B $B -G Ninja -DCMAKE_BUILD_TYPE=Release -DLAYA_WERROR=OFF -DLAYA_CUDA=ON -DCMAKE_PREFIX_PATH=/tmp/sd/usr \
  -DCMAKE_C_FLAGS="-I/tmp/sd/usr/include" > "$OUT/cmake.log" 2>&1 || { tail -30 "$OUT/cmake.log"; exit 1; }
ninja -C $B test_cuda_warm test_cuda_artifact test_cuda_forward test_cuda_parity test_reserve bench_first laya_cmd \
  > "$OUT/build.log" 2>&1 || { tail -40 "$OUT/build.log"; exit 1; }
echo "build warnings: $(grep -c 'warning:' "$OUT/build.log")"
step "tests: warm, artifact"
{
  timeout 120 $B/tests/cuda/test_cuda_warm tests/fixtures/ckpt/modernbert-tiny tests/fixtures/parity/modernbert-tiny/cases.jsonl
  for c in modernbert-tiny mmbert-tiny; do
    timeout 150 $B/tests/cuda/test_cuda_artifact tests/fixtures/ckpt/$c tests/fixtures/parity/$c/cases.jsonl
  done
} 2>&1 | tee "$OUT/test.log" | grep -vE "^ *(dir|artifact):"
step "bench_first (full-size ModernBERT-large)"
wait $MK
tail -1 "$OUT/make.log"
{
  timeout 90 $B/bench/cuda/bench_first $CK --label large-warm
  LAYA_CUDA_WARMUP=0 timeout 90 $B/bench/cuda/bench_first $CK --label large-nowarm
  timeout 90 $B/bench/cuda/bench_first $CK --label large-warm-reserved --reserve 131072
  LAYA_CUDA_WARMUP=0 timeout 90 $B/bench/cuda/bench_first $CK --label large-nowarm-reserved --reserve 131072
} 2>&1 | tee "$OUT/bench.log"
step "artifact: convert bf16 (CPU), open and first requests on the GPU"
{
  a=$(date +%s.%N); timeout 120 $B/laya convert $CK /tmp/ck_large.laya --precision bf16; b=$(date +%s.%N)
  echo "convert bf16 s $(awk "BEGIN{print $b - $a}")"
  timeout 90 $B/bench/cuda/bench_first /tmp/ck_large.laya --label large-bf16-artifact --reps 30 --batch-reps 5
} 2>&1 | tee "$OUT/artifact.log"
step "regression: cuda/forward, cuda/parity, model/test_reserve on cuda"
{
  timeout 200 $B/tests/cuda/test_cuda_forward 2>&1 | tail -3
  for c in modernbert-tiny mmbert-tiny; do
    timeout 120 $B/tests/cuda/test_cuda_parity tests/fixtures/ckpt/$c tests/fixtures/parity/$c/rows.jsonl 2>&1 | tail -2
  done
  LAYA_DEVICE=cuda timeout 150 $B/tests/model/test_reserve tests/fixtures/ckpt/modernbert-tiny 2>&1 | tail -2
} 2>&1 | tee "$OUT/regress.log"
step done
