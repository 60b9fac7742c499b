#!/usr/bin/env python3
"""install/pkgconfig_and_cmake: install laya.c to a temporary prefix and build against it as a user.

  run_install.py BUILD_DIR WORK_DIR FIXTURES_DIR CC CMAKE

1. `cmake --install BUILD_DIR --prefix WORK_DIR/prefix`; the header, liblaya.so (versioned soname),
   liblaya.a, laya, laya-serve, laya-mcp, laya.pc and the CMake package must be there.
2. tests/install/demo.c is built three ways: `cc demo.c $(pkg-config --cflags --libs laya)` (shared),
   the static library with `pkg-config --static --libs laya`, and a CMake project doing
   `find_package(laya)` with laya::laya and laya::laya_static.
3. Each program answers Laya's recorded request `basic/str` (tests/fixtures/parity/modernbert-tiny)
   on the fixture checkpoint under LAYA_BACKEND=cpu-ref; the result must equal Laya's recorded one
   under tests/parity's rule (same keys in order, numbers within 1e-4), and the programs must print
   the same bytes. The shared-library programs must load liblaya.so.N from the prefix (readelf).
"""
import json
import os
import shutil
import subprocess
import sys

ALLOWANCE = 1e-4


def run(cmd, **kw):
    p = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, **kw)
    if p.returncode != 0:
        sys.exit("FAIL: %s exited %d\n%s" % (" ".join(cmd), p.returncode, p.stdout))
    return p.stdout


def same(got, want, path=""):
    """tests/parity's comparison: same types, keys in the same order, numbers within 1e-4."""
    if isinstance(want, bool) or want is None or isinstance(want, str):
        return [] if type(got) is type(want) and got == want else ["%s: %r != %r" % (path, got, want)]
    if isinstance(want, (int, float)):
        if isinstance(got, bool) or not isinstance(got, (int, float)):
            return ["%s: %r is not a number" % (path, got)]
        return [] if abs(got - want) <= ALLOWANCE + 1e-12 else ["%s: %r != %r" % (path, got, want)]
    if isinstance(want, list):
        if not isinstance(got, list) or len(got) != len(want):
            return ["%s: list %r != %r" % (path, got, want)]
        return [e for i, (g, w) in enumerate(zip(got, want)) for e in same(g, w, "%s/%d" % (path, i))]
    if not isinstance(got, dict) or list(got) != list(want):
        return ["%s: keys %r != %r" % (path, list(got) if isinstance(got, dict) else got, list(want))]
    return [e for k in want for e in same(got[k], want[k], path + "/" + k)]


def main():
    build, work, fixtures, cc, cmake = sys.argv[1:6]
    here = os.path.dirname(os.path.abspath(__file__))
    shutil.rmtree(work, ignore_errors=True)
    os.makedirs(work)
    prefix = os.path.join(work, "prefix")
    run([cmake, "--install", build, "--prefix", prefix])

    found = {}
    for root, _, files in os.walk(prefix):
        for f in files:
            found.setdefault(f, os.path.join(root, f))
    for need in ("laya.h", "liblaya.a", "laya", "laya-serve", "laya-mcp", "laya.pc", "layaConfig.cmake",
                 "layaConfigVersion.cmake", "layaTargets.cmake"):
        if need not in found:
            sys.exit("FAIL: %s is not installed under %s" % (need, prefix))
    sonames = [f for f in found if f.startswith("liblaya.so.")]
    if not sonames or not os.path.islink(os.path.join(os.path.dirname(found["liblaya.a"]), "liblaya.so")):
        sys.exit("FAIL: no versioned liblaya.so.N beside liblaya.a (found %s)" % sorted(found))
    libdir = os.path.dirname(found["liblaya.a"])
    soname = run(["readelf", "-d", os.path.join(libdir, "liblaya.so")])
    soname = [l.split("[")[1].rstrip("]") for l in soname.splitlines() if "(SONAME)" in l]
    if not soname or not soname[0].startswith("liblaya.so."):
        sys.exit("FAIL: liblaya.so has no versioned soname: %s" % soname)
    print("installed: %s (soname %s)" % (libdir, soname[0]))

    env = dict(os.environ, PKG_CONFIG_PATH=os.path.dirname(found["laya.pc"]))
    cflags = run(["pkg-config", "--cflags", "laya"], env=env).split()
    libs = run(["pkg-config", "--libs", "laya"], env=env).split()
    static_libs = run(["pkg-config", "--static", "--libs", "laya"], env=env).split()
    print("pkg-config --cflags --libs laya: %s" % " ".join(cflags + libs))
    demo = os.path.join(here, "demo.c")
    progs = {}
    progs["pkg-config"] = os.path.join(work, "demo_pc")
    run([cc, demo, "-o", progs["pkg-config"]] + cflags + libs)
    progs["pkg-config --static"] = os.path.join(work, "demo_pc_static")
    run([cc, demo, "-o", progs["pkg-config --static"]] + cflags + [found["liblaya.a"]] +
        ["-Wl,--as-needed"] + static_libs)

    cbuild = os.path.join(work, "consumer-build")
    run([cmake, "-S", os.path.join(here, "consumer"), "-B", cbuild, "-DCMAKE_PREFIX_PATH=" + prefix,
         "-DDEMO_SOURCE=" + demo, "-DCMAKE_C_COMPILER=" + cc])
    run([cmake, "--build", cbuild])
    progs["find_package laya::laya"] = os.path.join(cbuild, "demo_cmake")
    progs["find_package laya::laya_static"] = os.path.join(cbuild, "demo_cmake_static")

    case = None
    with open(os.path.join(fixtures, "parity", "modernbert-tiny", "cases.jsonl")) as f:
        for line in f:
            c = json.loads(line)
            if c["id"] == "basic/str":
                case = c
                break
    if case is None:
        sys.exit("FAIL: the fixture case basic/str is missing")
    ckpt = os.path.join(fixtures, "ckpt", "modernbert-tiny")
    outputs = {}
    failed = False
    renv = dict(os.environ, LAYA_BACKEND="cpu-ref", LD_LIBRARY_PATH=libdir)
    for how, prog in progs.items():
        needed = [l for l in run(["readelf", "-d", prog]).splitlines() if "(NEEDED)" in l]
        uses_so = any(soname[0] in l for l in needed)
        if uses_so != ("static" not in how):
            print("FAIL %s: links liblaya.so: %s (NEEDED %s)" % (how, uses_so, needed))
            failed = True
        out = run([prog, ckpt, case["request"]], env=renv)
        outputs[how] = out
        errs = same(json.loads(out), case["result"])
        print("%-32s %s" % (how, "answers as Laya recorded" if not errs else "MISMATCH"))
        for e in errs:
            print("    " + e)
        failed |= bool(errs)
    if len(set(outputs.values())) != 1:
        print("FAIL: the programs printed different results")
        failed = True
    print("install test: %s" % ("FAILED" if failed else "ok (%d programs)" % len(progs)))
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
