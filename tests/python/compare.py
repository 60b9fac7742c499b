"""tests/parity's comparison rule (tests/parity/compare.h), for the Python tests: the same keys in
the same order; strings, bools and nulls identical; numbers equal or within 1e-4; the value of a
"choice", "input_tokens" or "state_tokens*" key identical."""
ALLOWANCE = 1e-4


def _exact_key(k):
    return k in ("choice", "input_tokens") or k.startswith("state_tokens")


def compare(got, want, path="", exact=False):
    """(list of differences, count of numbers that needed the allowance)."""
    diffs, within = [], 0
    num = (int, float)
    if isinstance(got, num) and not isinstance(got, bool) and isinstance(want, num) and not isinstance(want, bool):
        if got == want or (got != got and want != want):
            return diffs, 0
        if not exact and abs(got - want) <= ALLOWANCE + 1e-12:
            return diffs, 1
        return ["%s: got %r want %r" % (path or "/", got, want)], 0
    if type(got) is not type(want):
        return ["%s: type %s vs %s" % (path or "/", type(got).__name__, type(want).__name__)], 0
    if isinstance(want, list):
        if len(got) != len(want):
            return ["%s: %d items vs %d" % (path or "/", len(got), len(want))], 0
        for i, (g, w) in enumerate(zip(got, want)):
            d, n = compare(g, w, "%s/%d" % (path, i), exact)
            diffs += d
            within += n
        return diffs, within
    if isinstance(want, dict):
        if list(got) != list(want):
            return ["%s: keys %s vs %s" % (path or "/", list(got), list(want))], 0
        for k in want:
            d, n = compare(got[k], want[k], path + "/" + k, exact or _exact_key(k))
            diffs += d
            within += n
        return diffs, within
    return ([] if got == want else ["%s: got %r want %r" % (path or "/", got, want)]), 0
