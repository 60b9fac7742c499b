#!/usr/bin/env bash
# Installs the Debian packages laya.c builds against, then builds it (build/, Release).
# Usage: scripts/setup.sh [--sanitize]   (--sanitize builds build-asan/ with ASan + UBSan)
# The release build also gets build/serve-clients, a venv with the pinned third-party clients
# the server tests drive (tests/serve/client-requirements.txt; needs PyPI the first time).
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
  # The real-client tests (typesafe-sdk, jevcompat, the official mcp client; jevclient) need those
  # PyPI packages: venvs beside the build, pinned by tests/serve/*requirements.txt.
  # pinned_venv PYTHON DIR REQUIREMENTS: DIR is a venv of PYTHON with REQUIREMENTS installed, made
  # once and again when the pins change.
  pinned_venv() {
    if ! cmp -s "$3" "$2/requirements.txt"; then
      rm -rf "$2"
      "$1" -m venv "$2"
      "$2/bin/pip" install -q --disable-pip-version-check -r "$3"
      cp "$3" "$2/requirements.txt"
    fi
  }
  venv=build/serve-clients
  pinned_venv python3 "$venv" tests/serve/client-requirements.txt
  # jevclient needs Python >= 3.12: a venv of its own when this machine has one (on PATH or a
  # pyenv version); the serve/jevclient test is registered only then.
  jev=build/jev-client
  py312=""
  for c in python3.14 python3.13 python3.12 "${PYENV_ROOT:-$HOME/.pyenv}"/versions/3.1[2-9]*/bin/python3; do
    if command -v "$c" >/dev/null 2>&1 &&
       "$c" -c 'import sys, venv; sys.exit(sys.version_info < (3, 12))' >/dev/null 2>&1; then
      py312=$(command -v "$c")
      break
    fi
  done
  jevflag="-ULAYA_JEVCLIENT_PYTHON"
  if [ -n "$py312" ]; then
    pinned_venv "$py312" "$jev" tests/serve/jevclient-requirements.txt
    jevflag="-DLAYA_JEVCLIENT_PYTHON=$PWD/$jev/bin/python"
  else
    echo "setup: no Python >= 3.12 found; the jevclient test (serve/jevclient) is not registered" >&2
  fi
  cmake -S . -B build -G Ninja -DCMAKE_BUILD_TYPE=Release -DLAYA_SERVE_CLIENT_PYTHON="$PWD/$venv/bin/python" \
        "$jevflag" >/dev/null
  cmake --build build -j "$jobs"
fi
