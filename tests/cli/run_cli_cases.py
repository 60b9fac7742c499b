"""Replay the `laya` cases recorded from Laya 0.4.15 (tests/fixtures/surfaces/cli_cases.jsonl)
against laya.c's binary: exit status, stdout and stderr must match (for argparse usage errors,
the status and the final "laya: error:" line). Every mismatch is printed."""
import json
import os
import subprocess
import sys
import tempfile


def main(binary, cases_path):
    files = json.load(open(os.path.join(os.path.dirname(cases_path), "cli_files.json"), encoding="utf-8"))
    bad = total = 0
    for line in open(cases_path, encoding="utf-8"):
        case = json.loads(line)
        total += 1
        with tempfile.TemporaryDirectory() as d:
            for name, content in files.items():
                with open(os.path.join(d, name), "w", encoding="utf-8") as fh:
                    fh.write(content)
            env = dict(os.environ, HF_HUB_OFFLINE="1")
            p = subprocess.run([binary] + case["argv"], cwd=d, input=case["stdin"].encode(),
                               capture_output=True, env=env, timeout=60)
        out, err = p.stdout.decode("utf-8", "replace"), p.stderr.decode("utf-8", "replace")
        if case["compare"] == "usage":
            out = ""
            lines = [l for l in err.splitlines() if l.startswith("laya: error:")]
            err = (lines[-1] + "\n") if lines else err
        problems = []
        if p.returncode != case["rc"]:
            problems.append("exit status %d, want %d" % (p.returncode, case["rc"]))
        if out != case["stdout"]:
            problems.append("stdout differs:\n--- want\n%s--- got\n%s" % (case["stdout"], out))
        if err != case["stderr"]:
            problems.append("stderr differs:\n--- want\n%s--- got\n%s" % (case["stderr"], err))
        if problems:
            bad += 1
            print("FAIL laya %s (stdin %r)" % (" ".join(case["argv"]), case["stdin"][:40]))
            for pr in problems:
                print("  " + pr.replace("\n", "\n  "))
    print("%d passed, %d failed" % (total - bad, bad))
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1], sys.argv[2]))
