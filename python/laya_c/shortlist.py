"""laya_c.shortlist: Laya's embedding shortlist and label tournament (laya.shortlist) over laya_c.

A choice question with many labels shares one option budget (head_max_len) among them, so each
label keeps only a few tokens. Two ways narrow the label set before the one predict that answers:

- predict_shortlist / shortlist_choice rank the labels by the signed cosine between an embedding of
  the query (instructions + serialised state) and one of each rendered option, and keep the top k.
  The embedder is any callable texts -> (len(texts), dim) array; embed_fn_from_agent(agent) is the
  checkpoint's own encoder, mean-pooled (laya_embed in the C library).
- predict_tournament needs no embedder: the labels play in groups of at most group_size, one
  predict per round answers every group as its own question, and the group winners meet again.

Behaviour, messages and warnings are Laya 0.4.15's. When the embedder is the agent's own one with
its default max_length, predict_shortlist runs in the C library in one call (laya_predict_shortlist:
ranking, label-vector cache and predict without a round trip through Python), and so does
predict_tournament on a laya_c.Agent or laya_c.Router (laya_predict_tournament /
laya_router_predict_tournament: every round in C, each routed on its own questions on a Router); any
other embedder, keyword or agent goes through the Python orchestration below, which gives the same
result.

numpy is needed here (the embedders return arrays, as Laya's do): pip install laya-c[shortlist].
"""
import json
import threading
import warnings
from collections import OrderedDict
from typing import Any, Callable, Dict, List, Optional, Sequence

DEFAULT_SHORTLIST_K = 20
DEFAULT_TOURNAMENT_GROUP = 16

# predict's keyword arguments the C library's predict_shortlist takes itself
_NATIVE_KWARGS = ("lang", "max_len", "head_max_len", "min_confidence")
_NATIVE_MAX_LENGTH = 512  # the C library embeds with embed_fn_from_agent's default


def _np():
    try:
        import numpy
    except ImportError:  # pragma: no cover - depends on the environment
        raise ImportError("laya_c's shortlist helpers need numpy: pip install 'laya-c[shortlist]'") from None
    return numpy


# -- the pieces Laya's ranking is made of --

def _positive_int(value, name):
    if isinstance(value, bool) or not isinstance(value, int) or value < 1:
        raise ValueError("%s must be a positive integer, got %r" % (name, value))
    return value


def _labelled(criteria):
    """(label, description) pairs of a choice's criteria, refusing what Laya refuses."""
    if isinstance(criteria, dict):
        pairs = list(criteria.items())
    elif isinstance(criteria, list):
        pairs = [(label, None) for label in criteria]
    else:
        raise TypeError("choice criteria must be a dict or list, got %s" % type(criteria).__name__)
    if not pairs:
        raise ValueError("choice criteria must contain at least one option")
    seen = set()
    for label, _desc in pairs:
        if label in seen:
            raise ValueError("choice criteria label %r is duplicated" % (label,))
        seen.add(label)
    return pairs


def _criterion_text(value):
    if isinstance(value, str):
        return value
    return json.dumps(value, ensure_ascii=False, separators=(", ", ": "), default=str)


def _option_text(label, desc):
    # only None and "" mean "no description" (0 and False are descriptions)
    if desc is None or (isinstance(desc, str) and desc == ""):
        return str(label)
    return "%s: %s" % (label, _criterion_text(desc))


def _query_text(state, instructions):
    body = state if isinstance(state, str) else json.dumps(state, ensure_ascii=False)
    if instructions is None or instructions == "":
        return body
    if not isinstance(instructions, str):
        instructions = json.dumps(instructions, ensure_ascii=False)
    return instructions + "\n" + body


def _as_rows(raw, n, np, dtype):
    """embed_fn's answer as an (n, dim) array without non-finite values, or Laya's ValueError."""
    if hasattr(raw, "detach"):  # a torch tensor
        raw = raw.detach().float().cpu().numpy()
    rows = np.asarray(raw, dtype=dtype)
    if rows.ndim != 2 or rows.shape[0] != n or rows.shape[1] < 1:
        raise ValueError("embed_fn must return an array of shape (%d, dim), got %s" % (n, tuple(rows.shape)))
    return np.nan_to_num(rows, copy=True, nan=0.0, posinf=0.0, neginf=0.0)


def _signed_cosines(np, query, options):
    """Cosine of each option row with the query; 0 where either vector is zero."""
    out = np.zeros(options.shape[0], dtype=np.float64)
    q_norm = float(np.linalg.norm(query))
    if q_norm == 0.0 or options.shape[0] == 0:
        return out
    denom = np.linalg.norm(options, axis=1) * q_norm
    live = denom > 0.0
    if live.any():
        out[live] = np.clip(options[live] @ query / denom[live], -1.0, 1.0)
    return out


def _rank(state, criteria, embed_fn, k, instructions):
    """(kept labels, their scores or None, passthrough, label count) for one choice."""
    k = _positive_int(k, "k")
    pairs = _labelled(criteria)
    labels = [label for label, _desc in pairs]
    if k >= len(pairs):
        return labels, None, True, len(pairs)
    if not callable(embed_fn):
        raise TypeError("embed_fn must be callable")
    np = _np()
    texts = [_query_text(state, instructions)] + [_option_text(label, desc) for label, desc in pairs]
    rows = _as_rows(embed_fn(texts), len(texts), np, np.float64)
    sims = _signed_cosines(np, rows[0], rows[1:])
    # best first; equal scores keep criteria order (a stable sort)
    order = sorted(range(len(labels)), key=lambda i: -sims[i])[:k]
    return [labels[i] for i in order], [float(sims[i]) for i in order], False, len(pairs)


def _narrowed(question, labels):
    criteria = question["criteria"]
    kept = {label: criteria[label] for label in labels} if isinstance(criteria, dict) else list(labels)
    return dict(question, criteria=kept)


def _without_stale_order(qid, question, kept, warned):
    """The question without an option_order: its slots fitted the caller's labels, not the kept
    ones, and remapping them would move options between slots. One RuntimeWarning per question."""
    if "option_order" not in question:
        return question
    order = question.pop("option_order")
    if qid not in warned:
        warned.add(qid)
        try:
            had = "%d slots" % len(order)
        except TypeError:
            had = repr(order)
        warnings.warn("laya.shortlist: question %r: 'option_order' (%s) was dropped because the label set "
                      "was narrowed to %d; the order no longer fits the kept options and remapping it onto "
                      "them would move options between slots." % (qid, had, kept), RuntimeWarning, stacklevel=2)
    return question


def _predict(agent, state, questions, kwargs):
    fn = getattr(agent, "predict", None) or getattr(agent, "system_one", None)
    if fn is None:
        raise TypeError("agent must provide predict or system_one")
    result = fn(state, questions, **kwargs)
    if not isinstance(result, dict):
        raise TypeError("predict/system_one must return a dict, got %s" % type(result).__name__)
    return result


def _choices(questions):
    return [(qid, q) for qid, q in questions.items() if isinstance(q, dict) and q.get("type") == "choice"]


def _criteria_of(qid, question):
    if "criteria" not in question:
        raise ValueError("question %r is a choice but has no criteria" % (qid,))
    return question["criteria"]


# -- the public helpers --

def shortlist_choice(state: Any, criteria: Any, embed_fn: Callable[[Sequence[str]], Any],
                     k: int = DEFAULT_SHORTLIST_K, *, instructions: Optional[str] = None,
                     return_scores: bool = False) -> Any:
    """The k labels of `criteria` closest to the state (laya.shortlist_choice); every label, in
    order and without calling embed_fn, when k covers them. With return_scores: (labels, scores),
    scores None when nothing was dropped."""
    labels, scores, _passthrough, _n = _rank(state, criteria, embed_fn, k, instructions)
    return (labels, scores) if return_scores else labels


def _native_route(agent, questions, embed_fn, k, kwargs):
    """The request laya_predict_shortlist answers exactly as the Python path would, or None."""
    from . import Agent  # the package imports this module lazily, so no cycle at import time
    if not (isinstance(embed_fn, _AgentEmbedder) and embed_fn.agent is agent and type(agent) is Agent
            and embed_fn.max_length == _NATIVE_MAX_LENGTH and isinstance(questions, dict)
            and not isinstance(k, bool) and isinstance(k, int) and k >= 1
            and all(key in _NATIVE_KWARGS for key in kwargs)):
        return None
    for _qid, q in _choices(questions):
        crit = q.get("criteria")
        # a narrowed choice that carries an option_order warns: Python's warnings module does that
        if "option_order" in q and isinstance(crit, (dict, list)) and len(crit) > k:
            return None
    req = {"questions": questions, "k": k}
    req.update((key, v) for key, v in kwargs.items() if v is not None)
    return req


def predict_shortlist(agent: Any, state: Any, questions: Dict[str, Dict[str, Any]],
                      embed_fn: Callable[[Sequence[str]], Any], k: int = DEFAULT_SHORTLIST_K,
                      **predict_kwargs: Any) -> Dict[str, Any]:
    """Narrow each choice with more than k labels to its k closest, then one predict
    (laya.predict_shortlist). The result is predict's plus "shortlist": {qid: {"labels", "scores",
    "k", "n", "passthrough"}} for each choice question; `questions` is not modified."""
    native = _native_route(agent, questions, embed_fn, k, predict_kwargs)
    if native is not None:
        from . import _PREDICT_SHORTLIST, _call
        native["state"] = state
        return _call(agent._h, _PREDICT_SHORTLIST, native)
    if not isinstance(questions, dict):
        raise TypeError("questions must be a dict of question id -> definition")
    k = _positive_int(k, "k")
    asked: Dict[str, Any] = {}
    meta: Dict[str, Dict[str, Any]] = {}
    warned: set = set()
    for qid, q in questions.items():
        if not (isinstance(q, dict) and q.get("type") == "choice"):
            asked[qid] = q
            continue
        labels, scores, passthrough, n = _rank(state, _criteria_of(qid, q), embed_fn, k, q.get("instructions"))
        meta[qid] = {"labels": list(labels), "scores": scores, "k": k, "n": n, "passthrough": passthrough}
        asked[qid] = q if passthrough else _without_stale_order(qid, _narrowed(q, labels), len(labels), warned)
    out = dict(_predict(agent, state, asked, predict_kwargs))
    out["shortlist"] = meta
    return out


# Router.predict's keyword arguments laya_router_predict_tournament takes itself (a lang_guess that
# is a code; a callable one, and hooks, take the Python path)
_NATIVE_ROUTER_KWARGS = _NATIVE_KWARGS + ("model", "task", "lang_guess")


def _native_tournament(agent, questions, group_size, kwargs):
    """The request laya_predict_tournament (on an Agent) or laya_router_predict_tournament (on a
    Router: each call routed on its own questions, as Router.predict routes each of them) answers
    exactly as the Python path would, or None."""
    from . import Agent, Router
    allowed = _NATIVE_KWARGS if type(agent) is Agent else _NATIVE_ROUTER_KWARGS if type(agent) is Router else None
    if not (allowed and isinstance(questions, dict) and not isinstance(group_size, bool)
            and isinstance(group_size, int) and group_size >= 2 and all(key in allowed for key in kwargs)
            and not callable(kwargs.get("lang_guess"))):
        return None
    for _qid, q in _choices(questions):
        crit = q.get("criteria")
        if "option_order" in q and isinstance(crit, (dict, list)) and len(crit) > group_size:
            return None  # it plays a round and loses its order: Python's warnings module says so
    req = {"questions": questions, "group_size": group_size}
    req.update((key, v) for key, v in kwargs.items() if v is not None)
    return req


def predict_tournament(agent: Any, state: Any, questions: Dict[str, Dict[str, Any]],
                       group_size: int = DEFAULT_TOURNAMENT_GROUP, **predict_kwargs: Any) -> Dict[str, Any]:
    """Narrow each choice with more than group_size labels by elimination rounds, then one more
    predict over every question (laya.predict_tournament). Each round cuts a field into near-equal
    groups in criteria order, answers all groups of all questions in one predict, and keeps each
    group's answer. The result carries "tournament": {qid: {"labels", "n", "rounds"}}."""
    native = _native_tournament(agent, questions, group_size, predict_kwargs)
    if native is not None:
        from . import _PREDICT_TOURNAMENT, _R_PREDICT_TOURNAMENT, Router, _call
        native["state"] = state
        return _call(agent._h, _R_PREDICT_TOURNAMENT if type(agent) is Router else _PREDICT_TOURNAMENT, native)
    if not isinstance(questions, dict):
        raise TypeError("questions must be a dict of question id -> definition")
    if isinstance(group_size, bool) or not isinstance(group_size, int) or group_size < 2:
        raise ValueError("group_size must be an integer of at least 2, got %r" % (group_size,))
    meta = {}
    for qid, q in _choices(questions):
        labels = [label for label, _desc in _labelled(_criteria_of(qid, q))]
        meta[qid] = {"labels": labels, "n": len(labels), "rounds": 0}
    warned: set = set()

    def cut(qid, labels):
        return _without_stale_order(qid, _narrowed(questions[qid], labels), len(labels), warned)

    while True:
        groups = []  # (qid, labels of one group)
        for qid, entry in meta.items():
            field = entry["labels"]
            parts = -(-len(field) // group_size)
            if parts > 1:
                bounds = [i * len(field) // parts for i in range(parts + 1)]
                groups.extend((qid, field[bounds[i]:bounds[i + 1]]) for i in range(parts))
        if not groups:
            break
        round_questions = {str(i): cut(qid, labels) for i, (qid, labels) in enumerate(groups)}
        answers = _predict(agent, state, round_questions, predict_kwargs).get("answers")
        if not isinstance(answers, dict):
            raise TypeError("predict/system_one must return an answers dict, got %s" % type(answers).__name__)
        winners: Dict[str, List[Any]] = {}
        for i, (qid, _labels) in enumerate(groups):
            winners.setdefault(qid, []).append(answers[str(i)]["choice"])
        for qid, labels in winners.items():
            meta[qid]["labels"] = labels
            meta[qid]["rounds"] += 1
    final = dict(questions)
    for qid, entry in meta.items():
        if entry["rounds"]:
            final[qid] = cut(qid, entry["labels"])
    out = dict(_predict(agent, state, final, predict_kwargs))
    out["tournament"] = meta
    return out


class _AgentEmbedder:
    """embed_fn_from_agent's callable: the agent's encoder, mean-pooled, through laya_embed."""

    def __init__(self, agent, max_length, batch_size):
        self.agent, self.max_length, self.batch_size = agent, max_length, batch_size

    def __call__(self, texts: Sequence[str]):
        from . import _EMBED, _call
        np = _np()
        rows = ["" if t is None else str(t) for t in texts]
        if not rows:
            return np.zeros((0, int(self.agent.info.get("hidden_size", 0))), dtype=np.float32)
        vectors = _call(self.agent._h, _EMBED, {"texts": rows, "max_length": self.max_length,
                                                "batch_size": self.batch_size})
        return np.asarray(vectors, dtype=np.float32)

    def __repr__(self):
        return "embed_fn_from_agent(%r, max_length=%d, batch_size=%d)" % (self.agent, self.max_length,
                                                                          self.batch_size)


def embed_fn_from_agent(agent: Any, max_length: int = 512, batch_size: int = 32):
    """texts -> float32 array (len(texts), hidden): the loaded checkpoint's encoder, its last
    hidden state mean-pooled over each text's tokens (laya.embed_fn_from_agent). No decision head,
    no download; a dedicated bi-encoder usually shortlists better."""
    _positive_int(max_length, "max_length")
    _positive_int(batch_size, "batch_size")
    if not hasattr(agent, "_h") or not hasattr(agent, "info"):
        raise TypeError("embed_fn_from_agent needs a laya_c.Agent, got %s" % type(agent).__name__)
    return _AgentEmbedder(agent, max_length, batch_size)


def cached_embed_fn(embed_fn: Callable[[Sequence[str]], Any], maxsize: int = 4096):
    """embed_fn behind an LRU cache of at most maxsize texts (laya.cached_embed_fn): the rows of a
    fixed label set are embedded once. Rows are stored as float32 with non-finite values made 0;
    texts missing from the cache go to embed_fn together, each once. Thread-safe (the lock is not
    held while embed_fn runs). The callable has cache_info() and cache_clear()."""
    if not callable(embed_fn):
        raise TypeError("embed_fn must be callable")
    _positive_int(maxsize, "maxsize")
    np = _np()
    store: "OrderedDict[str, Any]" = OrderedDict()
    lock = threading.Lock()
    stats = {"hits": 0, "misses": 0}

    def cached(texts: Sequence[str]):
        keys = ["" if t is None else str(t) for t in texts]
        if not keys:
            return np.zeros((0, 0), dtype=np.float32)
        with lock:
            rows = {}
            for key in keys:
                if key in store:
                    store.move_to_end(key)
                    rows[key] = store[key]
            hits = sum(1 for key in keys if key in rows)
            stats["hits"] += hits
            stats["misses"] += len(keys) - hits
            missing = [key for key in dict.fromkeys(keys) if key not in rows]
        if missing:
            fresh = _as_rows(embed_fn(list(missing)), len(missing), np, np.float32)
            with lock:
                if store:
                    dim = next(iter(store.values())).shape[0]
                    if fresh.shape[1] != dim:
                        raise ValueError("embed_fn returned dim %d, but the cache holds dim %d; call "
                                         "cache_clear() if the model behind embed_fn changed"
                                         % (fresh.shape[1], dim))
                for key, row in zip(missing, fresh):
                    store[key] = row
                    store.move_to_end(key)
                    while len(store) > maxsize:
                        store.popitem(last=False)
                    rows[key] = row
        return np.stack([rows[key] for key in keys])

    def cache_info() -> Dict[str, int]:
        with lock:
            return {"size": len(store), "maxsize": maxsize, "hits": stats["hits"], "misses": stats["misses"]}

    def cache_clear() -> None:
        with lock:
            store.clear()
            stats["hits"] = stats["misses"] = 0

    cached.cache_info = cache_info
    cached.cache_clear = cache_clear
    return cached
