"""Record the real `laya` 0.4.15 command answering through its Router, offline, from a Hugging
Face cache that holds the tiny checkpoints under the real checkpoint names.

    /opt/layaref/bin/python tools/router/make_cli_predict_fixtures.py tests/fixtures/surfaces

The cache (built again by tests/cli/run_cli_predict.py from tests/fixtures/ckpt, with the same
layout and commit) maps english -> modernbert-tiny at the bundle repo's root, multilingual ->
mmbert-tiny in its `multilingual` subfolder, typed-decisions -> modernbert-tiny in
`typed-decisions`. HF_HUB_OFFLINE=1: nothing is downloaded. Only --questions cases are parity
cases (laya.c's presets are worded differently from Laya's, so they answer differently).
"""
import json
import os
import shutil
import subprocess
import sys
import tempfile

ROOT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..")
LAYA = os.path.join(os.path.dirname(sys.executable), "laya")
COMMIT = "c0ffee00c0ffee00c0ffee00c0ffee00c0ffee00"
LAYOUT = {"": "modernbert-tiny", "multilingual": "mmbert-tiny", "typed-decisions": "modernbert-tiny"}


def build_cache(home):
    """huggingface_hub's layout: blobs, refs/main, snapshots/<commit>/... (plain copies here)."""
    repo = os.path.join(home, "hub", "models--convaiinnovations--laya")
    os.makedirs(os.path.join(repo, "refs"))
    with open(os.path.join(repo, "refs", "main"), "w") as fh:
        fh.write(COMMIT)
    snap = os.path.join(repo, "snapshots", COMMIT)
    for sub, ck in LAYOUT.items():
        src = os.path.join(ROOT, "tests", "fixtures", "ckpt", ck)
        dst = os.path.join(snap, sub) if sub else snap
        for name in ("rl_agent_config.json", "model.safetensors", "encoder", "tokenizer"):
            s, d = os.path.join(src, name), os.path.join(dst, name)
            os.makedirs(os.path.dirname(d), exist_ok=True)
            if os.path.isdir(s):
                shutil.copytree(s, d)
            else:
                shutil.copy(s, d)


QS = {"intent": {"type": "choice", "instructions": "What does `request` want?",
                 "criteria": {"refund": "money back", "help": "technical help", "other": None}},
      "urgent": {"type": "noul", "instructions": "Is `request` urgent?"},
      "anger": {"type": "score", "instructions": "How angry is `request`?",
                "criteria": ["calm", "cross", "furious"]}}
FILES = {
    "qs.json": json.dumps(QS),
    "qs_msg.json": json.dumps({"state_key": "message", "questions": {"urgent": QS["urgent"]}}),
    "requests.txt": "I was charged twice, please refund\nMein Paket ist nicht angekommen, bitte helfen Sie mir\n"
                    "東京の注文がまだ届きません\n",
}
CASES = [
    ["I was charged twice, please refund me", "--questions", "qs.json"],
    ["I was charged twice, please refund me", "--questions", "qs.json", "--json"],
    ["Mein Paket ist nicht angekommen, bitte helfen Sie mir", "--questions", "qs.json"],
    ["Mein Paket ist nicht angekommen", "--questions", "qs.json", "--json", "--model", "en"],
    ["My parcel never arrived", "--questions", "qs.json", "--lang", "de", "--json"],
    ["My parcel never arrived", "--questions", "qs.json", "--task", "typed_decisions"],
    ["My parcel never arrived", "--questions", "qs.json", "--min-confidence", "0.8"],
    ["My parcel never arrived", "--questions", "qs.json", "--max-len", "64", "--head-max-len", "32", "--json"],
    ["Where is it?", "--questions", "qs_msg.json", "--json"],
    ["--batch", "requests.txt", "--questions", "qs.json", "--json"],
    ["--batch", "requests.txt", "--questions", "qs.json"],
    ["--batch", "requests.txt", "--questions", "qs.json", "--batch-size", "2", "--sort-by-length", "--json"],
]


def main(out_dir):
    rows = []
    with tempfile.TemporaryDirectory() as home:
        build_cache(home)
        env = dict(os.environ, HF_HOME=home, HF_HUB_OFFLINE="1", PYTHONIOENCODING="utf-8")
        env.pop("HF_TOKEN", None)
        with tempfile.TemporaryDirectory() as work:
            for name, content in FILES.items():
                with open(os.path.join(work, name), "w", encoding="utf-8") as fh:
                    fh.write(content)
            for argv in CASES:
                p = subprocess.run([LAYA] + argv, cwd=work, capture_output=True, env=env, timeout=600)
                err = "\n".join(l for l in p.stderr.decode().splitlines()
                                if l.startswith("laya: ") or l.startswith("note: "))
                rows.append({"argv": argv, "rc": p.returncode, "stdout": p.stdout.decode(), "stderr": err})
                print(argv, p.returncode, err[:200])
    with open(os.path.join(out_dir, "cli_predict_cases.jsonl"), "w", encoding="utf-8") as fh:
        for r in rows:
            fh.write(json.dumps(r, ensure_ascii=False) + "\n")
    with open(os.path.join(out_dir, "cli_predict_files.json"), "w", encoding="utf-8") as fh:
        json.dump({"commit": COMMIT, "layout": LAYOUT, "files": FILES}, fh, ensure_ascii=False, indent=1)


if __name__ == "__main__":
    main(sys.argv[1])
