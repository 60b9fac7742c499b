#!/bin/bash
# The server load test on a GPU machine (no Debian packages installed there, no wrk): unpack the
# libraries laya-serve needs from .servedeps/*.deb, build laya-serve with the CUDA backend, make a
# full-size random ModernBERT-large checkpoint (tools/make_random_ckpt.py), and run
# bench/serve/run.py with the stdlib load generator against laya-serve (batching on / off) and
# Python laya-serve 0.4.15 (wheels from .servewhl/) on the same GPU (on the tiny checkpoint also
# laya-serve batching with LAYA_SERVE_PIPELINE=0, the design before pipelining, and every laya.c
# server's inference-thread time by phase from /metrics): first the tiny fixture
# checkpoint, then ModernBERT-large; last, a soak of SOAK requests with full forward passes
# (tiny checkpoint, batching server, load runs at SOAK_CLIENTS clients in turn so passes of every
# size come and go) for errors and RSS: the RSS when the server is up (before any request), after
# warm-up, and every SOAK_EVERY requests while the load runs, printed as a table.
#   device run: carry .servedeps .servewhl; bash bench/serve/run_device.sh [DURATION] [CLIENTS] [SOAK]
#   soak only (~100 s build + <= SOAK_SECONDS): STEPS=soak bash bench/serve/run_device.sh 4 32 300000
# Results: $OUT/tiny.md, $OUT/large.md, $OUT/soak.md; $OUT/run.log has every step's time.
# Environment: STEPS (default "tiny large soak"), NO_PYTHON=1 (laya.c servers only), SOAK_SECONDS
# (default 90), SOAK_CHUNK (seconds per soak load run, default 8), SOAK_CLIENTS (default
# 32,128,8), SOAK_EVERY (default 10000), SOAK_TIMEOUT (default 150).
set -u
OUT=${OUT:-$PWD/out-serve}
mkdir -p "$OUT"
export PYTHONUNBUFFERED=1
D=${1:-4}
CLIENTS=${2:-1,8,32,128}
SOAK=${3:-100000}
STEPS=" ${STEPS:-tiny large soak} "
T0=$(date +%s)
step() { echo "=== $* (+$(($(date +%s) - T0)) s)" | tee -a "$OUT/run.log"; }
nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader | tee -a "$OUT/run.log"
step deps
mkdir -p /tmp/sd && for f in .servedeps/*.deb; do dpkg -x "$f" /tmp/sd; done
for pc in /tmp/sd/usr/lib/x86_64-linux-gnu/pkgconfig/*.pc; do
  sed -i -e 's|=/usr|=/tmp/sd/usr|' -e '/^Requires.private/d' "$pc"
done
export PKG_CONFIG_PATH=/tmp/sd/usr/lib/x86_64-linux-gnu/pkgconfig
if ldconfig -p | grep -q 'libgnutls.so.30 '; then
  rm -f /tmp/sd/usr/lib/x86_64-linux-gnu/lib{gnutls,unistring,idn2,nettle,hogweed,p11-kit,tasn1,gmp}*
fi
export LD_LIBRARY_PATH=/tmp/sd/usr/lib/x86_64-linux-gnu:/tmp/sd/lib/x86_64-linux-gnu${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
python3 -m pip install -q --no-index --no-deps --no-compile --target /tmp/site .servewhl/*.whl && export PYTHONPATH=/tmp/site
step build
cmake -S . -B build-dev-serve -G Ninja -DCMAKE_BUILD_TYPE=Release -DLAYA_WERROR=OFF \
  -DCMAKE_PREFIX_PATH=/tmp/sd/usr -DCMAKE_C_FLAGS="-I/tmp/sd/usr/include" > "$OUT/cmake.log" 2>&1 || tail -30 "$OUT/cmake.log"
ninja -C build-dev-serve laya-serve > "$OUT/build.log" 2>&1 || { tail -40 "$OUT/build.log"; exit 1; }
# checkpoint generation runs on the CPU beside the tiny-checkpoint load test
[[ $STEPS != *" large "* ]] || [ -f /tmp/laya_ck_large/model.safetensors ] ||
  (timeout 300 python3 tools/make_random_ckpt.py modernbert-large /tmp/laya_ck_large --no-check > "$OUT/make.log" 2>&1 &)
PY_SERVE="python3 -c 'from laya.serve import main; main()'"
[ "${NO_PYTHON:-0}" = 1 ] && PY_SERVE=""
run() { # name ckpt seconds [run.py options]
  uptime | tee -a "$OUT/run.log"
  timeout "$3" python3 bench/serve/run.py --serve build-dev-serve/laya-serve --python-serve "$PY_SERVE" \
    --ckpt "$2" --device cuda --client loadgen --threads 16 ${4:-} \
    --duration "$D" --clients "$CLIENTS" --out "$OUT/$1.md" 2>&1 | tee -a "$OUT/run.log"
}
if [[ $STEPS == *" tiny "* ]]; then
  step tiny
  run tiny tests/fixtures/ckpt/modernbert-tiny 220 --serial
fi
if [[ $STEPS == *" large "* ]]; then
  step large
  for i in $(seq 1 60); do [ -f /tmp/laya_ck_large/SHA256SUMS ] && break; sleep 2; done
  tail -3 "$OUT/make.log"
  run large /tmp/laya_ck_large 200
fi
if [[ $STEPS == *" soak "* ]]; then
  step soak
  uptime | tee -a "$OUT/run.log"
  timeout ${SOAK_TIMEOUT:-150} python3 bench/serve/run.py --serve build-dev-serve/laya-serve --ckpt tests/fixtures/ckpt/modernbert-tiny \
    --device cuda --client loadgen --threads 16 --soak-only --soak "$SOAK" --soak-seconds ${SOAK_SECONDS:-90} \
    --soak-chunk ${SOAK_CHUNK:-8} --soak-clients ${SOAK_CLIENTS:-32,128,8} --soak-every ${SOAK_EVERY:-10000} \
    --out "$OUT/soak.md" 2>&1 | tee -a "$OUT/run.log"
fi
step done
