#!/usr/bin/env bash
# Installs the Debian packages laya.c builds against, then builds it (build/, Release).
# Usage: scripts/setup.sh [--sanitize]   (--sanitize builds build-asan/ with ASan + UBSan)
set -euo pipefail
cd "$(dirname "$0")/.."

pkgs=(build-essential cmake ninja-build pkg-config clang libclang-rt-14-dev
      libutf8proc-dev libonig-dev libmicrohttpd-dev libcurl4-openssl-dev python3 python3-venv)
missing=()
for p in "${pkgs[@]}"; do dpkg -s "$p" >/dev/null 2>&1 || missing+=("$p"); done
if [ ${#missing[@]} -gt 0 ]; then
  SUDO=""; [ "$(id -u)" -ne 0 ] && SUDO=sudo
  $SUDO apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq "${missing[@]}" >/dev/null
fi

jobs=$(nproc)
if [ "${1:-}" = "--sanitize" ]; then
  cmake -S . -B build-asan -G Ninja -DCMAKE_BUILD_TYPE=Debug -DLAYA_SANITIZE=ON -DLAYA_CUDA=OFF \
        -DCMAKE_C_COMPILER=clang >/dev/null
  cmake --build build-asan -j "$jobs"
else
  cmake -S . -B build -G Ninja -DCMAKE_BUILD_TYPE=Release >/dev/null
  cmake --build build -j "$jobs"
fi
