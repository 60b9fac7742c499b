#!/usr/bin/env python3
"""python/shortlist: laya_c's shortlist helpers against the real laya 0.4.15's recordings.

  test_shortlist.py FIXTURES

tests/fixtures/shortlist/<ckpt>/ (tools/ref/gen_shortlist.py, gen_tournament.py) holds what
laya.shortlist returned on the fixture checkpoints. Replayed through laya_c:
1. embed.jsonl: embed_fn_from_agent(agent, max_length, batch_size)(texts) gives Laya's vectors.
2. cases.jsonl: predict_shortlist(agent, state, questions, embed_fn_from_agent(agent), k, **kw)
   with the embedder behind a plain function (the Python orchestration) and, where it applies, as
   given (the C library's laya_predict_shortlist in one call); results, errors and RuntimeWarnings are
   Laya's. shortlist_choice(..., return_scores=True) gives each ranked question's labels and scores.
3. tournament.jsonl: predict_tournament gives Laya's results, errors and warnings, through the
   Python orchestration and (on a laya_c.Agent) the C library's laya_predict_tournament.
   router_tournament.jsonl: the same over a laya_c.Router (the recorded Router's config), through
   the Python orchestration over Router.predict and the C library's laya_router_predict_tournament.
4. cached_embed_fn: the same answers as the bare embedder, counted hits and misses, Laya's errors
   for a bad shape and for a changed dimension.
Numbers follow tests/parity's rule (compare.py); labels, errors and warnings are exact.
"""
import json
import os
import sys
import warnings

import laya_c
from laya_c import shortlist as sl

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from compare import compare  # noqa: E402

failures = []
CKPTS = ("modernbert-tiny", "mmbert-tiny")


def check(ok, what):
    if not ok:
        print("FAIL " + what)
        failures.append(what)
    return ok


def lines(path):
    with open(path, encoding="utf-8") as f:
        return [json.loads(line) for line in f if line.strip()]


def outcome(fn):
    """(result, error, RuntimeWarning messages) of fn()."""
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        try:
            got, err = fn(), None
        except Exception as e:  # noqa: BLE001 - the error is what is compared
            got, err = None, e
    return got, err, [str(w.message) for w in caught if issubclass(w.category, RuntimeWarning)]


def same_outcome(label, row, got, err, warned, key="result"):
    if "error" in row:
        want = row["error"]
        return check(err is not None and type(err).__name__ == want["kind"] and str(err) == want["message"],
                     "%s: raised %r, Laya raised %s(%r)" % (label, err, want["kind"], want["message"]))
    if not check(err is None, "%s: raised %r" % (label, err)):
        return False
    diffs, _ = compare(got, row[key])
    ok = check(not diffs, "%s: %s" % (label, "; ".join(diffs[:4])))
    return check(warned == row["warnings"], "%s: warnings %r, Laya's %r" % (label, warned, row["warnings"])) and ok


def embeddings(fx, ck, agent):
    n = 0
    for row in lines(os.path.join(fx, "shortlist", ck, "embed.jsonl")):
        emb = laya_c.embed_fn_from_agent(agent, max_length=row["max_length"], batch_size=row["batch_size"])
        got = emb(row["texts"])
        check(got.dtype.name == "float32" and got.shape == (len(row["texts"]), len(row["vectors"][0])),
              "%s embed %s: dtype %s shape %s" % (ck, row["id"], got.dtype, got.shape))
        diffs, _ = compare(got.tolist(), row["vectors"])
        check(not diffs, "%s embed %s: %s" % (ck, row["id"], "; ".join(diffs[:3])))
        n += 1
    empty = laya_c.embed_fn_from_agent(agent)([])
    check(empty.shape == (0, agent.info["hidden_size"]), "%s: embedding no texts gives %s" % (ck, empty.shape))
    return n


def shortlist_cases(fx, ck, agent):
    emb = laya_c.embed_fn_from_agent(agent)

    def bare(texts):  # the same embedder, but not one laya_c can recognise
        return emb(texts)

    native = ranked = 0
    for row in lines(os.path.join(fx, "shortlist", ck, "cases.jsonl")):
        req = json.loads(row["request"])
        state, questions = req.pop("state", None), req.pop("questions", None)
        k = req.pop("k", laya_c.shortlist.DEFAULT_SHORTLIST_K)
        ways = [("python path", bare)]
        if sl._native_route(agent, questions, emb, k, req) is not None:
            native += 1
            ways.append(("C library", emb))
        for name, fn in ways:
            got, err, warned = outcome(lambda: laya_c.predict_shortlist(agent, state, questions, fn, k, **req))
            same_outcome("%s %s (%s)" % (ck, row["id"], name), row, got, err, warned)
        if "error" in row:
            continue
        for qid, meta in row["result"]["shortlist"].items():
            q = questions[qid]
            got, err, _ = outcome(lambda: laya_c.shortlist_choice(state, q["criteria"], bare, k,
                                                                  instructions=q.get("instructions"),
                                                                  return_scores=True))
            ok = err is None and list(got[0]) == meta["labels"]
            if ok and meta["scores"] is not None:
                ok = not compare(list(got[1]), meta["scores"])[0]
            elif ok:
                ok = got[1] is None
            check(ok, "%s %s: shortlist_choice(%s) gave %r / %r" % (ck, row["id"], qid, got, err))
            ranked += 1
    return native, ranked


def tournaments(fx, ck, agent):
    n = native = 0
    for row in lines(os.path.join(fx, "shortlist", ck, "tournament.jsonl")):
        req = json.loads(json.dumps(row["request"]))
        state, questions = req.pop("state"), req.pop("questions")
        before = json.dumps(questions)
        ways = [("python path", _Predictor(agent))]
        if sl._native_tournament(agent, questions, req.get("group_size", 16),
                                 {k: v for k, v in req.items() if k != "group_size"}) is not None:
            native += 1
            ways.append(("C library", agent))
        for name, who in ways:
            got, err, warned = outcome(lambda: laya_c.predict_tournament(who, state, questions, **req))
            same_outcome("%s tournament %s (%s)" % (ck, row["id"], name), row, got, err, warned)
            check(json.dumps(questions) == before, "%s tournament %s: the caller's questions changed" % (ck, row["id"]))
        n += 1
    return n, native


def router_tournaments(fx):
    rows = lines(os.path.join(fx, "shortlist", "router_tournament.jsonl"))
    cfg = rows[0]["router"]
    ckpt = os.path.join(fx, "ckpt")
    router = laya_c.Router(models={k: os.path.join(ckpt, v) for k, v in cfg["models"].items()},
                           auto_task_detection=cfg["auto_task_detection"], default=cfg["default"])
    n = native = 0
    for row in rows[1:]:
        row = json.loads(json.dumps(row).replace("{CKPT}", json.dumps(ckpt)[1:-1]))
        req = json.loads(json.dumps(row["request"]))
        state, questions = req.pop("state"), req.pop("questions")
        ways = [("python path", _Predictor(router))]
        if sl._native_tournament(router, questions, req.get("group_size", 16),
                                 {k: v for k, v in req.items() if k != "group_size"}) is not None:
            native += 1
            ways.append(("C library", router))
        for name, who in ways:
            got, err, _ = outcome(lambda: laya_c.predict_tournament(who, state, questions, **req))
            # the load warnings of the first call (a checkpoint's temperatures) are not the tournament's
            same_outcome("router tournament %s (%s)" % (row["id"], name), dict(row, warnings=[]), got, err, [])
        n += 1
    router.close()
    return n, native


class _Predictor:
    """The agent behind an object laya_c does not know: the tournament's Python orchestration."""

    def __init__(self, agent):
        self.agent = agent

    def predict(self, *args, **kwargs):
        return self.agent.predict(*args, **kwargs)


def cache(fx, ck, agent):
    emb = laya_c.embed_fn_from_agent(agent)
    calls = []

    def counted(texts):
        calls.append(len(texts))
        return emb(texts)

    cached = laya_c.cached_embed_fn(counted, maxsize=10000)
    rows = [r for r in lines(os.path.join(fx, "shortlist", ck, "cases.jsonl"))
            if "error" not in r and not r["warnings"]][:6]
    for rnd in (1, 2):
        for row in rows:
            req = json.loads(row["request"])
            state, questions = req.pop("state"), req.pop("questions")
            k = req.pop("k", laya_c.shortlist.DEFAULT_SHORTLIST_K)
            got, err, warned = outcome(lambda: laya_c.predict_shortlist(agent, state, questions, cached, k, **req))
            same_outcome("%s cached round %d %s" % (ck, rnd, row["id"]), row, got, err, warned)
        info = cached.cache_info()
        if rnd == 1:
            first = dict(info)
            first_calls = len(calls)
    # the second round finds every option text (and every repeated query) in the cache
    check(info["misses"] - first["misses"] <= len(rows) and info["hits"] > first["hits"],
          "%s cache: %r after round 1, %r after round 2" % (ck, first, info))
    check(len(calls) - first_calls <= len(rows), "%s cache: %d embed calls in round 2" % (ck, len(calls) - first_calls))
    check(info["size"] == first["size"] + (info["misses"] - first["misses"]),
          "%s cache: size %d" % (ck, info["size"]))
    cached.cache_clear()
    check(cached.cache_info() == {"size": 0, "maxsize": 10000, "hits": 0, "misses": 0}, "cache_clear")
    # Laya's refusals
    bad = laya_c.cached_embed_fn(lambda texts: [[1.0, 2.0]] * (len(texts) + 1))
    _, err, _ = outcome(lambda: bad(["a", "b"]))
    check(isinstance(err, ValueError) and str(err) == "embed_fn must return an array of shape (2, dim), got (3, 2)",
          "cache: bad shape raised %r" % (err,))
    dims = iter((2, 3))
    drift = laya_c.cached_embed_fn(lambda texts, d=dims: [[1.0] * next(d)] * len(texts))
    drift(["a"])
    _, err, _ = outcome(lambda: drift(["b"]))
    check(isinstance(err, ValueError) and "embed_fn returned dim 3, but the cache holds dim 2" in str(err),
          "cache: changed dimension raised %r" % (err,))
    tiny = laya_c.cached_embed_fn(lambda texts: [[float(len(t)), 1.0] for t in texts], maxsize=2)
    tiny(["a", "bb", "ccc"])
    check(tiny.cache_info()["size"] == 2, "cache: maxsize 2 holds %d" % tiny.cache_info()["size"])


def contracts(agent):
    _, err, _ = outcome(lambda: laya_c.shortlist_choice("x", ["a", "b", "c"], "not callable", 1))
    check(isinstance(err, TypeError) and str(err) == "embed_fn must be callable", "embed_fn not callable: %r" % (err,))
    _, err, _ = outcome(lambda: laya_c.shortlist_choice("x", ["a", "b", "c"], lambda t: [[1.0]] * 2, 1))
    check(isinstance(err, ValueError) and str(err) == "embed_fn must return an array of shape (4, dim), got (2, 1)",
          "embed_fn bad shape: %r" % (err,))
    # k covering every label returns them in order without calling the embedder
    got, err, _ = outcome(lambda: laya_c.shortlist_choice("x", ["b", "a"], lambda t: 1 / 0, 2, return_scores=True))
    check(err is None and got == (["b", "a"], None), "k >= n passthrough: %r %r" % (got, err))
    for bad_k in (0, -1, True, 2.0):
        _, err, _ = outcome(lambda: laya_c.shortlist_choice("x", ["a"], lambda t: t, bad_k))
        check(isinstance(err, ValueError) and str(err) == "k must be a positive integer, got %r" % (bad_k,),
              "k=%r: %r" % (bad_k, err))
    for kw in ({"max_length": 0}, {"batch_size": False}):
        _, err, _ = outcome(lambda: laya_c.embed_fn_from_agent(agent, **kw))
        name, val = next(iter(kw.items()))
        check(isinstance(err, ValueError) and str(err) == "%s must be a positive integer, got %r" % (name, val),
              "embed_fn_from_agent(%r): %r" % (kw, err))
    # a zero query vector ranks every label 0: criteria order is kept
    got, err, _ = outcome(lambda: laya_c.shortlist_choice("x", ["a", "b", "c"], lambda t: [[0.0, 0.0]] + [[1.0, 0.0]] * 3,
                                                          2, return_scores=True))
    check(err is None and got == (["a", "b"], [0.0, 0.0]), "zero query: %r %r" % (got, err))
    # non-finite embedder output counts as 0, negative cosines rank below it
    got, err, _ = outcome(lambda: laya_c.shortlist_choice(
        "x", ["neg", "nan", "pos"], lambda t: [[1.0, 0.0], [-1.0, 0.0], [float("nan"), float("nan")], [1.0, 1.0]],
        3, return_scores=False))
    check(err is None and got == ["neg", "nan", "pos"], "k = n keeps order: %r %r" % (got, err))
    got, err, _ = outcome(lambda: laya_c.shortlist_choice(
        "x", ["neg", "nan", "pos"], lambda t: [[1.0, 0.0], [-1.0, 0.0], [float("nan"), float("nan")], [1.0, 1.0]], 2))
    check(err is None and got == ["pos", "nan"], "non-finite and negative ranking: %r %r" % (got, err))


def main():
    fx = sys.argv[1]
    for ck in CKPTS:
        agent = laya_c.Agent(os.path.join(fx, "ckpt", ck), device="cpu", quiet=True)
        n_embed = embeddings(fx, ck, agent)
        native, ranked = shortlist_cases(fx, ck, agent)
        n_tour, native_tour = tournaments(fx, ck, agent)
        check(native_tour >= 8, "%s: only %d tournaments ran in the C library" % (ck, native_tour))
        cache(fx, ck, agent)
        check(native >= 10, "%s: only %d cases took the C library's predict_shortlist" % (ck, native))
        print("%s: %d embed rows, shortlist cases (%d through the C library), %d shortlist_choice, %d tournaments (%d in C)"
              % (ck, n_embed, native, ranked, n_tour, native_tour))
        if ck == CKPTS[0]:
            contracts(agent)
        agent.close()
    n_tour, native_tour = router_tournaments(fx)
    check(n_tour >= 10 and native_tour >= 8, "router: %d tournaments, %d in C" % (n_tour, native_tour))
    print("router: %d tournaments (%d in C)" % (n_tour, native_tour))
    print("%d failures" % len(failures))
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
