#!/usr/bin/env python3
"""Build the tiny fixture checkpoints in Laya 0.4.15's exact on-disk layout.

    <out>/<name>/rl_agent_config.json
    <out>/<name>/model.safetensors        F16 (modernbert-tiny, as laya's save_checkpoint writes)
                                          or BF16 (mmbert-tiny, to exercise the other dtype)
    <out>/<name>/encoder/config.json      transformers 4.x form (modernbert-tiny) or 5.x
                                          `rope_parameters` form (mmbert-tiny)
    <out>/<name>/tokenizer/               the fixture tokenizer (tests/fixtures/tokenizers/...)
    <out>/<name>/SHA256SUMS               `sha256sum -c` format, every file above

The model is built by laya's own `laya.common.build_model` from the encoder config, so tensor
names and shapes are exactly Laya's state_dict; every parameter is then drawn from one seeded
torch generator, with scales chosen so the decision head gives informative (neither uniform nor
saturated) probabilities. Re-running gives byte-identical files.

Usage: make_checkpoints.py [OUT_ROOT]   (default tests/fixtures/ckpt)
"""
import hashlib
import json
import math
import os
import shutil
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(os.path.dirname(HERE))
TOKENIZERS = os.path.join(REPO, "tests", "fixtures", "tokenizers")

SEED = 20251129

ENGLISH_TEMPERATURE = [1.6369030475616455, 1.2514300346374512, 1.983399510383606]
ENGLISH_BUCKETS = {"choice:3-5": 1.7601518630981445, "choice:6-10": 1.0000158548355103,
                   "score:3-5": 1.2514300346374512, "noul:2": 1.983399510383606,
                   "choice:11+": 0.10058280825614929, "choice:2": 1.9063563346862793}

SPECS = {
    "modernbert-tiny": {
        "tokenizer": "modernbert-mini",
        "dtype": "float16",
        # transformers 4.x form, written by hand: the keys a 4.x `save_pretrained` produced.
        "encoder_config": {
            "architectures": ["ModernBertModel"],
            "attention_bias": False,
            "attention_dropout": 0.0,
            "bos_token_id": 4001,
            "classifier_activation": "gelu",
            "classifier_bias": False,
            "classifier_dropout": 0.0,
            "classifier_pooling": "mean",
            "cls_token_id": 4001,
            "decoder_bias": True,
            "deterministic_flash_attn": False,
            "embedding_dropout": 0.0,
            "eos_token_id": 4002,
            "global_attn_every_n_layers": 3,
            "global_rope_theta": 160000.0,
            "gradient_checkpointing": False,
            "hidden_activation": "gelu",
            "hidden_size": 128,
            "initializer_cutoff_factor": 2.0,
            "initializer_range": 0.02,
            "intermediate_size": 192,
            "layer_norm_eps": 1e-05,
            "local_attention": 128,
            "local_rope_theta": 10000.0,
            "max_position_embeddings": 8192,
            "mlp_bias": False,
            "mlp_dropout": 0.0,
            "model_type": "modernbert",
            "norm_bias": False,
            "norm_eps": 1e-05,
            "num_attention_heads": 2,
            "num_hidden_layers": 6,
            "pad_token_id": 4003,
            "position_embedding_type": "absolute",
            "reference_compile": None,
            "repad_logits_with_grad": False,
            "sep_token_id": 4002,
            "sparse_pred_ignore_index": -100,
            "sparse_prediction": False,
            "torch_dtype": "float32",
            "transformers_version": "4.48.3",
            # len(tokenizer) is 4088; padded to a multiple of 64 like ModernBERT's 50368.
            "vocab_size": 4096,
        },
        "rl_agent_config": {
            "encoder": "answerdotai/ModernBERT-large",
            "head_layers": 2,
            "max_len": 512,
            "head_max_len": 192,
            "max_prefixes": 6,
            "act_costs": {"escalate": 0.5},
            "cost_wrong_act": 3.0,
            "amp_dtype": "bf16",
            "temperature": ENGLISH_TEMPERATURE,
            "temperature_by_options": ENGLISH_BUCKETS,
        },
    },
    "mmbert-tiny": {
        "tokenizer": "mmbert-mini",
        "dtype": "bfloat16",
        # transformers 5.x form: built through ModernBertConfig and saved by save_pretrained.
        "encoder_kwargs": {
            "architectures": ["ModernBertModel"],
            "vocab_size": 8000,
            "hidden_size": 192,
            "intermediate_size": 256,
            "num_hidden_layers": 4,
            "num_attention_heads": 3,
            "hidden_activation": "gelu",
            "max_position_embeddings": 8192,
            "norm_eps": 1e-05,
            "norm_bias": False,
            "global_attn_every_n_layers": 3,
            "local_attention": 128,
            "rope_parameters": {"full_attention": {"rope_theta": 160000.0, "rope_type": "default"},
                                "sliding_attention": {"rope_theta": 160000.0, "rope_type": "default"}},
            # mmBERT's own config says cls=sep=1 (the <eos>); Laya takes the roles from
            # tokenizer_config.json (cls=<bos>=2), so a port must too.
            "pad_token_id": 0,
            "bos_token_id": 2,
            "eos_token_id": 1,
            "cls_token_id": 1,
            "sep_token_id": 1,
        },
        "rl_agent_config": {
            "encoder": "jhu-clsp/mmBERT-base",
            "head_layers": 2,
            "max_len": 1024,
            "head_max_len": 256,
            "act_costs": {"escalate": 0.5},
            "amp_dtype": "bf16",
            "temperature": [1.0, 1.0, 1.0],
            # Mild custom buckets that the English checkpoint does not have.
            "temperature_by_options": {"score:6-10": 1.35, "choice:11+": 2.5},
        },
    },
}

# Init scales (std of a normal draw) by parameter role; `fan` means gain / sqrt(fan_in).
# The encoder runs at near-unit scale; the scorer's last layer is what sets how peaked the
# option distributions are, and the act head's last layer how far act_probability moves.
INIT = {
    "modernbert-tiny": {"emb": 1.0, "gain": 1.0, "norm": 0.1, "bias": 0.05, "type_emb": 0.5,
                        "scorer_out": 36, "act_out": 1.5},
    "mmbert-tiny": {"emb": 1.0, "gain": 1.0, "norm": 0.1, "bias": 0.05, "type_emb": 0.5,
                    "scorer_out": 24, "act_out": 1.5},
}


def write_json(path, obj, indent=2, sort_keys=False):
    with open(path, "w", encoding="utf-8") as f:
        json.dump(obj, f, indent=indent, sort_keys=sort_keys)
        f.write("\n")


def init_params(model, scales, seed):
    import torch
    g = torch.Generator().manual_seed(seed)
    with torch.no_grad():
        for name, p in model.named_parameters():
            shape = p.shape
            if name.endswith("tok_embeddings.weight"):
                v = torch.randn(shape, generator=g) * scales["emb"]
            elif name.startswith("type_emb."):
                v = torch.randn(shape, generator=g) * scales["type_emb"]
            elif p.dim() == 1 and ("norm" in name) and name.endswith("weight"):
                v = 1.0 + torch.randn(shape, generator=g) * scales["norm"]
            elif p.dim() == 1 and name.endswith("weight"):   # head LayerNorms (norm1/norm2/scorer.0)
                v = 1.0 + torch.randn(shape, generator=g) * scales["norm"]
            elif p.dim() == 1:
                v = torch.randn(shape, generator=g) * scales["bias"]
            else:
                gain = scales["gain"]
                if name == "scorer.3.weight":
                    gain = scales["scorer_out"]
                elif name == "act_head.2.weight":
                    gain = scales["act_out"]
                v = torch.randn(shape, generator=g) * (gain / math.sqrt(shape[-1]))
            p.copy_(v)


def sha256(path):
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for chunk in iter(lambda: f.read(1 << 20), b""):
            h.update(chunk)
    return h.hexdigest()


def build(name, out_root):
    import torch
    from safetensors.torch import save_file
    from laya.common import build_model

    spec = SPECS[name]
    d = os.path.join(out_root, name)
    if os.path.isdir(d):
        shutil.rmtree(d)
    os.makedirs(os.path.join(d, "encoder"))

    # tokenizer/: the fixture files as they are (Laya reads the roles from tokenizer_config.json).
    tok_src = os.path.join(TOKENIZERS, spec["tokenizer"])
    shutil.copytree(tok_src, os.path.join(d, "tokenizer"))

    enc_path = os.path.join(d, "encoder", "config.json")
    if "encoder_config" in spec:
        write_json(enc_path, spec["encoder_config"], sort_keys=True)
    else:
        from transformers import ModernBertConfig
        ModernBertConfig(**spec["encoder_kwargs"]).save_pretrained(os.path.join(d, "encoder"))

    cfg = spec["rl_agent_config"]
    write_json(os.path.join(d, "rl_agent_config.json"), cfg)

    model = build_model(cfg, encoder_dir=os.path.join(d, "encoder"), pretrained=False)
    init_params(model, INIT[name], SEED + sum(map(ord, name)))
    model.temperature.fill_(1.0)
    dtype = getattr(torch, spec["dtype"])
    state = {k: v.detach().to(dtype).cpu().contiguous() for k, v in model.state_dict().items()}
    save_file(state, os.path.join(d, "model.safetensors"), metadata={"format": "pt"})
    os.chmod(os.path.join(d, "model.safetensors"), 0o644)   # safetensors writes it 0600

    files = []
    for root, _, names in os.walk(d):
        for n in names:
            rel = os.path.relpath(os.path.join(root, n), d)
            if rel != "SHA256SUMS":
                files.append(rel)
    with open(os.path.join(d, "SHA256SUMS"), "w") as f:
        for rel in sorted(files):
            f.write("%s  %s\n" % (sha256(os.path.join(d, rel)), rel))
    n_params = sum(p.numel() for p in model.parameters())
    print("%s: %d parameters, %d tensors, %s, model.safetensors %d bytes"
          % (name, n_params, len(state), spec["dtype"], os.path.getsize(os.path.join(d, "model.safetensors"))))
    return d


def check_load(d, expect_warnings):
    """Load through laya.Agent on CPU; return the warnings it raised (must be only the intended ones)."""
    import warnings
    import laya
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        agent = laya.Agent(d, device="cpu")
    msgs = [str(w.message) for w in caught if "laya" in str(w.message).lower()]
    assert len(msgs) == expect_warnings, msgs
    return agent, msgs


def main():
    out_root = sys.argv[1] if len(sys.argv) > 1 else os.path.join(REPO, "tests", "fixtures", "ckpt")
    for name in SPECS:
        d = build(name, out_root)
        _, msgs = check_load(d, 1 if name == "modernbert-tiny" else 0)
        for m in msgs:
            print("  load warning: %s" % m)


if __name__ == "__main__":
    main()
