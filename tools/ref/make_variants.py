#!/usr/bin/env python3
"""Encoder-architecture variants of the fixture checkpoints, and what the real laya==0.4.15 answers
on them.

A variant is a fixture checkpoint whose encoder/config.json says something laya.c must read
beyond the common ModernBERT layout (its weights and tokenizer are the base checkpoint's, linked):

  modernbert-tiny-layers   transformers 5 `layer_types` with full attention at layers 0, 3 and 4
                           (no global-every-N interval), and a 16-token local window so the
                           pattern changes the answers of every state longer than 8 tokens
  modernbert-tiny-tanh     hidden_activation "gelu_pytorch_tanh" (transformers' GELUTanh: the tanh
                           approximation that gelu_new / gelu_fast / gelu_accurate also compute)
  modernbert-tiny-silu     hidden_activation "silu" (x sigmoid(x); "swish" is the same)
  modernbert-tiny-quick    hidden_activation "quick_gelu" (x sigmoid(1.702 x)), every 12th request
  modernbert-tiny-relu     hidden_activation "relu", every 12th request
  and, every 24th request each (each from its own offset, so that together they answer 11 x 13 or 14
  different requests), the rest of transformers' parameter-free ACT2FN keys:
  modernbert-tiny-gelu10 (gelu_10), -mish, -relu2, -relu6, -leaky (leaky_relu), -hardswish,
  -tanh-act (tanh), -sigmoid, -linear, -laplace, -sqrtsoftplus. The base's pre-activations stay
  within about +-5, so gelu_10's and relu6's clips do not engage here (these two prove the kinds
  are run, on every backend, where the fused paths are not); tests/fixtures/act/values.json
  (make_act_values.py) holds every formula, clips included, to torch's numbers element by element.
The activation variants keep the base's weights (trained with "gelu"), so the answers move
visibly but stay in the range a real checkpoint gives.

For each variant it writes tests/fixtures/ckpt/<variant>/ and, by running laya on every 6th (12th, 24th)
parity request of the base checkpoint (tools/ref/parity_cases.py), the same fixture files as
gen_parity.py: tests/fixtures/parity/<variant>/{cases.jsonl,rows.jsonl,meta.json}.

Usage: make_variants.py [VARIANT...]   (all when none; with the reference venv of tools/ref/setup.sh)
Deterministic like gen_parity.py (one torch thread, PYTHONHASHSEED=0).
"""
import json
import os
import shutil
import sys
import warnings

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import corpus  # noqa: E402
import gen_parity  # noqa: E402
import parity_cases  # noqa: E402

REPO = os.path.dirname(os.path.dirname(HERE))
CKPT = os.path.join(REPO, "tests", "fixtures", "ckpt")
PARITY = os.path.join(REPO, "tests", "fixtures", "parity")
EVERY = 6  # every 6th base parity request: ~50 per variant, seconds to replay


def layers_config(cfg):
    n = cfg["num_hidden_layers"]
    full = {0, 3, 4}
    cfg = dict(cfg)
    cfg.pop("global_attn_every_n_layers", None)
    cfg["layer_types"] = ["full_attention" if i in full else "sliding_attention" for i in range(n)]
    cfg["local_attention"] = 16
    return cfg


def activation_config(name):
    def edit(cfg):
        cfg = dict(cfg)
        cfg["hidden_activation"] = name
        return cfg
    return edit


# name: (base checkpoint, config edit, every n-th base parity request[, from which one: 0 when absent])
VARIANTS = {
    "modernbert-tiny-layers": ("modernbert-tiny", layers_config, EVERY),
    "modernbert-tiny-tanh": ("modernbert-tiny", activation_config("gelu_pytorch_tanh"), EVERY),
    "modernbert-tiny-silu": ("modernbert-tiny", activation_config("silu"), EVERY),
    "modernbert-tiny-quick": ("modernbert-tiny", activation_config("quick_gelu"), 2 * EVERY),
    "modernbert-tiny-relu": ("modernbert-tiny", activation_config("relu"), 2 * EVERY),
    "modernbert-tiny-gelu10": ("modernbert-tiny", activation_config("gelu_10"), 4 * EVERY, 1),
    "modernbert-tiny-mish": ("modernbert-tiny", activation_config("mish"), 4 * EVERY, 3),
    "modernbert-tiny-relu2": ("modernbert-tiny", activation_config("relu2"), 4 * EVERY, 5),
    "modernbert-tiny-relu6": ("modernbert-tiny", activation_config("relu6"), 4 * EVERY, 23),
    "modernbert-tiny-leaky": ("modernbert-tiny", activation_config("leaky_relu"), 4 * EVERY, 9),
    "modernbert-tiny-hardswish": ("modernbert-tiny", activation_config("hardswish"), 4 * EVERY, 11),
    "modernbert-tiny-tanh-act": ("modernbert-tiny", activation_config("tanh"), 4 * EVERY, 13),
    "modernbert-tiny-sigmoid": ("modernbert-tiny", activation_config("sigmoid"), 4 * EVERY, 15),
    "modernbert-tiny-linear": ("modernbert-tiny", activation_config("linear"), 4 * EVERY, 17),
    "modernbert-tiny-laplace": ("modernbert-tiny", activation_config("laplace"), 4 * EVERY, 19),
    "modernbert-tiny-sqrtsoftplus": ("modernbert-tiny", activation_config("sqrtsoftplus"), 4 * EVERY, 21),
}


def make_checkpoint(name, base, edit):
    src, d = os.path.join(CKPT, base), os.path.join(CKPT, name)
    if os.path.lexists(d):
        shutil.rmtree(d)
    os.makedirs(os.path.join(d, "encoder"))
    # the weights, head config and tokenizer are the base's: relative links, no second copy
    for rel in ("model.safetensors", "rl_agent_config.json", "tokenizer"):
        os.symlink(os.path.join("..", base, rel), os.path.join(d, rel))
    with open(os.path.join(src, "encoder", "config.json")) as f:
        cfg = edit(json.load(f))
    with open(os.path.join(d, "encoder", "config.json"), "w") as f:
        json.dump(cfg, f, indent=2)
        f.write("\n")
    return d


def main():
    corpus.pin_hash_seed()
    import torch
    torch.set_num_threads(1)
    torch.manual_seed(0)
    torch.use_deterministic_algorithms(True)
    import laya

    names = sys.argv[1:] or list(VARIANTS)
    for name in names:
        if name not in VARIANTS:
            sys.exit("make_variants.py: unknown variant %r (known: %s)" % (name, ", ".join(VARIANTS)))
    for name in names:
        base, edit, every, offset = (VARIANTS[name] + (0,))[:4]
        d = make_checkpoint(name, base, edit)
        cases = parity_cases.build(base)[offset::every]
        out = os.path.join(PARITY, name)
        os.makedirs(out, exist_ok=True)
        agents = {}
        meta = {"generator": "tools/ref/make_variants.py", "base": base, "every": every, "device": "cpu",
                "precision": "fp32", "torch_threads": 1, "versions": gen_parity.versions(),
                "load_warnings": [], "case_warnings": {}}
        if offset:
            meta["offset"] = offset
        n_err = 0
        with open(os.path.join(out, "cases.jsonl"), "w", encoding="utf-8") as fc, \
                open(os.path.join(out, "rows.jsonl"), "w", encoding="utf-8") as fr:
            for case in cases:
                lt = case["agent"]["lang_temperatures"]
                key = gen_parity.dumps(lt)
                if key not in agents:
                    with warnings.catch_warnings(record=True) as caught:
                        warnings.simplefilter("always")
                        agents[key] = gen_parity.Recorder(laya.Agent(d, device="cpu", lang_temperatures=lt))
                    meta["load_warnings"].append({"lang_temperatures": lt,
                                                  "warnings": [str(w.message) for w in caught]})
                rec = agents[key]
                line = {"id": case["id"], "api": case["api"], "agent": case["agent"], "request": case["request"]}
                with warnings.catch_warnings(record=True) as caught:
                    warnings.simplefilter("always")
                    try:
                        line["result"] = rec.run(case["api"], json.loads(case["request"]))
                    except Exception as e:  # every laya failure is part of the fixture
                        line["error"] = {"kind": type(e).__name__, "message": str(e)}
                if caught:
                    meta["case_warnings"][case["id"]] = [str(w.message) for w in caught]
                if "error" in line:
                    n_err += 1
                else:
                    fr.write(gen_parity.dumps({"id": case["id"], "rows": rec.rows}) + "\n")
                fc.write(gen_parity.dumps(line) + "\n")
        with open(os.path.join(out, "meta.json"), "w", encoding="utf-8") as f:
            json.dump(meta, f, ensure_ascii=False, indent=2)
            f.write("\n")
        print("%s: %d cases (%d errors)" % (name, len(cases), n_err))


if __name__ == "__main__":
    main()
