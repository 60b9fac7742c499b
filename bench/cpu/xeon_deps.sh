#!/usr/bin/env bash
# bench/cpu/xeon_deps.sh DIR: copies this (Debian) machine's libutf8proc, oniguruma and
# libmicrohttpd headers and libraries into DIR/.deps with relocatable pkg-config files, for a
# device image that lacks them (the H200 machine's). run_xeon.sh uses DIR/.deps when it exists.
# libutf8proc links statically; libonig / libmicrohttpd travel as shared objects (LD_LIBRARY_PATH).
set -eu
D=${1:?usage: xeon_deps.sh DIR}/.deps
L=/usr/lib/x86_64-linux-gnu
mkdir -p "$D/include" "$D/lib/pkgconfig"
cp /usr/include/utf8proc.h /usr/include/oniguruma.h /usr/include/oniggnu.h /usr/include/microhttpd.h "$D/include/"
cp "$L/libutf8proc.a" "$D/lib/"
cp -L "$L/libonig.so.5" "$L/libmicrohttpd.so.12" "$D/lib/"
ln -sf libonig.so.5 "$D/lib/libonig.so"
ln -sf libmicrohttpd.so.12 "$D/lib/libmicrohttpd.so"
for f in libutf8proc oniguruma libmicrohttpd; do
  sed -e 's|^prefix=.*|prefix=${pcfiledir}/../..|' -e 's|^exec_prefix=.*|exec_prefix=${prefix}|' \
      -e 's|^libdir=.*|libdir=${prefix}/lib|' -e 's|^includedir=.*|includedir=${prefix}/include|' \
      -e '/^Requires.private/d' "$L/pkgconfig/$f.pc" > "$D/lib/pkgconfig/$f.pc"
done
echo "$D: $(du -sh "$D" | cut -f1)"
