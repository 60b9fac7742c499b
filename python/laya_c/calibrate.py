"""Laya's temperature fitting (laya.fit_one_temperature, fit_temperature_map / fit_temperatures),
the fits `Agent.fit_temperatures` installs and `Agent.save_calibration` writes. Needs numpy
(`pip install .[calibrate]`).

A record is (qtype, logits, target[, k]): qtype 0 choice, 1 score, 2 noul; the logits the decoder
divides by the temperature and a target probability vector, both cut to their first k entries.
One scalar per question type is fitted from MIN_TYPE_N records on, one per (type, option-count
bucket) from MIN_BUCKET_N on; each minimises the mean negative log-likelihood of softmax(z / T)
over log T and is clamped to [TEMP_MIN, TEMP_MAX]. Laya runs torch's LBFGS in float32 on it; here
the one-dimensional objective is minimised directly in float64 (a grid over the search band, then
golden-section search), so a fitted temperature agrees with Laya's to the optimiser's tolerance,
not bit for bit (tests/python/test_calibrate.py: within 0.2%). The held-out ECE split is Laya's
exactly (numpy.random.RandomState(seed), stratified by bucket).
"""
import math
from numbers import Integral

from .confidence import QTYPE_NAMES, bucket_of, ece_score

TEMP_MIN, TEMP_MAX = 0.5, 5.0
MIN_BUCKET_N = 2000
MIN_TYPE_N = 10
ECE_HOLDOUT_FRAC = 0.2
LOG_T_MARGIN = 10.0  # the search band: this many e-folds beyond [TEMP_MIN, TEMP_MAX]
CALIBRATION_VERSION = 2


def _np():
    try:
        import numpy
    except ImportError:  # pragma: no cover - the package's [calibrate] extra
        raise ImportError("laya_c's temperature fitting needs numpy: pip install numpy") from None
    return numpy


def clamp_temperature(t, lo=TEMP_MIN, hi=TEMP_MAX):
    """t within [lo, hi]; 1.0 for anything that is not a finite number (a bool included)."""
    if isinstance(t, bool):
        return 1.0
    try:
        t = float(t)
    except (TypeError, ValueError):
        return 1.0
    return 1.0 if not math.isfinite(t) else min(hi, max(lo, t))


def temp_bucket(qtype, k):
    return bucket_of(QTYPE_NAMES[int(qtype)], k)


def _vector(np, name, value):
    if hasattr(value, "detach") and hasattr(value, "cpu"):  # a torch tensor, without importing torch
        value = value.detach().cpu().numpy()
    bad = ValueError("%s must be a one-dimensional numeric vector" % name)
    try:
        v = np.asarray(value)
        if v.ndim != 1 or v.dtype.kind not in "iuf":
            raise bad
        with np.errstate(over="ignore", invalid="ignore"):
            v = v.astype(np.float32)
    except (TypeError, ValueError, OverflowError) as exc:
        raise bad from exc
    if not np.isfinite(v).all():
        raise ValueError("%s must contain only finite values" % name)
    return v


def _pair(np, logits, target, k=None):
    z, t = _vector(np, "logits", logits), _vector(np, "target", target)
    if len(z) != len(t):
        raise ValueError("logits and target must have the same length")
    if k is None:
        k = len(z)
    if isinstance(k, bool) or not isinstance(k, Integral) or not 1 <= k <= len(z):
        raise ValueError("k must be an integer between 1 and the vector length")
    z, t = z[:k], t[:k]
    if (t < 0).any() or not np.isclose(t.sum(), 1.0, rtol=1e-5, atol=1e-6):
        raise ValueError("target must be a nonnegative probability vector summing to 1")
    return z, t, int(k)


def _records(np, records):
    out = []
    for rec in records:
        if not isinstance(rec, (list, tuple)) or len(rec) not in (3, 4):
            raise ValueError("record must be (qtype, logits, target[, k])")
        qtype, logits, target = rec[0], rec[1], rec[2]
        k = rec[3] if len(rec) == 4 else None
        if len(rec) == 4 and k is None:
            raise ValueError("k must be an integer between 1 and the vector length")
        if isinstance(qtype, bool) or not isinstance(qtype, Integral) or not 0 <= qtype < 3:
            raise ValueError("qtype must be an integer between 0 and 2")
        z, t, k = _pair(np, logits, target, k)
        out.append((int(qtype), z, t, k))
    return out


def _nll(np, groups, n, log_t):
    """mean over the rows of -sum(t * log_softmax(z / T)), T = exp(log_t), in float64"""
    scale = math.exp(log_t)
    total = 0.0
    for z, t in groups:
        s = z / scale
        m = s.max(axis=1, keepdims=True)
        lse = m[:, 0] + np.log(np.exp(s - m).sum(axis=1))
        total -= float((t * (s - lse[:, None])).sum())
    return total / n


def _unclamped(np, pairs, min_n=None):
    if min_n is None:
        min_n = MIN_BUCKET_N
    if isinstance(min_n, bool) or not isinstance(min_n, Integral) or min_n < 1:
        raise ValueError("min_n must be a positive integer")
    sel = []
    for p in pairs:
        try:
            z, t = p
        except (TypeError, ValueError) as exc:
            raise ValueError("pair must be (logits, target)") from exc
        z, t, _k = _pair(np, z, t)
        sel.append((z, t))
    if len(sel) < min_n:
        return 1.0
    by_width = {}
    for z, t in sel:
        by_width.setdefault(len(z), []).append((z, t))
    groups = [(np.stack([z for z, _ in g]).astype(np.float64), np.stack([t for _, t in g]).astype(np.float64))
              for _w, g in sorted(by_width.items())]
    lo, hi = math.log(TEMP_MIN) - LOG_T_MARGIN, math.log(TEMP_MAX) + LOG_T_MARGIN
    f = lambda x: _nll(np, groups, float(len(sel)), x)  # noqa: E731
    steps = 200
    xs = [lo + (hi - lo) * i / steps for i in range(steps + 1)]
    vals = [f(x) for x in xs]
    best = min(range(steps + 1), key=vals.__getitem__)
    a, b = xs[max(best - 1, 0)], xs[min(best + 1, steps)]
    g = (math.sqrt(5.0) - 1) / 2
    c, d = b - g * (b - a), a + g * (b - a)
    fc, fd = f(c), f(d)
    while b - a > 1e-10:
        if fc < fd:
            b, d, fd = d, c, fc
            c = b - g * (b - a)
            fc = f(c)
        else:
            a, c, fc = c, d, fd
            d = a + g * (b - a)
            fd = f(d)
    x = (a + b) / 2
    if vals[best] < f(x):  # the optimum is a band edge the bracket kept
        x = xs[best]
    return math.exp(x)


def fit_one_temperature(pairs, min_n=None):
    """One temperature for (logits, target) pairs, clamped to [TEMP_MIN, TEMP_MAX]; 1.0 below
    min_n pairs (default MIN_BUCKET_N)."""
    return clamp_temperature(_unclamped(_np(), pairs, min_n))


def _by_type_and_bucket(recs):
    by_type, by_bucket = {qt: [] for qt in range(3)}, {}
    for qt, z, t, k in recs:
        by_type[qt].append((z, t))
        by_bucket.setdefault(temp_bucket(qt, k), []).append((z, t))
    return by_type, by_bucket


def _clamped(raw, applied):
    if not math.isfinite(raw) or TEMP_MIN <= raw <= TEMP_MAX:
        return None
    return {"fitted": raw, "applied": applied, "bound": "min" if raw < TEMP_MIN else "max"}


def _softmax(np, z, t):
    z = np.asarray(z, dtype=np.float64) / max(1e-3, float(t))
    p = np.exp(z - z.max())
    return p / p.sum()


def fit_temperature_map(records, compute_ece=False, seed=0):
    """Laya's fit_temperature_map: {"temperature": [3], "temperature_by_options": {bucket: T},
    "n_by_bucket", "temperature_clamped" (each fit the clamp moved: fitted, applied, bound)}; with
    compute_ece, fitted on 80% of each bucket (split by seed) and a "report" of the ECE before and
    after on the rest."""
    np = _np()
    if seed is not None and (isinstance(seed, bool) or not isinstance(seed, Integral) or not 0 <= seed < 2 ** 32):
        raise ValueError("seed must be None or an integer in [0, 2**32-1], got %r" % (seed,))
    recs = _records(np, records)
    n_by_bucket = {key: len(v) for key, v in _by_type_and_bucket(recs)[1].items()}
    fit, held, excluded = recs, None, []
    if compute_ece:
        members = {}
        for i, (qt, _z, _t, k) in enumerate(recs):
            members.setdefault(temp_bucket(qt, k), []).append(i)
        rng = np.random.RandomState(seed)
        fit_i, held_i = [], []
        for key in sorted(members):
            idx = members[key]
            n_eval = int(round(len(idx) * ECE_HOLDOUT_FRAC))
            if len(idx) - n_eval < MIN_BUCKET_N:  # too few to split: all fitted, none scored
                fit_i += idx
                excluded.append(key)
                continue
            perm = rng.permutation(len(idx))
            held_i += [idx[int(j)] for j in perm[:n_eval]]
            fit_i += [idx[int(j)] for j in perm[n_eval:]]
        fit, held = [recs[i] for i in sorted(fit_i)], [recs[i] for i in sorted(held_i)]
    by_type, by_bucket = _by_type_and_bucket(fit)
    temperature, by_options, clamped = [1.0, 1.0, 1.0], {}, {}
    for qt in range(3):
        if len(by_type[qt]) >= MIN_TYPE_N:
            raw = _unclamped(np, by_type[qt], MIN_TYPE_N)
            temperature[qt] = clamp_temperature(raw)
            entry = _clamped(raw, temperature[qt])
            if entry:
                clamped[QTYPE_NAMES[qt]] = entry
    for key, pairs in by_bucket.items():
        if len(pairs) >= MIN_BUCKET_N:
            raw = _unclamped(np, pairs)
            by_options[key] = clamp_temperature(raw)
            entry = _clamped(raw, by_options[key])
            if entry:
                clamped[key] = entry
    out = {"temperature": temperature, "temperature_by_options": by_options, "n_by_bucket": n_by_bucket,
           "temperature_clamped": clamped}
    if compute_ece:
        cb, ob, ca, oa = [], [], [], []
        for qt, z, t, k in held:
            y = int(np.argmax(t[:k]))
            p0 = _softmax(np, z[:k], 1.0)
            p1 = _softmax(np, z[:k], by_options.get(temp_bucket(qt, k), temperature[qt]))
            cb.append(float(p0.max()))
            ob.append(float(int(p0.argmax()) == y))
            ca.append(float(p1.max()))
            oa.append(float(int(p1.argmax()) == y))
        out["report"] = {"ece_before": ece_score(cb, ob), "ece_after": ece_score(ca, oa), "n": float(len(recs)),
                         "n_eval": float(len(held)), "buckets_excluded_from_eval": excluded}
    return out


fit_temperatures = fit_temperature_map


# ---- on top of the temperatures: histogram binning and abstention thresholds ----

MIN_BINNING_BUCKET_N = 200  # records a bucket needs for a binning map (a count per bin, no fit)
MIN_ABSTAIN_BUCKET_N = 100  # records a bucket needs for an abstention threshold (one order statistic)


def _count(name, value):
    if isinstance(value, bool) or not isinstance(value, Integral) or value < 1:
        raise ValueError("%s must be a positive integer, got %r" % (name, value))
    return int(value)


def _calibrated(np, recs, temperature, temperature_by_options):
    """per record: (bucket, max of the calibrated softmax, whether its argmax is the target's)"""
    for qt, z, t, k in recs:
        key = temp_bucket(qt, k)
        p = _softmax(np, z[:k], temperature_by_options.get(key, temperature[qt]))
        yield key, float(p.max()), int(int(p.argmax()) == int(np.argmax(t[:k])))


def apply_binning_map(confidence, bucket, binning_map):
    """One answer_confidence through its bucket's bins (unchanged for a bucket the map lacks)."""
    entry = binning_map.get(bucket)
    if not entry:
        return float(confidence)
    bins = int(entry["bins"])
    return float(entry["values"][min(bins - 1, max(0, int(float(confidence) * bins)))])


def fit_binning_map(records, temperature, temperature_by_options, *, bins=15, min_bucket_n=MIN_BINNING_BUCKET_N):
    """Laya's fit_binning_map: per bucket with min_bucket_n records, `bins` equal-width bins of the
    calibrated confidence, each mapped to its records' accuracy (an empty bin to its centre):
    {bucket: {"bins": N, "values": [...]}}."""
    np = _np()
    bins = _count("bins", bins)
    min_bucket_n = _count("min_bucket_n", min_bucket_n)
    by_bucket = {}
    for key, conf, ok in _calibrated(np, _records(np, records), temperature, temperature_by_options):
        by_bucket.setdefault(key, []).append((conf, ok))
    out = {}
    for key, pairs in by_bucket.items():
        if len(pairs) < min_bucket_n:
            continue
        conf = np.asarray([c for c, _ in pairs], dtype=float)
        hit = np.asarray([o for _, o in pairs], dtype=float)
        which = np.clip((conf * bins).astype(int), 0, bins - 1)
        out[key] = {"bins": bins, "values": [float(hit[which == b].mean()) if (which == b).any() else (b + 0.5) / bins
                                              for b in range(bins)]}
    return out


def _threshold_for(pairs, target_error, conservative):
    """The lowest confidence level whose accepted set (confidence >= it) keeps the error rate (with
    one pseudo-error when conservative) within target_error; 1.0 when none does."""
    pairs = sorted(pairs, key=lambda p: p[0], reverse=True)
    best, accepted, errors, i = None, 0, 0, 0
    for level in sorted({c for c, _ in pairs}, reverse=True):
        while i < len(pairs) and pairs[i][0] >= level:  # a level accepts all of its ties at once
            accepted += 1
            errors += 0 if pairs[i][1] else 1
            i += 1
        rate = (errors + 1.0) / (accepted + 1.0) if conservative else errors / accepted
        if accepted and rate <= target_error:
            best = level
    return 1.0 if best is None else float(min(1.0, max(0.0, best)))


def fit_abstention_thresholds(records, temperature, temperature_by_options, *, binning_map=None, target_error=0.10,
                              min_bucket_n=MIN_ABSTAIN_BUCKET_N, conservative=True):
    """Laya's fit_abstention_thresholds: per bucket with min_bucket_n records, the min_confidence
    cut (on the calibrated, binned when binning_map is given, 4-decimal confidence the gate
    compares) that keeps the accepted answers' error within target_error."""
    np = _np()
    if isinstance(target_error, bool) or not 0.0 <= target_error <= 1.0:
        raise ValueError("target_error must be in [0.0, 1.0], got %r" % (target_error,))
    min_bucket_n = _count("min_bucket_n", min_bucket_n)
    by_bucket = {}
    for key, conf, ok in _calibrated(np, _records(np, records), temperature, temperature_by_options):
        if binning_map:
            conf = apply_binning_map(conf, key, binning_map)
        by_bucket.setdefault(key, []).append((round(conf, 4), ok))
    return {key: _threshold_for(pairs, target_error, conservative)
            for key, pairs in by_bucket.items() if len(pairs) >= min_bucket_n}
