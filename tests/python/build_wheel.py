#!/usr/bin/env python3
"""python/wheel: build the laya-c wheel from this checkout and install it into a clean venv.

  build_wheel.py SOURCE_DIR WORK_DIR

WORK_DIR/venv is made on the first run (python -m venv, then scikit-build-core, pydantic for the
decide tests and numpy for the shortlist ones, from PyPI) and kept, as is WORK_DIR/skbuild (the
wheel's CMake build tree), so a rerun rebuilds only what changed. The wheel (WORK_DIR/dist) is built with --no-build-isolation
by the venv's own scikit-build-core, installed with --force-reinstall, and imported from outside
the source tree to prove it is self-contained.
"""
import glob
import os
import shutil
import subprocess
import sys
import venv

PIP_PKGS = ["scikit-build-core>=0.10", "pydantic>=2", "numpy"]


def run(cmd, **kw):
    print("+ " + " ".join(cmd), flush=True)
    subprocess.run(cmd, check=True, **kw)


def main():
    src, work = map(os.path.abspath, sys.argv[1:3])
    env_dir = os.path.join(work, "venv")
    py = os.path.join(env_dir, "bin", "python")
    stamp = os.path.join(env_dir, ".laya-c-deps")
    if not os.path.exists(stamp) or open(stamp).read() != repr(PIP_PKGS):
        shutil.rmtree(env_dir, ignore_errors=True)
        venv.EnvBuilder(with_pip=True, clear=True).create(env_dir)
        run([py, "-m", "pip", "install", "--quiet", "--disable-pip-version-check"] + PIP_PKGS)
        with open(stamp, "w") as f:
            f.write(repr(PIP_PKGS))
    dist = os.path.join(work, "dist")
    shutil.rmtree(dist, ignore_errors=True)
    run([py, "-m", "pip", "wheel", "--no-build-isolation", "--no-deps", "--disable-pip-version-check",
         "--quiet", "-w", dist, src,
         "-C", "build-dir=" + os.path.join(work, "skbuild"),
         "-C", "cmake.define.LAYA_CUDA=OFF"])
    wheels = glob.glob(os.path.join(dist, "laya_c-*.whl"))
    if len(wheels) != 1:
        sys.exit("FAIL: expected one laya_c wheel in %s, found %s" % (dist, wheels))
    run([py, "-m", "pip", "install", "--force-reinstall", "--no-deps", "--quiet",
         "--disable-pip-version-check", wheels[0]])
    out = subprocess.run([py, "-c", "import laya_c, os; print(laya_c.__file__, laya_c.LAYA_VERSION, "
                          "laya_c.COMPAT_VERSION)"], cwd=work, check=True, stdout=subprocess.PIPE,
                         text=True).stdout.strip()
    print("installed %s -> %s" % (os.path.basename(wheels[0]), out))
    if not out.startswith(env_dir):
        sys.exit("FAIL: laya_c was not imported from the venv")
    return 0


if __name__ == "__main__":
    sys.exit(main())
