#!/bin/bash
# The server load test on a GPU machine (no Debian packages installed there, no wrk): unpack the
# libraries laya-serve needs from .servedeps/*.deb, build laya-serve with the CUDA backend, make a
# full-size random ModernBERT-large checkpoint (bench/cuda/torch_bench.py make), and run
# bench/serve/run.py with the stdlib load generator against laya-serve (batching on / off) and
# Python laya-serve 0.4.15 (wheels from .servewhl/) on the same GPU.
#   device run: carry .servedeps .servewhl; bash bench/serve/run_device.sh [DURATION] [CLIENTS]
set -u
OUT=${OUT:-$PWD/out-serve}
mkdir -p "$OUT"
export PYTHONUNBUFFERED=1
D=${1:-15}
CLIENTS=${2:-1,8,32,128}
nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader
mkdir -p /tmp/sd && for f in .servedeps/*.deb; do dpkg -x "$f" /tmp/sd; done
for pc in /tmp/sd/usr/lib/x86_64-linux-gnu/pkgconfig/*.pc; do
  sed -i -e 's|=/usr|=/tmp/sd/usr|' -e '/^Requires.private/d' "$pc"
done
export PKG_CONFIG_PATH=/tmp/sd/usr/lib/x86_64-linux-gnu/pkgconfig
if ldconfig -p | grep -q 'libgnutls.so.30 '; then
  rm -f /tmp/sd/usr/lib/x86_64-linux-gnu/lib{gnutls,unistring,idn2,nettle,hogweed,p11-kit,tasn1,gmp}*
fi
export LD_LIBRARY_PATH=/tmp/sd/usr/lib/x86_64-linux-gnu:/tmp/sd/lib/x86_64-linux-gnu${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
cmake -S . -B build-dev-serve -G Ninja -DCMAKE_BUILD_TYPE=Release -DLAYA_WERROR=OFF \
  -DCMAKE_PREFIX_PATH=/tmp/sd/usr -DCMAKE_C_FLAGS="-I/tmp/sd/usr/include" > "$OUT/cmake.log" 2>&1 || tail -30 "$OUT/cmake.log"
ninja -C build-dev-serve laya-serve > "$OUT/build.log" 2>&1 || { tail -40 "$OUT/build.log"; exit 1; }
python3 -m pip install -q --no-index --no-deps --no-compile --target /tmp/site .servewhl/*.whl && export PYTHONPATH=/tmp/site
[ -f /tmp/laya_ck_large/model.safetensors ] || timeout 400 python3 bench/cuda/torch_bench.py make --model large --out /tmp/laya_ck_large 2>&1 | tail -3
uptime
python3 bench/serve/run.py --serve build-dev-serve/laya-serve \
  --python-serve "python3 -c 'from laya.serve import main; main()'" \
  --ckpt /tmp/laya_ck_large --device cuda --client loadgen --threads 16 \
  --duration "$D" --clients "$CLIENTS" --out "$OUT/results.md" 2>&1 | tee "$OUT/run.log"
