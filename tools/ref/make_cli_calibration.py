"""Parity fixture for `laya --calibration FILE` / `--lang-temperatures`: answers of the real
laya==0.4.15 on a tiny checkpoint with a calibration payload (and per-language temperatures)
applied, and the warning Laya gives for a payload fitted for another checkpoint.

    /work/refvenv/bin/python tools/ref/make_cli_calibration.py tests/fixtures/ckpt/modernbert-tiny \
        tests/fixtures/surfaces/cli_calibration.json
"""
import json
import sys
import tempfile
import warnings

import laya

ck, out = sys.argv[1], sys.argv[2]
cfg = json.load(open(ck + "/rl_agent_config.json"))
identity = {k: v for k, v in cfg.items() if k not in ("temperature", "temperature_by_options")}
payload = {"version": 2, "temperature": [2.5, 1.7, 0.6], "temperature_by_options": {"choice:3-5": 3.0},
           "model_id_or_path": "someone/another-checkpoint", "subfolder": None, "config": identity}
lang_temps = {"de": {"temperature": [0.7, 2.0, 3.0]}}
questions = {
    "urgent": {"type": "noul", "instructions": "Is this urgent?"},
    "topic": {"type": "choice", "instructions": "What is it about?",
              "criteria": {"billing": "money, invoices", "tech": "bugs, errors", "other": "anything else"}},
    "pair": {"type": "choice", "instructions": "Which?", "criteria": {"a": "first", "b": "second"}},
    "level": {"type": "score", "instructions": "How severe?", "criteria": ["none", "some", "high"]},
}
states = [{"request": "I was charged twice for my subscription"},
          {"request": "The app crashes when I open settings", "channel": "email"},
          "plain text state",
          [{"role": "user", "content": "hello"}, {"role": "assistant", "content": "hi"}]]
with tempfile.NamedTemporaryFile("w", suffix=".json", delete=False) as f:
    json.dump(payload, f)
    cal_path = f.name
with warnings.catch_warnings(record=True) as caught:
    warnings.simplefilter("always")
    agent = laya.Agent(ck, device="cpu", calibration=cal_path)
identity_warnings = [str(w.message) for w in caught if "calibration was fitted" in str(w.message)]
plain = laya.Agent(ck, device="cpu")
de = laya.Agent(ck, device="cpu", lang_temperatures=lang_temps)
errors = {}
for kw in ({"max_len": "100"}, {"head_max_len": "100"}, {"max_len": [1]}):
    try:
        plain.predict(states[1], questions, **kw)
    except Exception as e:  # the message Laya's CLI would print
        errors[json.dumps(kw)] = str(e)
json.dump({
    "errors": errors,
    "calibration": payload,
    "lang_temperatures": lang_temps,
    "questions": questions,
    "states": states,
    "identity_warnings": identity_warnings,
    "calibrated": [agent.predict(s, questions) for s in states],
    "plain": [plain.predict(s, questions) for s in states],
    "lang_de": [de.predict(s, questions, lang="de") for s in states],
}, open(out, "w"), indent=1, ensure_ascii=False)
print("wrote", out)
