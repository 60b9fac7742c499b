"""Comparison shared by the serve tests."""
import math


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
