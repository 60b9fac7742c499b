"""Laya's DecisionModel in PyTorch, for the CUDA benchmark: build with random weights, save in
Laya's checkpoint layout, load, make padded batches the way Laya collates them.

Uses the real `laya` package (laya==0.4.15, carried as a wheel to the GPU machine) for the
DecisionModel class, with transformers' ModernBertModel as the encoder, exactly as Laya builds it.
"""
import json
import math
import os

import torch
from transformers import ModernBertConfig, ModernBertModel

SHAPES = {
    # hidden, layers, heads, intermediate, vocab, local theta (global is 160000 for both)
    "large": (1024, 28, 16, 2624, 50368, 10000.0),
    "mmbert": (768, 22, 12, 1152, 256000, 160000.0),
    "tiny": (128, 4, 2, 192, 300, 10000.0),  # for checking the scripts on a CPU
}


def encoder_config(name):
    d, n_layers, heads, inter, vocab, local_theta = SHAPES[name]
    rope = {
        "full_attention": {"rope_theta": 160000.0, "rope_type": "default"},
        "sliding_attention": {"rope_theta": local_theta, "rope_type": "default"},
    }
    ids = dict(pad_token_id=0, bos_token_id=2, eos_token_id=1, cls_token_id=2, sep_token_id=1)
    return ModernBertConfig(hidden_size=d, num_hidden_layers=n_layers, num_attention_heads=heads,
                            intermediate_size=inter, vocab_size=vocab, global_attn_every_n_layers=3,
                            local_attention=128, norm_eps=1e-5, norm_bias=False, rope_parameters=rope,
                            attn_implementation="sdpa", **ids)


def decision_model(cfg, no_init=False):
    from laya.common import DecisionModel
    enc = ModernBertModel(cfg)
    return DecisionModel(enc, head_layers=2, n_act=2, no_init=no_init)


@torch.no_grad()
def randomize(model, seed=1):
    """Weights on the scale of a trained model (unit-variance activations), not HF's 0.02 init:
    small weights would make every probability ~uniform and hide numerical differences."""
    g = torch.Generator(device="cpu").manual_seed(seed)
    for name, p in model.named_parameters():
        if p.dim() == 2 and "emb" not in name:
            v = torch.randn(p.shape, generator=g) / math.sqrt(p.shape[1])
        elif p.dim() == 2:
            v = torch.randn(p.shape, generator=g)
        elif name.endswith("bias"):
            v = torch.randn(p.shape, generator=g) * 0.02
        else:  # LayerNorm weights
            v = 1.0 + 0.25 * (torch.rand(p.shape, generator=g) * 2 - 1)
        p.copy_(v.to(p.device, p.dtype))


def save_checkpoint(model, cfg, out):
    from safetensors.torch import save_file
    os.makedirs(os.path.join(out, "encoder"), exist_ok=True)
    cfg.save_pretrained(os.path.join(out, "encoder"))
    sd = {k: v.detach().half().contiguous().cpu() for k, v in model.state_dict().items()}
    save_file(sd, os.path.join(out, "model.safetensors"))
    with open(os.path.join(out, "rl_agent_config.json"), "w") as f:
        json.dump({"encoder": "encoder", "head_layers": 2, "act_costs": {"escalate": 0.5}}, f)


def load_checkpoint(path, device="cuda"):
    from safetensors.torch import load_file
    cfg = ModernBertConfig.from_pretrained(os.path.join(path, "encoder"))
    cfg._attn_implementation = "sdpa"
    with torch.device(device):
        model = decision_model(cfg, no_init=True)
    sd = load_file(os.path.join(path, "model.safetensors"), device=device)
    model.load_state_dict({k: v.float() for k, v in sd.items()}, strict=True)
    return model.to(device).eval(), cfg


def lengths_for(shape):
    if shape.startswith("mixed"):
        n = int(shape[5:])
        return [100 + (412 * i) // (n - 1) for i in range(n)]
    r, l = shape.split("x")
    return [int(l)] * int(r)


def padded_batch(lens, vocab, device="cuda", markers=4, seed=1234):
    """Right-padded like Laya's collate_items: ids, mask, marker positions, marker mask, qtype."""
    g = torch.Generator(device="cpu").manual_seed(seed)
    n, L = len(lens), max(lens)
    ids = torch.zeros(n, L, dtype=torch.long)
    mask = torch.zeros(n, L, dtype=torch.long)
    mpos = torch.zeros(n, markers, dtype=torch.long)
    for i, l in enumerate(lens):
        ids[i, :l] = torch.randint(0, vocab, (l,), generator=g)
        mask[i, :l] = 1
        for j in range(markers):
            mpos[i, j] = 1 + j * (l - 2) // markers
    mmask = torch.ones(n, markers, dtype=torch.bool)
    qtype = torch.arange(n) % 3
    return [t.to(device) for t in (ids, mask, mpos, mmask, qtype)]
