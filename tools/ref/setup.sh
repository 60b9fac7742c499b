#!/usr/bin/env bash
# Create the Python reference environment that regenerates the parity fixtures: the real
# laya==0.4.15 package and the exact versions the committed fixtures were produced with.
#
# Usage: tools/ref/setup.sh            venv at tools/ref/.venv (or $LAYA_REF_VENV)
# Needs python3 with venv (Debian: python3-venv) and access to PyPI. torch from PyPI pulls its
# CUDA runtime wheels (several GB); the fixtures only ever run it on the CPU.
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
venv="${LAYA_REF_VENV:-$here/.venv}"
python="${PYTHON:-python3}"

if [ ! -x "$venv/bin/python" ]; then
  "$python" -m venv "$venv"
fi
"$venv/bin/python" -m pip install --quiet --upgrade pip
"$venv/bin/python" -m pip install --quiet -r "$here/requirements.txt"
"$venv/bin/python" - <<'PY'
import importlib.metadata as md
for p in ("laya", "torch", "transformers", "tokenizers", "numpy", "safetensors", "faker"):
    print("%-13s %s" % (p, md.version(p)))
PY
echo "reference venv ready: $venv"
