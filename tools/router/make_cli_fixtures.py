"""Record the real `laya` 0.4.15 command on route-only and error-path cases.

    /opt/layaref/bin/python tools/router/make_cli_fixtures.py tests/fixtures/surfaces/cli_cases.jsonl

Each case runs `laya ARGS` (the console script of the installed package) in a scratch
directory holding the case's files, with the case's stdin, and records exit status, stdout and
stderr. None of these cases loads a checkpoint: routing is offline, and every error path here
is raised before a model is needed. tests/cli/run_cli_cases.py replays them against laya.c.

`compare` says how a case is checked: "exact" (stdout, stderr and status), or "usage" for
argparse errors, where only the status and the final "laya: error: ..." line are compared
(the usage synopsis lists laya.c's own flags).
"""
import json
import os
import subprocess
import sys
import tempfile

LAYA = os.path.join(os.path.dirname(sys.executable), "laya")

QS_OK = json.dumps({"intent": {"type": "choice", "instructions": "What?", "criteria": ["a", "b"]}})
FILES = {
    "requests.txt": "I was charged twice, please refund\n\nMein Konto wurde zweimal belastet\n"
                    "   \n東京の天気はどうですか\nBonjour, je voudrais annuler ma commande s'il vous plaît, "
                    "merci beaucoup pour votre aide\n",
    "blank.txt": "\n   \n\t\n",
    "q_list.json": "[1, 2]",
    "q_empty.json": "{}",
    "q_wrapped_bad.json": json.dumps({"questions": [1]}),
    "q_key_bad.json": json.dumps({"questions": {"a": {"type": "noul", "instructions": "x"}}, "state_key": 5}),
    "q_key_blank.json": json.dumps({"questions": {"a": {"type": "noul", "instructions": "x"}}, "state_key": "  "}),
    "q_wrapped_empty.json": json.dumps({"questions": {}, "state_key": "message"}),
    "q_not_obj.json": json.dumps({"a": 3}),
    "q_ok.json": QS_OK,
}

CASES = [
    (["I was charged twice, please refund"], "exact"),
    (["Mein", "Konto", "wurde", "zweimal", "belastet"], "exact"),
    (["--json", "東京の天気はどうですか"], "exact"),
    (["--json", "Bonjour, je voudrais annuler ma commande"], "exact"),
    (["  12345 !!! ", "--json"], "exact"),
    (["Hola", "--lang", "es"], "exact"),
    (["Hola amigo, necesito ayuda con mi cuenta", "--lang", "C.UTF-8"], "exact"),
    (["My payment failed twice", "--lang-guess", "de"], "exact"),
    (["My payment failed twice", "--lang-guess", "und", "--json"], "exact"),
    (["My payment failed twice", "--model", "ML"], "exact"),
    (["My payment failed twice", "--model", "auto"], "exact"),
    (["My payment failed twice", "--model", " Typed_Decisions "], "exact"),
    (["My payment failed twice", "--task", "typed-decisions"], "exact"),
    (["My payment failed twice", "--task", "Typed_Decisions", "--json"], "exact"),
    (["My payment failed twice", "--task", "summarise"], "exact"),
    (["Quero cancelar", "--json"], "exact"),
    (["Привет, мой заказ не пришёл", "--json"], "exact"),
    (["Set α to 0.05 and rerun the job please"], "exact"),
    (["--batch", "requests.txt"], "exact"),
    (["--batch", "requests.txt", "--json"], "exact"),
    (["--batch", "-", "--json"], "exact", "Where is my parcel?\nWo ist mein Paket?\n"),
    (["--batch", "requests.txt", "--model", "en", "--json"], "exact"),
    (["--batch", "requests.txt", "--lang", "fr"], "exact"),
    (["--batch", "blank.txt"], "exact"),
    (["--batch", "missing.txt"], "exact"),
    (["hello", "--batch", "requests.txt"], "exact"),
    ([], "exact", "I was charged twice\nquit\n"),
    ([], "exact", "Wo ist mein Paket?\n\n"),
    ([], "exact", ""),
    (["hi there", "--min-confidence", "0.5"], "exact"),
    (["--explain", "Hola amigo, necesito ayuda con mi cuenta por favor"], "exact"),
    (["--explain", "--json", "I was charged twice\nMi cuenta no funciona desde ayer y necesito ayuda con el pago de la factura"], "exact"),
    (["--batch", "requests.txt", "--explain"], "exact"),
    (["--batch", "requests.txt", "--explain", "--json"], "exact"),
    (["hi", "--explain", "--predict"], "exact"),
    (["hi", "--explain", "--questions", "q_ok.json"], "exact"),
    (["hi", "--questions", "q_ok.json", "--preset", "triage"], "exact"),
    (["hi", "--questions", "missing.json"], "exact"),
    (["hi", "--questions", "q_list.json"], "exact"),
    (["hi", "--questions", "q_empty.json"], "exact"),
    (["hi", "--questions", "q_wrapped_bad.json"], "exact"),
    (["hi", "--questions", "q_key_bad.json"], "exact"),
    (["hi", "--questions", "q_key_blank.json"], "exact"),
    (["hi", "--questions", "q_wrapped_empty.json"], "exact"),
    (["hi", "--questions", "q_not_obj.json"], "exact"),
    (["hi", "--model", "bogus"], "usage"),
    (["hi", "--preset", "nope"], "usage"),
    (["hi", "--max-len", "ten"], "usage"),
    (["hi", "--model"], "usage"),
    (["hi", "--min-confidence", "2"], "usage"),
    (["hi", "--frobnicate"], "usage"),
]


def main(out_path):
    with open(out_path, "w", encoding="utf-8") as out:
        for case in CASES:
            argv, compare = case[0], case[1]
            stdin = case[2] if len(case) > 2 else ""
            with tempfile.TemporaryDirectory() as d:
                for name, content in FILES.items():
                    with open(os.path.join(d, name), "w", encoding="utf-8") as fh:
                        fh.write(content)
                env = dict(os.environ, HF_HUB_OFFLINE="1", PYTHONIOENCODING="utf-8")
                p = subprocess.run([LAYA] + argv, cwd=d, input=stdin.encode(), capture_output=True,
                                   env=env, timeout=120)
            stdout, stderr = p.stdout.decode(), p.stderr.decode()
            if compare == "usage":
                stdout = ""
                stderr = [l for l in stderr.splitlines() if l.startswith("laya: error:")][-1] + "\n"
            out.write(json.dumps({"argv": argv, "stdin": stdin, "compare": compare, "rc": p.returncode,
                                  "stdout": stdout, "stderr": stderr}, ensure_ascii=False) + "\n")
    with open(os.path.join(os.path.dirname(out_path), "cli_files.json"), "w", encoding="utf-8") as fh:
        json.dump(FILES, fh, ensure_ascii=False, indent=1)
    print("recorded %d cases" % len(CASES))


if __name__ == "__main__":
    main(sys.argv[1])
