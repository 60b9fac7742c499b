#!/bin/bash
# model/test_reserve on the GPU (LAYA_DEVICE=cuda), every failed check shown; the build as run_warm.sh.
set -u
mkdir -p /tmp/sd && for f in ${DEPS:-.deps}/*.deb; do dpkg -x "$f" /tmp/sd; done
for pc in /tmp/sd/usr/lib/x86_64-linux-gnu/pkgconfig/*.pc; do sed -i -e 's|=/usr|=/tmp/sd/usr|' -e '/^Requires.private/d' "$pc"; done
export PKG_CONFIG_PATH=/tmp/sd/usr/lib/x86_64-linux-gnu/pkgconfig
export LD_LIBRARY_PATH=/tmp/sd/usr/lib/x86_64-linux-gnu${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
B=build-warm
cmake -S . -B $B -G Ninja -DCMAKE_BUILD_TYPE=Release -DLAYA_WERROR=OFF -DLAYA_CUDA=ON -DCMAKE_PREFIX_PATH=/tmp/sd/usr \
  -DCMAKE_C_FLAGS="-I/tmp/sd/usr/include" > /tmp/cmake.log 2>&1 || { tail -30 /tmp/cmake.log; exit 1; }
ninja -C $B test_reserve > /tmp/build.log 2>&1 || { tail -40 /tmp/build.log; exit 1; }
LAYA_DEVICE=cuda timeout 100 $B/tests/model/test_reserve tests/fixtures/ckpt/modernbert-tiny 2>&1 | cut -c1-300 | grep -v "^  \(got\|want\)"
