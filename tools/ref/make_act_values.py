#!/usr/bin/env python3
"""What every transformers ACT2FN activation computes in fp32 on the CPU, element by element.

Writes tests/fixtures/act/values.json:

  {"generator": ..., "versions": {...}, "torch_threads": 1,
   "inputs": [x, ...],                                   fp32 values, as the shortest decimal
   "outputs": {"<ACT2FN key>": [act(x), ...], ...},      each key's module applied to the inputs
   "learnable": {"<key>": ["<parameter or buffer name>", ...]}}

The inputs cover where the formulas differ: a 0.125 grid over [-12, 12] (every clip point:
-3, 0, 3, 6, 10 exactly), the fp32 neighbours of those points and of laplace's mu, +-0, tiny and
large magnitudes (exp over- and underflow), and 64 pseudo-random N(0, 3) values. Keys whose module
carries parameters or buffers (prelu, xielu) get no outputs: what they compute depends on the
checkpoint, and laya.c refuses them (docs/engine.md, Known limits); their state names are listed.

tests/cpu (cpu/act_values) checks the reference backend's and every CPU kernel table's GeGLU
activation against these numbers.

Usage: make_act_values.py   (with the reference venv of tools/ref/setup.sh; deterministic)
"""
import json
import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import gen_parity  # noqa: E402

REPO = os.path.dirname(os.path.dirname(HERE))
OUT = os.path.join(REPO, "tests", "fixtures", "act", "values.json")


def f32(v):
    import numpy as np
    return float(np.float32(v))


def inputs():
    import numpy as np
    xs = [i / 8.0 for i in range(-96, 97)]
    for p in (-10.0, -6.0, -3.0, 0.0, 3.0, 6.0, 10.0, 0.707107, 20.0, -20.0):
        x = np.float32(p)
        xs += [float(np.nextafter(x, np.float32(-np.inf))), float(x), float(np.nextafter(x, np.float32(np.inf)))]
    xs += [-0.0, 1e-30, -1e-30, 1e-8, -1e-8, 30.0, -30.0, 50.0, -50.0, 88.0, -88.0, 89.0, -89.0, 100.0, -100.0]
    rng = np.random.default_rng(0)
    xs += [float(v) for v in rng.normal(0.0, 3.0, 64).astype(np.float32)]
    out, seen = [], set()
    for x in xs:
        x = f32(x)
        key = (x, str(x))  # keeps -0.0 apart from 0.0
        if key not in seen:
            seen.add(key)
            out.append(x)
    return out


def main():
    import torch
    from transformers.activations import ACT2CLS, ACT2FN
    torch.set_num_threads(1)
    xs = inputs()
    t = torch.tensor(xs, dtype=torch.float32)
    outputs, learnable = {}, {}
    for key in ACT2CLS:
        mod = ACT2FN[key]
        state = [n for n, _ in mod.named_parameters()] + [n for n, _ in mod.named_buffers()]
        if state:
            learnable[key] = state
            continue
        with torch.no_grad():
            y = mod(t.clone())
        assert y.dtype == torch.float32, key
        outputs[key] = [float(v) for v in y.tolist()]
    doc = {"generator": "tools/ref/make_act_values.py", "versions": gen_parity.versions(), "torch_threads": 1,
           "inputs": xs, "outputs": outputs, "learnable": learnable}
    os.makedirs(os.path.dirname(OUT), exist_ok=True)
    with open(OUT, "w", encoding="utf-8") as f:
        # repr of a Python float is the shortest decimal that reads back as the same double, and
        # these doubles are fp32 values: a C reader's strtod + (float) gets the same fp32 bits
        f.write(json.dumps(doc, separators=(",", ":")) + "\n")
    print("%s: %d inputs, %d activations (%s learnable: no outputs)" %
          (os.path.relpath(OUT, REPO), len(xs), len(outputs), ", ".join(learnable)))


if __name__ == "__main__":
    main()
