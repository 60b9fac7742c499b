#!/usr/bin/env python3
"""cuda/lazy_needed: a CUDA-enabled build links no CUDA library into its programs and libraries.

  check_needed.py READELF MODULE ELF...

Every ELF (laya, liblaya.so, laya-serve, laya-mcp, the Python extension when built) must have no
NEEDED entry for libcudart, libcublas, libcuda or libstdc++ (the CUDA backend module brings
them, loaded on first use of a GPU: src/backend/cuda_loader.c), so they start on a machine
without the CUDA libraries. The module itself must need libcudart and libcublasLt, and export
laya_cuda_module_entry and no other function of its own (its backend_cuda_* must not interpose on
the loader's functions of the same names).
"""
import re
import subprocess
import sys

CUDA = re.compile(r"lib(cudart|cublas|cublasLt|cuda|stdc\+\+)\.so")


def needed(readelf, path):
    out = subprocess.run([readelf, "-d", "-W", path], stdout=subprocess.PIPE, text=True, check=True).stdout
    return [l.split("[")[1].rstrip("]") for l in out.splitlines() if "(NEEDED)" in l]


def main():
    readelf, module, elfs = sys.argv[1], sys.argv[2], sys.argv[3:]
    bad = 0
    for e in elfs:
        libs = needed(readelf, e)
        hits = [l for l in libs if CUDA.search(l)]
        print("%-60s NEEDED %s" % (e, " ".join(libs)))
        if hits:
            print("FAIL %s links %s" % (e, " ".join(hits)))
            bad += 1
    libs = needed(readelf, module)
    print("%-60s NEEDED %s" % (module, " ".join(libs)))
    for want in ("libcudart.so", "libcublasLt.so"):
        if not any(l.startswith(want) for l in libs):
            print("FAIL the module does not need %s" % want)
            bad += 1
    out = subprocess.run([readelf, "--dyn-syms", "-W", module], stdout=subprocess.PIPE, text=True,
                         check=True).stdout
    exported = sorted({f[7] for f in (l.split() for l in out.splitlines())
                       if len(f) >= 8 and f[6] != "UND" and f[4] in ("GLOBAL", "WEAK") and f[3] in ("FUNC", "OBJECT")})
    print("module exports: %s" % " ".join(exported))
    if exported != ["laya_cuda_module_entry"]:
        print("FAIL the module exports more than laya_cuda_module_entry")
        bad += 1
    print("cuda/lazy_needed: %s" % ("ok" if not bad else "%d problems" % bad))
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
