#!/usr/bin/env bash
# bench/cpu/run_xeon.sh: the AMX work's whole device session in one command, for the H200
# machine's Xeon host (AMX-BF16/INT8, 16 cores, no network; cmake, ninja, python3 with torch /
# transformers / onnxruntime). Logs and reports go to $OUT (default /tmp/laya-xeon).
#
#   bench/cpu/run_xeon.sh test        build, AMX tests, CPU + parity tests (the split-precision
#                                     fp32 GEMMs too), peak rates, kernel throughput
#   bench/cpu/run_xeon.sh bench [WHL] the benchmark (bench/cpu/run.py + e2e.py, 8 threads), with
#                                     Python Laya from its wheel WHL (installed --no-deps)
#   bench/cpu/run_xeon.sh kern        build, AMX tests, kernel throughput, parity of the fp32 x6 GEMM
#   bench/cpu/run_xeon.sh open        laya_open time of a ModernBERT-large-shaped directory (first
#                                     open, then pack cache hits)
#   bench/cpu/run_xeon.sh prof        where the fp32 forward's time goes (LAYA_CPU_PROFILE): x6 and
#                                     the AVX-512 FMA GEMM, 1 and THREADS threads, ModernBERT-large
#                                     shapes at 1x512 (GEMM wall / task CPU, the x6 row-split step)
#   bench/cpu/run_xeon.sh all [WHL]   test and bench; steps also combine: kern,bench
# The device copies /work/main's tree: copy this worktree to /work/main/.devrun/<name> (without
# build/ and .git), add the missing libraries with bench/cpu/xeon_deps.sh /work/main/.devrun/<name>
# and the Laya wheel (pip download laya==0.4.15 --no-deps -d .../.whl), carry that folder and
# `cd` into it.
# MODELS=large,mmbert picks the benchmark's models; REPS, E2E_REPS, E2E_ROUNDS (2: e2e.py --rounds), SHAPES, SKIP, E2E_SKIP its size.
set -u
OUT=${OUT:-/tmp/laya-xeon}
mkdir -p "$OUT"
mode=${1:-all}
whl=${2:-}
T=${THREADS:-8}
# libutf8proc / oniguruma where the image lacks them: a prefix carried next to the tree (.deps/)
if [ -d .deps/lib/pkgconfig ]; then
  export PKG_CONFIG_PATH=$PWD/.deps/lib/pkgconfig:${PKG_CONFIG_PATH:-}
  export LD_LIBRARY_PATH=$PWD/.deps/lib:${LD_LIBRARY_PATH:-}
fi
log() { echo "[$(date -u +%H:%M:%S)] $*" | tee -a "$OUT/steps.log"; }

build() {
  log "machine"
  { lscpu; echo; gcc --version | head -1; cmake --version | head -1; python3 --version; nproc; } > "$OUT/machine.txt" 2>&1
  grep -o 'amx[a-z_0-9]*' /proc/cpuinfo | sort -u | tr '\n' ' ' >> "$OUT/machine.txt"
  log "configure + build"
  cmake -S . -B build -G Ninja -DCMAKE_BUILD_TYPE=Release -DLAYA_CUDA=OFF > "$OUT/cmake.log" 2>&1 || { tail -30 "$OUT/cmake.log"; exit 1; }
  # -k 0: the servers may not link against the carried libmicrohttpd; the rest must build
  ninja -C build -j16 -k 0 > "$OUT/build.log" 2>&1 || grep -E "error|FAILED" "$OUT/build.log" | head -20
  for b in laya bench/cpu/bench_ckpt tests/cpu/test_amx tests/cpu/test_kernels; do [ -x build/$b ] || { echo "missing build/$b"; exit 1; }; done
  log "built"
}

amx() {
  log "test_amx + bench_kernels"
  build/tests/cpu/test_amx > "$OUT/test_amx.log" 2>&1; rc=$?; echo "test_amx rc=$rc" | tee -a "$OUT/steps.log"
  tail -4 "$OUT/test_amx.log"
  [ $rc = 0 ] || { tail -30 "$OUT/test_amx.log"; exit 1; }
  build/bench/cpu/bench_kernels > "$OUT/bench_kernels.txt" 2>&1; grep -E "^amx" "$OUT/bench_kernels.txt"
}

kern() {
  log "test_amx"
  build/tests/cpu/test_amx > "$OUT/test_amx.log" 2>&1; rc=$?; echo "test_amx rc=$rc" | tee -a "$OUT/steps.log"
  tail -5 "$OUT/test_amx.log"
  [ $rc = 0 ] || { tail -30 "$OUT/test_amx.log"; exit 1; }
  build/tests/cpu/test_kernels > "$OUT/test_kernels.log" 2>&1; echo "test_kernels rc=$?" | tee -a "$OUT/steps.log"
  tail -3 "$OUT/test_kernels.log"
  log "peak + bench_kernels"
  build/bench/cpu/peak > "$OUT/peak.txt" 2>&1; cat "$OUT/peak.txt"
  build/bench/cpu/bench_kernels > "$OUT/bench_kernels.txt" 2>&1; cat "$OUT/bench_kernels.txt"
  # the split-precision GEMM on float16 / bfloat16 weights (fewer weight parts: packed_matrix.split_parts)
  for wb in 11 8; do BENCH_WBITS=$wb BENCH_FMT=fp32 build/bench/cpu/bench_kernels 2>&1 | grep -E "^amx " | sed "s/^/wbits $wb: /"; done | tee -a "$OUT/bench_kernels.txt"
  log "parity at fp32 (cpu-default) with the default split-precision x6 GEMM"
  ctest --test-dir build -R 'parity/.*cpu-default$' -j4 --timeout 600 --output-on-failure > "$OUT/parity_x6.log" 2>&1
  grep -E "tests passed|Passed|Failed" "$OUT/parity_x6.log" | head
}

tests() {
  kern
  log "ctest cpu/|parity (not slow)"
  ctest --test-dir build -R 'cpu/|parity' -LE slow -j8 --timeout 600 > "$OUT/ctest.log" 2>&1
  tail -25 "$OUT/ctest.log"
  for v in x3; do
    log "parity at fp32 with LAYA_AMX_FP32=$v"
    LAYA_AMX_FP32=$v ctest --test-dir build -R 'parity/.*cpu-default$' -j4 --timeout 600 --output-on-failure > "$OUT/parity_$v.log" 2>&1
    grep -E "tests passed|Passed|Failed|max|worst" "$OUT/parity_$v.log" | head -20
  done
  log "parity at fp32 on the AVX-512 fp32 GEMM (LAYA_AMX_FP32=avx512)"
  LAYA_AMX_FP32=avx512 ctest --test-dir build -R 'parity/.*cpu-default$' -j4 --timeout 600 --output-on-failure > "$OUT/parity_avx512.log" 2>&1
  grep -E "tests passed|Passed|Failed" "$OUT/parity_avx512.log" | head
}

bench() {
  if [ -n "$whl" ]; then
    log "install laya wheel"
    pip install --no-deps --target /tmp/site "$whl" > "$OUT/pip.log" 2>&1 || tail -5 "$OUT/pip.log"
    export PYTHONPATH=/tmp/site:${PYTHONPATH:-}
  fi
  W=/tmp/laya-bench; mkdir -p $W
  models=""
  for m in modernbert-large:large mmbert-base:mmbert; do
    case ",${MODELS:-large,mmbert}," in *",${m#*:},"*) ;; *) continue ;; esac
    models="$models --model ${m#*:}=$W/ckpt-${m#*:}"
    if [ ! -f $W/ckpt-${m#*:}/model.safetensors ]; then
      log "random checkpoint ${m%%:*}"
      python3 tools/make_random_ckpt.py ${m%%:*} $W/ckpt-${m#*:} --no-check > "$OUT/ckpt-${m#*:}.log" 2>&1 || tail -20 "$OUT/ckpt-${m#*:}.log"
    fi
  done
  log "end to end (laya_predict vs Laya's Agent.predict)"
  python3 bench/cpu/e2e.py --build build $models \
      --threads $T --reps ${E2E_REPS:-5} --rounds ${E2E_ROUNDS:-2} --out "$OUT/e2e" --skip "${E2E_SKIP:-}" > "$OUT/e2e.md" 2> "$OUT/e2e.err"; tail -5 "$OUT/e2e.err"
  cat "$OUT/e2e.md"
  log "forward (run.py)"
  python3 bench/cpu/run.py --build build --work $W/run $models \
      --threads $T --reps ${REPS:-3} --shapes ${SHAPES:-1x128,1x512,32xmixed} --skip ${SKIP:-cold,ort,ort-int8} \
      --avx2 "${AVX2-fp32}" > "$OUT/forward.md" 2> "$OUT/forward.err"; tail -5 "$OUT/forward.err"
  cp $W/run/results.json "$OUT/forward.json" 2>/dev/null
  cat "$OUT/forward.md"
}

# issue 17 item 5 on this machine: laya_open of a ModernBERT-large-shaped directory (scaled fixture,
# F16 803 MiB), first open into an empty pack cache, then two cache hits; fp32 and bf16; T threads
# and all cores
opentime() {
  log "open time"
  python3 tools/scale_fixture_ckpt.py tests/fixtures/ckpt/modernbert-tiny /tmp/open-large > /dev/null
  for t in $T $(nproc); do
    for p in fp32 bf16; do
      rm -rf /tmp/open-cache
      echo "threads $t precision $p:" | tee -a "$OUT/open_time.txt"
      LAYA_THREADS=$t LAYA_CACHE_DIR=/tmp/open-cache build/bench/cpu/open_time /tmp/open-large $p 3 2>&1 | tee -a "$OUT/open_time.txt"
    done
  done
}

# issue 17 (x6 operands split once): each forward's LAYA_CPU_PROFILE line (stderr) per variant and
# thread count in $OUT/prof_<v>_<t>.jsonl, the fastest timed forward summarised in prof.txt (prof_summary.py)
prof() {
  log "profile (x6 / avx512, 1 and $T threads)"
  [ -f /tmp/open-large/model.safetensors ] || python3 tools/scale_fixture_ckpt.py tests/fixtures/ckpt/modernbert-tiny /tmp/open-large > /dev/null
  for v in x6 avx512; do
    for t in 1 $T; do
      LAYA_AMX_FP32=$v LAYA_CPU_PROFILE=1 build/bench/cpu/bench_ckpt /tmp/open-large --precision fp32 --shapes 1x512 \
          --reps ${PROF_REPS:-3} --threads $t > "$OUT/prof_${v}_$t.txt" 2> "$OUT/prof_${v}_$t.jsonl"
      python3 bench/cpu/prof_summary.py "$v threads $t" < "$OUT/prof_${v}_$t.jsonl" | tee -a "$OUT/prof.txt"
    done
  done
}

build
for step in ${mode//,/ }; do
  case $step in
    test) tests ;;
    kern) kern ;;
    amx) amx ;;
    bench) bench ;;
    open) opentime ;;
    prof) prof ;;
    all) tests; bench ;;
  esac
done
log "done"
