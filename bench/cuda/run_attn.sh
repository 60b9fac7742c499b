#!/bin/bash
# bench/cuda/run_attn.sh: the attention kernel variants on a GPU machine, in one call: correctness of each
# (cuda/forward and cuda/parity on both tiny fixtures, with the variant named), speed against the
# default (bench_cuda, ModernBERT-large random checkpoint, alternating rounds), the per-stage profile
# and the quick device suite under the fastest passing one.
#
# Build on a development machine and carry the binaries (as tests/device/run_prebuilt.sh says):
#
#   tests/device/run_prebuilt.sh --collect build out/dv/pre && cp build/bench/cuda/bench_cuda out/dv/pre/bin/
#   tar -C out -cJf out/dv.tar.xz dv
#
# then, in the repository root on the GPU machine (carry out/dv.tar.xz):
#
#   PAIRS="w4m2n32b3:w4m1n32b4 wg2n64m:wg1n64m" bench/cuda/run_attn.sh out/dv.tar.xz
#
# PAIRS: global:local variant names (LAYA_CUDA_ATTN_G / LAYA_CUDA_ATTN_L, attention.cu's tables),
# each timed against the default (on Hopper: wg2n64p:wg1n64; the mma.sync kernels are
# w4m2n32b3:w4m1n32b4, with the 64-key w4m2n64:w4m1n64 the small passes took below Hopper).
# Logs under $OUT; the last lines are the table. LIM (seconds, default 420) bounds the whole run.
set -u
T0=$SECONDS
LIM=${LIM:-420}
OUT=${OUT:-/tmp/laya-attn}
mkdir -p "$OUT" /tmp/x && tar -xJf "${1:?the collected binaries (tar.xz)}" -C /tmp/x
P=/tmp/x/dv/pre; export LD_LIBRARY_PATH=$P/lib; B=$P/bin/bench_cuda
F=$PWD/tests/fixtures
nvidia-smi --query-gpu=name,driver_version,clocks.max.sm --format=csv,noheader
[ -f /tmp/ck/model.safetensors ] || python3 bench/cuda/make_ckpt_np.py /tmp/ck > /dev/null 2>&1 &
MK=$!
ok=""
for v in ${PAIRS:-w4m2n32b3:w4m1n32b4 wg2n64m:wg1n64m}; do
  g=${v%%:*}; l=${v##*:}; r=0
  LAYA_CUDA_ATTN_G=$g LAYA_CUDA_ATTN_L=$l timeout 100 "$P/bin/test_cuda_forward" > "$OUT/fwd_${g}_${l}.log" 2>&1 || r=1
  echo "G=$g L=$l cuda/forward rc $r: $(tail -1 "$OUT/fwd_${g}_${l}.log" | cut -c1-150)"
  [ $r = 0 ] || grep -iE "fail" "$OUT/fwd_${g}_${l}.log" | head -4 | cut -c1-220
  for c in modernbert-tiny mmbert-tiny; do
    LAYA_CUDA_ATTN_G=$g LAYA_CUDA_ATTN_L=$l timeout 60 "$P/bin/test_cuda_parity" "$F/ckpt/$c" "$F/parity/$c/rows.jsonl" \
      > "$OUT/par_${g}_${l}_$c.log" 2>&1 || r=1
    echo "  cuda/parity $c: $(tail -1 "$OUT/par_${g}_${l}_$c.log" | cut -c1-200)"
  done
  [ $r = 0 ] && ok="$ok $v"
done
echo "passing:$ok ($((SECONDS - T0)) s)"
wait $MK
for r in 1 2; do
  for v in default:default $ok; do
    g=${v%%:*}; l=${v##*:}
    if [ "$g" = default ]; then "$B" /tmp/ck --shapes 1x128,1x512,32x512,mixed64 --reps 20 2>&1
    else LAYA_CUDA_ATTN_G=$g LAYA_CUDA_ATTN_L=$l "$B" /tmp/ck --shapes 1x128,1x512,32x512,mixed64 --reps 20 2>&1; fi |
      awk -v v="$v" -v r=$r '/^BENCH/{for(i=1;i<=NF;i++) if($i=="median") m[$4]=$(i+1)}
        END{printf "SPEED %s r%d 1x128 %s 1x512 %s 32x512 %s mixed64 %s\n", v, r, m["1x128"], m["1x512"], m["32x512"], m["mixed64"]}'
  done
done | tee "$OUT/speed.txt"
# the fastest passing pair at 32x512 + mixed64 (means of the rounds), if it beats the default by 1%
best=$(awk '$1 == "SPEED" && $9 != "" && $11 != "" {s[$2] += $9 + $11; n[$2]++}
  END{b = "default:default"; bt = s[b] / n[b]; for (v in s) if (s[v] / n[v] < bt * 0.99) {b = v; bt = s[v] / n[v]} print b}' \
  "$OUT/speed.txt")
echo "fastest: $best ($((SECONDS - T0)) s)"
g=${best%%:*}; l=${best##*:}
[ "$g" = default ] || export LAYA_CUDA_ATTN_G=$g LAYA_CUDA_ATTN_L=$l
LAYA_CUDA_PROFILE=1 "$B" /tmp/ck --shapes 32x512 --reps 3 2>&1 | grep -iE "attn|total"
left=$((LIM - (SECONDS - T0)))
[ $left -gt 60 ] && QUICK=1 OUT=$OUT/suite timeout $left "$P/run_prebuilt.sh" 2>&1 | grep -E "^(PASS|FAIL)|failures" | tr '\n' ';'
echo; echo "($((SECONDS - T0)) s)"
