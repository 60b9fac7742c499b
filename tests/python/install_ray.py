#!/usr/bin/env python3
"""python/ray_env: Ray Data in the laya_c test venv (WORK_DIR/venv, made by python/wheel), from
PyPI, once: a stamp file keeps it installed across runs (about 600 MB and two minutes the first
time; nothing after)."""
import os
import subprocess
import sys

PKGS = ["ray[data]>=2.9"]


def main():
    py = os.path.join(sys.argv[1], "venv", "bin", "python")
    stamp = os.path.join(sys.argv[1], "venv", ".laya-c-ray")
    if os.path.exists(stamp) and open(stamp).read() == repr(PKGS):
        print("ray already installed in %s" % os.path.dirname(stamp))
    else:
        subprocess.run([py, "-m", "pip", "install", "--quiet", "--disable-pip-version-check"] + PKGS, check=True)
        with open(stamp, "w") as f:
            f.write(repr(PKGS))
    v = subprocess.run([py, "-c", "import ray; print(ray.__version__)"], check=True, stdout=subprocess.PIPE,
                       text=True).stdout.strip()
    print("ray %s" % v)
    return 0


if __name__ == "__main__":
    sys.exit(main())
