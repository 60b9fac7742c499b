"""Laya's confidence helpers (laya.confidence and the confidence parts of laya.common), for
reading and gating the answers laya_c returns: the same values and errors as Laya 0.4.15's
(tests/python/test_confidence.py replays answers recorded from it).

Two numbers ride on an answer: `answer_confidence`, max(p), the quantity temperature scaling fits
and the `min_confidence` gate compares; and `confidence`, 1 - H(p) / log(k), a normalised entropy
that is not calibrated. The gate reads the first and falls back to the second only when the first
is missing. A threshold is one number in [0, 1] or a map from option-count buckets
("choice:3-5", ..., plus "default") to such numbers, so each answer shape can be gated at its own
level.
"""
import math
from numbers import Integral

QTYPES = {"choice": 0, "score": 1, "noul": 2}
QTYPE_NAMES = {v: k for k, v in QTYPES.items()}

GATE_PASSED = "passed"            # the gate ran and the answer's confidence cleared it
GATE_ABSTAINED = "abstained"      # the gate ran and the answer's confidence fell below it
GATE_UNEVALUATED = "unevaluated"  # the gate ran and the answer had no usable confidence
GATE_STATES = (GATE_PASSED, GATE_ABSTAINED, GATE_UNEVALUATED)

_BUCKET_TYPES = ("choice", "score", "noul")
_BUCKET_SIZES = ("2", "3-5", "6-10", "11+")
_BUCKETS = frozenset("%s:%s" % (t, s) for t in _BUCKET_TYPES for s in _BUCKET_SIZES)


def _number(v):
    """v as a float when it is a finite real number (bools are not), else None."""
    if isinstance(v, bool) or not isinstance(v, (int, float)):
        return None
    return float(v) if math.isfinite(v) else None


def _first(p, k):
    return [float(x) for x in list(p)[:k]]


def _clip(x, lo, hi):
    """x within [lo, hi]; a NaN stays NaN (as numpy's clip leaves it)."""
    return x if x != x else lo if x < lo else hi if x > hi else x


def answer_confidence(p, k):
    """max(p[:k]) clipped to [0, 1] (1.0 when k < 1): the confidence the gate reads. A NaN among
    them gives NaN, as numpy's max does."""
    if k < 1:
        return 1.0
    v = _first(p, k)
    return float("nan") if any(x != x for x in v) else _clip(max(v), 0.0, 1.0)


def confidence_from_probs(p, k):
    """1 - H(p[:k]) / log(k), clipped to [0, 1] (1.0 below two options): not calibrated."""
    if k < 2:
        return 1.0
    h = -sum(x * math.log(_clip(x, 1e-12, 1.0)) if x == x else x for x in _first(p, k))
    return _clip(1.0 - h / math.log(k), 0.0, 1.0)


def ece_score(conf, correct, bins=15):
    """Expected calibration error over `bins` equal-width confidence bins (the first closed)."""
    if isinstance(bins, bool) or not isinstance(bins, Integral) or bins < 1:
        raise ValueError("bins must be an integer of at least 1, got %r" % (bins,))
    c = [float(x) for x in conf]
    ok = [float(x) for x in correct]
    if not c:
        return float("nan")
    total = 0.0
    step = 1.0 / bins
    for i in range(bins):  # numpy.linspace's edges: i * step, the last exactly 1
        lo, hi = i * step, 1.0 if i + 1 == bins else (i + 1) * step
        idx = [j for j, x in enumerate(c) if (x >= lo if i == 0 else x > lo) and x <= hi]
        if idx:
            mc = math.fsum(c[j] for j in idx) / len(idx)
            ma = math.fsum(ok[j] for j in idx) / len(idx)
            total += len(idx) / len(c) * abs(mc - ma)
    return float(total)


def answer_confidence_value(answer):
    """The answer's `answer_confidence` when it is a usable number, else None."""
    return _number(answer.get("answer_confidence"))


def jev_confidence(answer):
    """The confidence Jev's adapter would report for this answer's probabilities, in [0, 1], or
    None (a noul answer, or probabilities that are not all finite, non-negative numbers). choice:
    (max(p) - 1/n) / (1 - 1/n); score: 1 - the spread around the mode over a uniform one's."""
    kind, probs = answer.get("type"), answer.get("probabilities")
    if kind not in ("choice", "score") or not isinstance(probs, dict) or not probs:
        return None
    try:
        keys = sorted(probs, key=int) if kind == "score" else list(probs)
        p = [float(probs[key]) for key in keys]
    except (TypeError, ValueError):
        return None
    if any(isinstance(v, bool) for v in probs.values()) or any(not math.isfinite(v) or v < 0.0 for v in p):
        return None
    n = len(p)
    if n == 1:
        return 1.0
    s = sum(p)
    p = [v / s for v in p] if s else [1.0 / n] * n
    if kind == "choice":
        return (max(p) - 1.0 / n) / (1.0 - 1.0 / n)
    mode = max(range(n), key=p.__getitem__)
    spread = sum(v * abs(i - mode) for i, v in enumerate(p))
    mid = (n - 1) / 2
    uniform = sum(abs(i - mid) for i in range(n)) / n
    return max(0.0, 1.0 - spread / uniform)


def _gate_value(answer):
    """What the gate compares: answer_confidence, else confidence, else None."""
    v = answer_confidence_value(answer)
    return v if v is not None else _number(answer.get("confidence"))


def _threshold(v):
    if isinstance(v, bool) or not isinstance(v, (int, float)) or not math.isfinite(v) or not 0.0 <= v <= 1.0:
        raise ValueError("min_confidence must be a float in [0.0, 1.0], got %r" % (v,))
    return float(v)


def bucket_keys():
    """The option-count buckets a min_confidence map may name ("choice:2", ..., "noul:11+")."""
    return set(_BUCKETS)


def check_min_confidence_map(m):
    """A per-bucket threshold map, validated: keys are buckets or "default", values in [0, 1]."""
    if not isinstance(m, dict) or not m:
        raise ValueError("a min_confidence map must be a non-empty dict of bucket -> float, got %r" % (m,))
    out = {}
    for key, val in m.items():
        if not isinstance(key, str) or (key not in _BUCKETS and key != "default"):
            raise ValueError("min_confidence map keys must be a bucket like 'choice:3-5' or "
                             "'default', got %r" % (key,))
        out[key] = _threshold(val)
    return out


def check_min_confidence(v):
    """A min_confidence, validated: a float in [0, 1], or a per-bucket map (a dict)."""
    return check_min_confidence_map(v) if isinstance(v, dict) else _threshold(v)


def bucket_of(kind, k):
    """The option-count bucket of a question type name and its option count ("choice:3-5"): the
    key of temperature_by_options and of a min_confidence map."""
    return "%s:%s" % (kind, "2" if k <= 2 else "3-5" if k <= 5 else "6-10" if k <= 10 else "11+")


def _bucket(answer):
    kind = answer.get("type")
    if kind not in _BUCKET_TYPES:
        return None
    probs = answer.get("probabilities")
    if isinstance(probs, dict) and probs:
        k = len(probs)
    elif kind == "noul":
        k = 2
    else:
        return None
    return bucket_of(kind, k)


def resolve_min_confidence(answer, thresholds, default=0.0):
    """The threshold of this answer's bucket under a map: its bucket's, else "default"'s, else
    `default` (0.0: gate nothing)."""
    key = _bucket(answer)
    if key is not None and key in thresholds:
        return thresholds[key]
    return thresholds.get("default", default)


def _answers(results):
    for res in results:
        answers = res.get("answers") if isinstance(res, dict) else None
        if isinstance(answers, dict):
            for a in answers.values():
                if isinstance(a, dict):
                    yield a


def flag_low_confidence(results, min_confidence):
    """Mark each answer below its threshold with low_confidence: True (in place), and clear the
    mark from an answer that now clears it or has no usable confidence."""
    is_map = isinstance(min_confidence, dict)
    for a in _answers(results):
        v = _gate_value(a)
        thr = None if v is None else resolve_min_confidence(a, min_confidence) if is_map else min_confidence
        if v is not None and v < thr:
            a["low_confidence"] = True
        else:
            a.pop("low_confidence", None)


def apply_confidence_gate(results, min_confidence=None):
    """With min_confidence set: flag_low_confidence, then write each answer's "abstention" (one of
    GATE_STATES) and the "abstention_threshold" it was gated at. Unset: write nothing."""
    if min_confidence is None:
        return
    is_map = isinstance(min_confidence, dict)
    flag_low_confidence(results, min_confidence)
    for a in _answers(results):
        if a.get("low_confidence"):
            a["abstention"] = GATE_ABSTAINED
        elif _gate_value(a) is None:
            a["abstention"] = GATE_UNEVALUATED
        else:
            a["abstention"] = GATE_PASSED
        a["abstention_threshold"] = float(resolve_min_confidence(a, min_confidence) if is_map else min_confidence)
