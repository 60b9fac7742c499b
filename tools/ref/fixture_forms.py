"""The forms some fixtures are written in, shared by their generators here and the tests that
read them (which put this directory on sys.path):

- decode(v): JSON with stand-ins for the Python values JSON cannot carry -- {"$bytes": HEX},
  {"$tuple": [...]}, {"$userdict": [[key, value], ...]}, {"$dict": [[key, value], ...]} (keys of
  any JSON type) -- back to those values (tests/fixtures/lang/cases.jsonl);
- preset_shape(q): a question set's shape without its wording, [[id, type, labels or level count
  or None], ...] (tests/fixtures/surfaces/presets_api.jsonl).
"""
import collections


def decode(v):
    if isinstance(v, list):
        return [decode(x) for x in v]
    if isinstance(v, dict):
        if "$bytes" in v:
            return bytes.fromhex(v["$bytes"])
        if "$tuple" in v:
            return tuple(decode(x) for x in v["$tuple"])
        if "$userdict" in v:
            return collections.UserDict((decode(k), decode(x)) for k, x in v["$userdict"])
        if "$dict" in v:
            return {decode(k): decode(x) for k, x in v["$dict"]}
        return {k: decode(x) for k, x in v.items()}
    return v


def preset_shape(q):
    out = []
    for qid, spec in q.items():
        crit = spec.get("criteria")
        labels = list(crit) if isinstance(crit, dict) else len(crit) if isinstance(crit, list) else None
        out.append([qid, spec["type"], labels])
    return out
