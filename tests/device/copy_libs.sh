#!/usr/bin/env bash
# tests/device/copy_libs.sh BUILD DEST FILE...: what binaries built on a development machine need
# on the GPU machine, for the collect modes of tests/device/run_prebuilt.sh, bench/cuda/run_table.sh
# and bench/cuda/run_embedbench.sh. Copies BUILD's CUDA backend module into DEST/lib (the binaries
# dlopen() it on first use of a GPU, src/backend/cuda_loader.c, so ldd does not list it; bin/../lib
# is where the loader looks), then every shared library FILE... and the module need beyond glibc,
# libstdc++ and CUDA 13 (which the device image has), debug sections stripped.
set -u
build=${1:?BUILD}; dest=${2:?DEST}; shift 2
mkdir -p "$dest/lib"
if [ ! -f "$build/liblaya_cuda.so" ]; then echo "no $build/liblaya_cuda.so (not a CUDA build?)"; exit 1; fi
cp "$build/liblaya_cuda.so" "$dest/lib/" || exit 1
for so in $(ldd "$@" "$dest/lib/liblaya_cuda.so" 2>/dev/null | awk '/=> \//{print $3}' | sort -u); do
  case $(basename "$so") in
    libc.so*|libm.so*|libdl.so*|libpthread.so*|librt.so*|libresolv.so*|libstdc++*|libgcc_s*|ld-linux*|libcuda*|libcublas*) ;;
    *) cp -L "$so" "$dest/lib/" && strip --strip-debug "$dest/lib/$(basename "$so")" ;;
  esac
done
