#!/usr/bin/env python3
"""Write the shortlist parity fixtures by running the real laya==0.4.15 package on CPU in fp32.

For each fixture checkpoint (tests/fixtures/ckpt/<ckpt>/):

  tests/fixtures/shortlist/<ckpt>/embed.jsonl   texts and the vectors laya.shortlist.embed_fn_from_agent
                                                returns for them (mean-pooled encoder states, float32)
  tests/fixtures/shortlist/<ckpt>/cases.jsonl   many-label requests and what
                                                laya.shortlist.predict_shortlist returned for them
  tests/fixtures/shortlist/meta.json            versions, counts, warnings raised per case

An embed line: {"id": str, "max_length": int, "batch_size": int, "texts": [str], "vectors": [[float]]}.

A case line:
  {"id": str, "request": "<JSON text: state, questions, k?, and predict's keyword arguments>",
   "result": <predict_shortlist's return value>, "sims": {qid: [signed cosine per label, criteria order]},
   "warnings": [str]}
  or "error": {"kind": <exception class>, "message": str(e)} instead of "result" / "sims".

`sims` holds every label's cosine for each choice that was ranked (not passed through), computed
with laya.shortlist's own helpers from the same embedder, so a replay can check the ranking, not
only the kept labels. The embedder is embed_fn_from_agent(agent) with its defaults
(max_length=512, batch_size=32), as laya's MCP server builds it.

Usage: gen_shortlist.py [--out DIR] [--ckpt-root DIR]
Deterministic: one torch thread, fixed seeds, PYTHONHASHSEED=0; a re-run writes identical bytes.
"""
import argparse
import json
import os
import random
import sys
import warnings

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import corpus  # noqa: E402

REPO = os.path.dirname(os.path.dirname(HERE))
LOCALES = ("en_US", "de_DE", "fr_FR", "es_ES", "it_IT", "pt_BR", "nl_NL", "pl_PL", "ja_JP", "zh_CN", "ru_RU", "tr_TR")


def dumps(obj):
    return json.dumps(obj, ensure_ascii=False)


def pools(seed=20261202):
    """Distinct label names and descriptions drawn from Faker (jobs, companies, phrases)."""
    import faker
    names, descs, states = [], [], []
    seen = set()
    for loc in LOCALES:
        fk = faker.Faker(loc)
        fk.seed_instance(seed)
        for _ in range(220):
            for s in (fk.job(), fk.company()):
                s = " ".join(s.split())
                if s and s not in seen and len(s) < 60:
                    seen.add(s)
                    names.append(s)
            descs.append(" ".join(fk.catch_phrase().split()))
            states.append(" ".join(fk.paragraph(nb_sentences=3).split()))
    return names, descs, states


def build_cases(ckpt, names, descs, states):
    rnd = random.Random("shortlist-" + ckpt)
    cases = []

    def labels(n):
        return rnd.sample(names, n)

    def choice(n, style, instr="Which label fits the message best?"):
        ls = labels(n)
        if style == "dict":
            crit = {lab: rnd.choice(descs) for lab in ls}
        elif style == "mixed":  # descriptions, None and "" (rendered as the bare label)
            crit = {lab: rnd.choice([rnd.choice(descs), None, ""]) for lab in ls}
        else:
            crit = ls
        q = {"type": "choice", "criteria": crit}
        if instr is not None:
            q["instructions"] = instr
        return q

    def state():
        if rnd.random() < 0.3:
            return {"subject": rnd.choice(names), "body": rnd.choice(states), "priority": rnd.randint(1, 5)}
        return rnd.choice(states)

    def add(cid, req):
        cases.append({"id": cid, "request": dumps(req)})

    # the main grid: label counts x k x criteria styles
    sizes = (25, 40, 60, 100, 150, 250, 400, 1000)
    ks = (1, 3, 5, 10, 20, None)
    styles = ("dict", "list", "mixed")
    i = 0
    for n in sizes:
        for k in ks:
            if n == 1000 and k not in (5, None):
                continue
            style = styles[i % 3]
            req = {"state": state(), "questions": {"intent": choice(n, style)}}
            if k is not None:
                req["k"] = k
            add("grid-%d-%s-%s" % (n, k if k is not None else "default", style), req)
            i += 1
    # k at and past the label count: passed through, no embedding
    add("passthrough-k-eq-n", {"state": state(), "questions": {"q": choice(30, "dict")}, "k": 30})
    add("passthrough-k-gt-n", {"state": state(), "questions": {"q": choice(12, "list")}, "k": 50})
    add("passthrough-default-k", {"state": state(), "questions": {"q": choice(20, "mixed")}})
    add("narrow-k-eq-n-minus-1", {"state": state(), "questions": {"q": choice(31, "dict")}, "k": 30})
    # several questions: only choices are ranked, the rest pass unchanged
    add("multi-choice-noul-score", {
        "state": state(),
        "questions": {
            "topic": choice(80, "dict"),
            "urgent": {"type": "noul", "instructions": "Is this urgent?"},
            "tone": {"type": "score", "instructions": "How polite is it?", "criteria": ["rude", "neutral", "polite"]},
            "small": choice(4, "dict", "Which of these few?"),
            "dept": choice(120, "list", "Which department should handle it?"),
        }, "k": 6})
    # instructions: missing, empty, non-ASCII
    add("no-instructions", {"state": state(), "questions": {"q": choice(70, "dict", None)}, "k": 8})
    add("empty-instructions", {"state": state(), "questions": {"q": choice(70, "list", "")}, "k": 8})
    add("unicode-instructions", {"state": state(), "questions": {"q": choice(70, "dict", "Welche Abteilung? 部門はどれ?")}, "k": 8})
    # state shapes: object, list, number, a long one (past 512 tokens), one holding the mask token
    add("state-object", {"state": {"a": [1, 2.5, None, True], "b": {"c": "ü"}}, "questions": {"q": choice(50, "dict")}, "k": 7})
    add("state-list", {"state": ["one", "two", 3], "questions": {"q": choice(50, "list")}, "k": 7})
    add("state-number", {"state": 42, "questions": {"q": choice(50, "mixed")}, "k": 7})
    add("state-long", {"state": " ".join(rnd.sample(states, 40)), "questions": {"q": choice(90, "dict")}, "k": 9})
    mask = "[MASK]" if ckpt.startswith("modernbert") else "<mask>"
    add("state-mask-token", {"state": "Please route %s this %s ticket" % (mask, mask), "questions": {"q": choice(60, "dict")}, "k": 5})
    # option_order: dropped (with a warning) when the question narrows, kept when it passes through
    q = choice(40, "dict")
    q["option_order"] = list(reversed(range(40)))
    add("option-order-narrowed", {"state": state(), "questions": {"q": q}, "k": 6})
    q = choice(6, "dict")
    q["option_order"] = [5, 4, 3, 2, 1, 0]
    add("option-order-passthrough", {"state": state(), "questions": {"q": q}, "k": 6})
    # predict's keyword arguments go to the decision pass
    add("kwargs-head-max-len", {"state": state(), "questions": {"q": choice(200, "dict")}, "k": 25, "head_max_len": 320})
    add("kwargs-max-len", {"state": state(), "questions": {"q": choice(100, "list")}, "k": 10, "max_len": 256})
    add("kwargs-min-confidence", {"state": state(), "questions": {"q": choice(100, "dict")}, "k": 4, "min_confidence": 0.4})
    add("kwargs-lang", {"state": state(), "questions": {"q": choice(100, "mixed")}, "k": 4, "lang": "de"})
    # structured criteria values render as JSON
    crit = {lab: {"desc": rnd.choice(descs), "n": j} for j, lab in enumerate(labels(45))}
    add("criteria-structured", {"state": state(), "questions": {"q": {"type": "choice", "instructions": "Pick one.", "criteria": crit}}, "k": 5})
    # ties: two labels whose option texts render alike embed alike; the earlier one ranks first
    base = labels(8)
    crit = {"%s: %s" % (base[0], base[1]): None, base[0]: base[1]}
    for lab in base[2:]:
        crit[lab] = rnd.choice(descs)
    for kk in (1, 2, 3, 7):
        add("tie-rendered-alike-k%d" % kk, {"state": state(), "questions": {"q": {"type": "choice", "instructions": "Pick.", "criteria": crit}}, "k": kk})
    # errors laya raises before or after the ranking
    ok = choice(30, "dict")
    add("error-k-zero", {"state": state(), "questions": {"q": ok}, "k": 0})
    add("error-k-bool", {"state": state(), "questions": {"q": ok}, "k": True})
    add("error-k-float", {"state": state(), "questions": {"q": ok}, "k": 2.0})
    add("error-k-string", {"state": state(), "questions": {"q": ok}, "k": "3"})
    add("error-questions-list", {"state": state(), "questions": [ok], "k": 3})
    add("error-no-criteria", {"state": state(), "questions": {"q": {"type": "choice", "instructions": "x"}}, "k": 3})
    add("error-empty-criteria", {"state": state(), "questions": {"q": {"type": "choice", "instructions": "x", "criteria": {}}}, "k": 3})
    add("error-criteria-string", {"state": state(), "questions": {"q": {"type": "choice", "instructions": "x", "criteria": "abc"}}, "k": 3})
    add("error-duplicate-label", {"state": state(), "questions": {"q": {"type": "choice", "instructions": "x", "criteria": ["a", "b", "a"]}}, "k": 1})
    # the state `laya TEXT` builds ({"request": text}), for the CLI's --shortlist-k test
    for j, (n, k) in enumerate(((30, 3), (80, 5), (150, 10), (400, 20), (1000, 8), (60, 2))):
        text = " ".join(rnd.choice(states).split()[:25])
        add("cli-%d-%d" % (n, k), {"state": {"request": text}, "questions": {"intent": choice(n, ("dict", "list", "mixed")[j % 3])}, "k": k})
    return cases


def embed_texts(ckpt, names, descs, states):
    rnd = random.Random("embed-" + ckpt)
    mask = "[MASK]" if ckpt.startswith("modernbert") else "<mask>"
    texts = ["", "a", "Hello, world!", "  spaced   out  ", "naïve café 東京 😀", mask, "x %s y" % mask,
             " ".join(rnd.sample(states, 30)),  # past 512 tokens: truncated
             json.dumps({"k": "v", "n": 1}, ensure_ascii=False), "line one\nline two\ttab"]
    texts += rnd.sample(names, 20) + rnd.sample(descs, 10) + rnd.sample(states, 6)
    texts.append(texts[2])  # a repeated text
    return texts


def run_case(shortlist, agent, embed_fn, req):
    req = dict(req)
    state = req.pop("state")
    questions = req.pop("questions")
    k = req.pop("k", shortlist.DEFAULT_SHORTLIST_K)
    result = shortlist.predict_shortlist(agent, state, questions, embed_fn, k, **req)
    sims = {}
    for qid, meta in result["shortlist"].items():
        if meta["passthrough"]:
            continue
        qdef = questions[qid]
        items = shortlist._criteria_items(qdef["criteria"])
        query = shortlist._query_text(state, qdef.get("instructions"))
        matrix = shortlist._embeddings(embed_fn, [query] + shortlist._option_texts(items))
        sims[qid] = [float(x) for x in shortlist._cosine(matrix[0], matrix[1:])]
    return result, sims


def main():
    corpus.pin_hash_seed()
    ap = argparse.ArgumentParser()
    ap.add_argument("--out", default=os.path.join(REPO, "tests", "fixtures", "shortlist"))
    ap.add_argument("--ckpt-root", default=os.path.join(REPO, "tests", "fixtures", "ckpt"))
    args = ap.parse_args()

    import torch
    torch.set_num_threads(1)
    torch.manual_seed(0)
    torch.use_deterministic_algorithms(True)
    import laya
    from laya import shortlist

    names, descs, states = pools()
    meta = {"generator": "tools/ref/gen_shortlist.py", "device": "cpu", "precision": "fp32", "torch_threads": 1,
            "embedder": "laya.shortlist.embed_fn_from_agent(agent) (max_length=512, batch_size=32)",
            "default_k": shortlist.DEFAULT_SHORTLIST_K, "versions": {}, "checkpoints": {}}
    import importlib.metadata as md
    for pkg in ("laya", "torch", "transformers", "tokenizers", "numpy", "faker"):
        meta["versions"][pkg] = md.version(pkg)
    meta["versions"]["python"] = sys.version.split()[0]
    for ckpt in ("modernbert-tiny", "mmbert-tiny"):
        out_dir = os.path.join(args.out, ckpt)
        os.makedirs(out_dir, exist_ok=True)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            agent = laya.Agent(os.path.join(args.ckpt_root, ckpt), device="cpu")
        embed_fn = shortlist.embed_fn_from_agent(agent)
        texts = embed_texts(ckpt, names, descs, states)
        vecs = embed_fn(texts)
        with open(os.path.join(out_dir, "embed.jsonl"), "w", encoding="utf-8") as f:
            f.write(dumps({"id": "texts", "max_length": 512, "batch_size": 32, "texts": texts,
                           "vectors": [[float(x) for x in row] for row in vecs]}) + "\n")
            short = shortlist.embed_fn_from_agent(agent, max_length=8, batch_size=3)
            f.write(dumps({"id": "max-length-8", "max_length": 8, "batch_size": 3, "texts": texts[:12],
                           "vectors": [[float(x) for x in row] for row in short(texts[:12])]}) + "\n")
        counts = {"cases": 0, "errors": 0, "ranked_questions": 0, "labels_max": 0}
        case_warnings = {}
        with open(os.path.join(out_dir, "cases.jsonl"), "w", encoding="utf-8") as f:
            for case in build_cases(ckpt, names, descs, states):
                req = json.loads(case["request"])
                line = dict(case)
                with warnings.catch_warnings(record=True) as caught:
                    warnings.simplefilter("always")
                    try:
                        line["result"], line["sims"] = run_case(shortlist, agent, embed_fn, req)
                        counts["ranked_questions"] += len(line["sims"])
                        for s in line["sims"].values():
                            counts["labels_max"] = max(counts["labels_max"], len(s))
                    except Exception as e:  # every laya failure is part of the fixture
                        line["error"] = {"kind": type(e).__name__, "message": str(e)}
                        counts["errors"] += 1
                line["warnings"] = [str(w.message) for w in caught if issubclass(w.category, RuntimeWarning)]
                if line["warnings"]:
                    case_warnings[case["id"]] = line["warnings"]
                counts["cases"] += 1
                f.write(dumps(line) + "\n")
        meta["checkpoints"][ckpt] = {"counts": counts, "case_warnings": case_warnings}
        print("%s: %s" % (ckpt, counts))
    with open(os.path.join(args.out, "meta.json"), "w", encoding="utf-8") as f:
        json.dump(meta, f, ensure_ascii=False, indent=2)
        f.write("\n")


if __name__ == "__main__":
    main()
