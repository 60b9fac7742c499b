#!/usr/bin/env bash
# tests/device/run_prebuilt.sh: the checks that need the H200 machine (its Xeon host's AMX and
# AVX-512 FP16 tables, and the GPU), run from test binaries built on a development machine, so a
# short device session spends no time compiling. Collect them there with
#
#   tests/device/run_prebuilt.sh --collect BUILD DEST     (binaries, the CUDA backend module
#                                                          liblaya_cuda.so and the shared libraries
#                                                          the device image lacks, into DEST)
#
# then carry DEST and run, in the repository root on the device:
#
#   DEST/run_prebuilt.sh                                   logs under $OUT (default /tmp/laya-dev)
#
# Each check prints one line "PASS|FAIL name (seconds)"; the exit status is the number of failures.
#
# ONLY=embed (both when collecting and when running): the CUDA embed pass alone, under 3 minutes
# on the H200: cuda/embed on both tiny checkpoints (their figures printed), and, since the embed
# pass shares the forward's staging and graph code, cuda/parity on both and cuda/forward. Three
# binaries (~21 MB, ~6 MB as tar.xz): on the development machine
#
#   ONLY=embed tests/device/run_prebuilt.sh --collect build out/dv/pre
#   tar -C out -cJf out/dv-embed.tar.xz dv
#
# carry out/dv-embed.tar.xz and run in the repository root on the device:
#
#   mkdir -p /tmp/dv && tar -xJf out/dv-embed.tar.xz -C /tmp && ONLY=embed /tmp/dv/pre/run_prebuilt.sh
set -u
here=$(cd "$(dirname "$0")" && pwd)
if [ "${1:-}" = "--collect" ]; then
  build=${2:?BUILD}; dest=${3:?DEST}
  mkdir -p "$dest/bin" "$dest/lib"
  bins="tests/parity/test_parity tests/parity/test_rows tests/cpu/test_amx tests/cpu/test_kernels
        tests/cpu/test_cpu_forward tests/cuda/test_cuda_parity tests/cuda/test_cuda_forward tests/cuda/test_cuda_geglu
        tests/cuda/test_cuda_fp8 tests/cuda/test_cuda_artifact tests/cuda/test_cuda_embed tests/cuda/test_cuda_lazy"
  [ "${ONLY:-}" = embed ] && bins="tests/cuda/test_cuda_embed tests/cuda/test_cuda_parity tests/cuda/test_cuda_forward"
  [ "${ONLY:-}" = embed ] || bins="$bins tests/cuda/act/test_cuda_act"
  for b in $bins; do
    [ -x "$build/$b" ] && cp "$build/$b" "$dest/bin/"
  done
  # the CUDA backend module and the shared libraries the device image lacks
  "$here/copy_libs.sh" "$build" "$dest" "$dest"/bin/* || exit 1
  cp "$0" "$dest/run_prebuilt.sh"
  du -sh "$dest"
  exit 0
fi

OUT=${OUT:-/tmp/laya-dev}
mkdir -p "$OUT"
export LD_LIBRARY_PATH=$here/lib:${LD_LIBRARY_PATH:-}
F=$PWD/tests/fixtures
B=$here/bin
fails=0
check() { # name, command...
  local name=$1; shift
  local t0=$SECONDS
  if "$@" > "$OUT/$name.log" 2>&1; then echo "PASS $name ($((SECONDS - t0)) s)"; else echo "FAIL $name (rc $?, $((SECONDS - t0)) s)"; tail -5 "$OUT/$name.log"; fails=$((fails + 1)); fi
  tail -1 "$OUT/$name.log" | cut -c1-200
}
{ grep -m1 'model name' /proc/cpuinfo; grep -o 'amx[a-z_0-9]*\|avx512_fp16' /proc/cpuinfo | sort -u | tr '\n' ' '; echo; nvidia-smi -L 2>&1 | head -1; } | tee "$OUT/machine.txt"
clean_env="env -u LAYA_BACKEND -u LAYA_PRECISION -u LAYA_CPU_AMP -u LAYA_CPU_ISA -u LAYA_DEVICE"
embed_checks() { # cuda/embed on both tiny checkpoints, with its figures
  for ck in modernbert-tiny mmbert-tiny; do
    check "cuda_embed_$ck" $clean_env timeout 150 "$B/test_cuda_embed" "$F" "$ck"
    grep -E "^[a-z0-9+:]+ \(backend|vectors against|reject|three times|alone against|shortlist:|out of memory|skipped" \
      "$OUT/cuda_embed_$ck.log" | cut -c1-400
    grep -m 12 -E "CHECK failed|: label |: score |cosines off|want the error|differs|^cuda:" "$OUT/cuda_embed_$ck.log" |
      grep -v "(backend" | cut -c1-300
  done
}
if [ "${ONLY:-}" = embed ]; then
  embed_checks
  for ck in modernbert-tiny mmbert-tiny; do
    check "parity_${ck}_cuda" timeout 100 "$B/test_cuda_parity" "$F/ckpt/$ck" "$F/parity/$ck/rows.jsonl"
  done
  check cuda_forward timeout 100 "$B/test_cuda_forward"
  echo "failures: $fails (${SECONDS} s)"
  exit $fails
fi
check cpu_amx "$B/test_amx"
if [ -z "${QUICK:-}" ]; then # QUICK=1: the AMX tiles, parity and CUDA only
  check cpu_kernels "$B/test_kernels"
  check cpu_forward "$B/test_cpu_forward"
fi
# the *-tanh / -silu / -quick / -relu variants and the rarer kinds' (-gelu10 ... -sqrtsoftplus, which
# CUDA runs through cuBLASLt + the GeGLU pass, not the fused Wi epilogue): the other
# hidden_activation kinds of the GeGLU
for ck in modernbert-tiny mmbert-tiny modernbert-tiny-layers modernbert-tiny-tanh modernbert-tiny-silu \
          modernbert-tiny-quick modernbert-tiny-relu modernbert-tiny-gelu10 modernbert-tiny-mish \
          modernbert-tiny-relu2 modernbert-tiny-relu6 modernbert-tiny-leaky modernbert-tiny-hardswish \
          modernbert-tiny-tanh-act modernbert-tiny-sigmoid modernbert-tiny-linear modernbert-tiny-laplace \
          modernbert-tiny-sqrtsoftplus; do
  check "parity_${ck}_cpu_default" $clean_env LAYA_DEVICE=cpu "$B/test_parity" "$F" "$ck" --expect cpu:fp32
  check "parity_${ck}_cuda" "$B/test_cuda_parity" "$F/ckpt/$ck" "$F/parity/$ck/rows.jsonl"
done
check cuda_forward "$B/test_cuda_forward"
# the module loaded on first use: cpu runs map no CUDA library, auto runs on cuda:0 through it
[ -x "$B/test_cuda_lazy" ] && check cuda_lazy $clean_env "$B/test_cuda_lazy" cpu "$F/ckpt/modernbert-tiny"
[ -x "$B/test_cuda_geglu" ] && check cuda_geglu "$B/test_cuda_geglu"
[ -x "$B/test_cuda_fp8" ] && check cuda_fp8 "$B/test_cuda_fp8"
[ -x "$B/test_cuda_act" ] && check cuda_act_values "$B/test_cuda_act" "$F"
check cuda_artifact "$B/test_cuda_artifact" "$F/ckpt/modernbert-tiny-layers" "$F/parity/modernbert-tiny-layers/cases.jsonl"
[ -x "$B/test_cuda_embed" ] && embed_checks
echo "failures: $fails"
exit $fails
