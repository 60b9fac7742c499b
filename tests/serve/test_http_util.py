"""Comparison shared by the serve tests, and the AVX2 variants' skip."""
import math
import os
import sys

# ctest's SKIP_RETURN_CODE of the *_avx2 variants (tests/serve/CMakeLists.txt)
SKIP = 77


def cpu_flags():
    """The CPU's feature flags as Linux reports them (empty where /proc/cpuinfo is absent), less
    those LAYA_CPU_DISABLE hides from the engine."""
    flags = set()
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if line.startswith("flags"):
                    flags = set(line.split(":", 1)[1].split())
                    break
    except OSError:
        pass
    return flags - {x.strip() for x in os.environ.get("LAYA_CPU_DISABLE", "").split(",")}


def skip_without_isa():
    """Under LAYA_CPU_ISA=avx2 (the *_avx2 variants), exit SKIP when this CPU has no AVX2 and FMA:
    the engine would fall back to another table silently, and the run would prove nothing about
    the AVX2 one. Returns the requested table ("" when none)."""
    isa = os.environ.get("LAYA_CPU_ISA", "").strip()
    if isa == "avx2" and not {"avx2", "fma"} <= cpu_flags():
        print("skipped: LAYA_CPU_ISA=avx2 but this CPU has no AVX2+FMA")
        sys.exit(SKIP)
    return isa


def same(a, b, path="$", tol=2e-4):
    """Structural equality with key order, numbers within tol; returns the first difference."""
    if isinstance(a, dict) and isinstance(b, dict):
        if list(a) != list(b):
            return "%s: keys %s != %s" % (path, list(a), list(b))
        for k in a:
            d = same(a[k], b[k], "%s.%s" % (path, k), tol)
            if d:
                return d
        return None
    if isinstance(a, list) and isinstance(b, list):
        if len(a) != len(b):
            return "%s: %d items != %d" % (path, len(a), len(b))
        for i, (x, y) in enumerate(zip(a, b)):
            d = same(x, y, "%s[%d]" % (path, i), tol)
            if d:
                return d
        return None
    if isinstance(a, bool) or isinstance(b, bool) or a is None or b is None or isinstance(a, str):
        return None if (a == b and type(a) is type(b)) else "%s: %r != %r" % (path, a, b)
    if isinstance(a, (int, float)) and isinstance(b, (int, float)):
        if type(a) is not type(b):
            return "%s: %r (%s) != %r (%s)" % (path, a, type(a).__name__, b, type(b).__name__)
        if isinstance(a, float) and (math.isnan(a) or math.isnan(b)):
            return None if math.isnan(a) and math.isnan(b) else "%s: %r != %r" % (path, a, b)
        return None if abs(a - b) <= tol else "%s: %r != %r" % (path, a, b)
    return "%s: %r != %r" % (path, a, b)
