#!/usr/bin/env python3
"""Write the parity fixtures by running the real laya==0.4.15 package on CPU in fp32.

For each fixture checkpoint (tests/fixtures/ckpt/<ckpt>/):

  tests/fixtures/parity/<ckpt>/cases.jsonl   one request per line and what laya returned for it
  tests/fixtures/parity/<ckpt>/rows.jsonl    the model rows of every non-error case, captured at
                                             DecisionModel.forward in collate order
  tests/fixtures/parity/meta.json            versions, load warnings, warnings raised per case

A case line:
  {"id": str, "api": "predict" | "predict_batch",
   "agent": {"lang_temperatures": <object> | null},
   "request": "<the JSON text python's json.loads parsed before calling laya>",
   "result": <laya's return value>}            or  "error": {"kind": <exception class>, "message": str(e)}

The request object uses laya's keyword names: predict {"state", "questions", "lang"?, "max_len"?,
"head_max_len"?, "min_confidence"?}; predict_batch {"states", "questions", "batch_size"?,
"sort_by_length"?, "lang"?, "max_len"?, "head_max_len"?, "min_confidence"?}.

A rows line: {"id": str, "rows": [{"forward": n, "state": i, "qid": str, "ids": [...],
"markers": [...], "qtype": 0|1|2, "logits": [...], "act_logits": [a0, a1]}]}: `forward` counts
the model calls of the case, `state` indexes the request's states (0 for predict), `logits` are
the raw scorer outputs at the markers (before temperature), `act_logits` the raw act head.

Usage: gen_parity.py [--out DIR] [--ckpt-root DIR]
Deterministic: one torch thread, fixed seeds, PYTHONHASHSEED=0; a re-run writes identical bytes.
"""
import argparse
import json
import os
import sys
import warnings

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import corpus  # noqa: E402
import parity_cases  # noqa: E402

REPO = os.path.dirname(os.path.dirname(HERE))


def dumps(obj):
    return json.dumps(obj, ensure_ascii=False)


class Recorder:
    """Wraps one Agent so every forward pass is recorded with the (state, question) of each row."""

    def __init__(self, agent):
        import laya.agent as agent_mod
        self.agent = agent
        self.agent_mod = agent_mod
        self.rows = []
        self.encoded = []
        self.pending = []
        self.forwards = 0
        self.qids = []
        orig_encode = agent._encode_state

        def encode_state(*a, **kw):
            out = orig_encode(*a, **kw)
            self.encoded.append(out)
            return out

        agent._encode_state = encode_state
        orig_forward = agent.model.forward

        def forward(input_ids, attention_mask, marker_pos, marker_mask, qtype, *a, **kw):
            logits, act = orig_forward(input_ids, attention_mask, marker_pos, marker_mask, qtype, *a, **kw)
            for r in range(input_ids.shape[0]):
                n = int(attention_mask[r].sum())
                k = int(marker_mask[r].sum())
                si, qid = self.pending[r]
                self.rows.append({
                    "forward": self.forwards, "state": si, "qid": qid,
                    "ids": [int(x) for x in input_ids[r, :n]],
                    "markers": [int(x) for x in marker_pos[r, :k]],
                    "qtype": int(qtype[r]),
                    "logits": [float(x) for x in logits[r, :k].float()],
                    "act_logits": [float(x) for x in act[r].float()],
                })
            self.forwards += 1
            return logits, act

        agent.model.forward = forward

    def collate(self, batch, pad_id):
        self.pending = []
        for group in batch:
            si = next(i for i, e in enumerate(self.encoded) if e is group)
            for j in range(len(group)):
                self.pending.append((si, self.qids[j]))
        return self.orig_collate(batch, pad_id)

    def run(self, api, req):
        self.rows, self.encoded, self.forwards = [], [], 0
        qs = req.get("questions")
        self.qids = list(qs.keys()) if isinstance(qs, dict) else []
        kw = {k: req[k] for k in ("lang", "max_len", "head_max_len", "min_confidence") if k in req}
        self.orig_collate = self.agent_mod.collate_items
        self.agent_mod.collate_items = self.collate
        try:
            if api == "predict":
                return self.agent.predict(req["state"], req["questions"], **kw)
            for k in ("batch_size", "sort_by_length"):
                if k in req:
                    kw[k] = req[k]
            return self.agent.predict_batch(req["states"], req["questions"], **kw)
        finally:
            self.agent_mod.collate_items = self.orig_collate


def versions():
    import importlib.metadata as md
    out = {}
    for pkg in ("laya", "torch", "transformers", "tokenizers", "numpy", "safetensors", "faker"):
        try:
            out[pkg] = md.version(pkg)
        except md.PackageNotFoundError:
            out[pkg] = None
    out["python"] = sys.version.split()[0]
    return out


def main():
    corpus.pin_hash_seed()
    ap = argparse.ArgumentParser()
    ap.add_argument("--out", default=os.path.join(REPO, "tests", "fixtures", "parity"))
    ap.add_argument("--ckpt-root", default=os.path.join(REPO, "tests", "fixtures", "ckpt"))
    args = ap.parse_args()

    import torch
    torch.set_num_threads(1)
    torch.manual_seed(0)
    torch.use_deterministic_algorithms(True)
    import laya

    meta = {"generator": "tools/ref/gen_parity.py", "device": "cpu", "precision": "fp32",
            "torch_threads": 1, "versions": versions(), "checkpoints": {}}
    for ckpt in ("modernbert-tiny", "mmbert-tiny"):
        ckpt_dir = os.path.join(args.ckpt_root, ckpt)
        cases = parity_cases.build(ckpt)
        agents, load_warnings = {}, {}
        out_dir = os.path.join(args.out, ckpt)
        os.makedirs(out_dir, exist_ok=True)
        case_warnings = {}
        counts = {"predict": 0, "predict_batch": 0, "errors": 0}
        with open(os.path.join(out_dir, "cases.jsonl"), "w", encoding="utf-8") as fc, \
                open(os.path.join(out_dir, "rows.jsonl"), "w", encoding="utf-8") as fr:
            for case in cases:
                lt = case["agent"]["lang_temperatures"]
                key = dumps(lt)
                if key not in agents:
                    with warnings.catch_warnings(record=True) as caught:
                        warnings.simplefilter("always")
                        agents[key] = Recorder(laya.Agent(ckpt_dir, device="cpu", lang_temperatures=lt))
                    load_warnings[key] = [str(w.message) for w in caught]
                rec = agents[key]
                req = json.loads(case["request"])
                line = {"id": case["id"], "api": case["api"], "agent": case["agent"], "request": case["request"]}
                with warnings.catch_warnings(record=True) as caught:
                    warnings.simplefilter("always")
                    try:
                        line["result"] = rec.run(case["api"], req)
                    except Exception as e:  # every laya failure is part of the fixture
                        line["error"] = {"kind": type(e).__name__, "message": str(e)}
                if caught:
                    case_warnings[case["id"]] = [str(w.message) for w in caught]
                counts[case["api"]] += 1
                if "error" in line:
                    counts["errors"] += 1
                else:
                    fr.write(dumps({"id": case["id"], "rows": rec.rows}) + "\n")
                fc.write(dumps(line) + "\n")
        meta["checkpoints"][ckpt] = {
            "cases": len(cases), "counts": counts,
            "load_warnings": [{"lang_temperatures": json.loads(k), "warnings": v} for k, v in load_warnings.items()],
            "case_warnings": case_warnings,
        }
        print("%s: %d cases (%d predict, %d predict_batch, %d errors)"
              % (ckpt, len(cases), counts["predict"], counts["predict_batch"], counts["errors"]))
    with open(os.path.join(args.out, "meta.json"), "w", encoding="utf-8") as f:
        json.dump(meta, f, ensure_ascii=False, indent=2)
        f.write("\n")


if __name__ == "__main__":
    main()
