"""Parity fixtures for `laya eval run --baseline/--markdown/--score-within/--gate-policy`,
`laya eval compare` and `laya eval evidence`, written by running the real laya 0.4.15 CLI.

    /work/refvenv/bin/python tools/router/surfaces_eval_compare.py tests/fixtures/surfaces/eval_compare

Every case is `laya.evals_cli.main(argv)` (what `laya eval ...` runs), in a scratch copy of the
fixture directory, with stdout, stderr and the exit status recorded, plus the files it wrote
(--json, --markdown). Laya's CLI names checkpoints, not directories, so its Router is given the
tiny checkpoints under the built-in names ("english" = modernbert-tiny, "multilingual" =
mmbert-tiny); laya.c is run with --model DIR on the same directory. `@MODEL` in a case's argv
stands for that model argument. Reports Laya writes become the baselines of later cases, and a
few baselines are derived from them by editing one field (written here, committed with the rest).

cases.json: [{"name", "ckpt" (or null), "argv", "rc", "stdout", "stderr", "files": {path: text}}]
"""
import contextlib
import copy
import io
import json
import os
import shutil
import sys
import tempfile
import warnings

os.environ.setdefault("COLUMNS", "100")
os.environ.setdefault("PYTHONHASHSEED", "0")
warnings.simplefilter("ignore")

import torch  # noqa: E402

torch.set_num_threads(1)
import laya  # noqa: E402
from laya import evals_cli  # noqa: E402

ROOT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..")
CKPT = os.path.join(ROOT, "tests", "fixtures", "ckpt")
CKPTS = {"modernbert-tiny": "english", "mmbert-tiny": "multilingual"}

_Router = laya.Router


class TinyRouter(_Router):
    """The real Router, with the built-in names pointing at the tiny checkpoints."""

    def __init__(self, *a, **kw):
        models = dict(kw.pop("models", None) or {})
        for d, name in CKPTS.items():
            models.setdefault(name, os.path.abspath(os.path.join(CKPT, d)))
        super().__init__(*a, models=models, **kw)


laya.Router = TinyRouter


def write(path, obj):
    os.makedirs(os.path.dirname(path) or ".", exist_ok=True)
    with open(path, "w", encoding="utf-8") as fh:
        if isinstance(obj, str):
            fh.write(obj)
        else:
            json.dump(obj, fh, ensure_ascii=False, indent=2, sort_keys=True)
            fh.write("\n")


def inputs(fix):
    """The datasets, policies and evidence checkpoints the cases read."""
    src = os.path.join(ROOT, "tests", "fixtures", "surfaces", "eval_dataset.jsonl")
    lines = open(src, encoding="utf-8").read().splitlines(True)
    write(os.path.join(fix, "data.jsonl"), "".join(lines))
    # data2: the same rows but the last, and the choice question reworded (both identities move)
    rows = [l for l in lines if l.strip() and not l.startswith("#")][:-1]
    alt = []
    for l in rows:
        r = json.loads(l)
        r["questions"] = copy.deepcopy(r["questions"])
        r["questions"]["intent"]["instructions"] = "What is `message` asking for?"
        alt.append(json.dumps(r, ensure_ascii=False) + "\n")
    write(os.path.join(fix, "data2.jsonl"), "".join(alt))
    # data_bad: a row whose question type is unknown (the runner raises), one expected id no
    # question answers is refused at load, so the bad row is the question itself
    bad_row = json.loads(rows[1])
    bad_row["questions"] = {"urgent": {"type": "bogus", "instructions": "Is `message` urgent?"}}
    bad_row["expected"] = {"urgent": True}
    write(os.path.join(fix, "data_bad.jsonl"), rows[0] + json.dumps(bad_row, ensure_ascii=False) + "\n" + rows[2])
    write(os.path.join(fix, "policy_abs.json"), {"version": 1, "rules": [
        {"slice": {"language": "en"}, "metric": "choice_accuracy", "min_count": 3, "min": 0.9},
        {"slice": {"qid": "urgent"}, "metric": "ece", "min_count": 1, "max": 0.01},
        {"slice": {"qid": "anger"}, "metric": "score_mae", "min_count": 1, "max": 5},
        {"slice": {"tag": "vip"}, "metric": "noul_accuracy", "min_count": 100, "min": 0.0},
        {"slice": {"language": "xx"}, "metric": "choice_accuracy", "min_count": 1, "min": 0.5},
        {"slice": {"language": "de"}, "metric": "aurc", "min_count": 1, "max": 0.99}]})
    write(os.path.join(fix, "policy_rel.json"), {"version": 1, "rules": [
        {"slice": {"language": "en"}, "metric": "choice_accuracy", "min_count": 1, "max_drop": 0.01},
        {"slice": {"qid": "urgent"}, "metric": "ece", "min_count": 1, "max_increase": 0.0},
        {"slice": {"tag": "t0"}, "metric": "noul_accuracy", "min_count": 2, "max_drop": 0.5}]})
    bad = {
        "policy_bad_keys.json": {"version": 1},
        "policy_bad_version.json": {"version": 2, "rules": []},
        "policy_bad_rules.json": {"version": 1, "rules": []},
        "policy_bad_rule.json": {"version": 1, "rules": [{"slice": {"language": "en"}, "metric": "ece"}]},
        "policy_bad_slice.json": {"version": 1, "rules": [
            {"slice": {"country": "en"}, "metric": "ece", "min_count": 1, "max": 1}]},
        "policy_bad_metric.json": {"version": 1, "rules": [
            {"slice": {"qid": "urgent"}, "metric": " ", "min_count": 1, "max": 1}]},
        "policy_bad_count.json": {"version": 1, "rules": [
            {"slice": {"qid": "urgent"}, "metric": "ece", "min_count": 0, "max": 1}]},
        "policy_bad_limit.json": {"version": 1, "rules": [
            {"slice": {"qid": "urgent"}, "metric": "ece", "min_count": 1, "max_drop": -1}]},
        "policy_not_object.json": [1, 2],
    }
    for name, obj in bad.items():
        write(os.path.join(fix, name), obj)
    write(os.path.join(fix, "policy_bad_json.json"), "{\"version\": 1,\n")
    # evidence: checkpoint configs with the training blocks Laya's trainer persists
    base = json.load(open(os.path.join(CKPT, "modernbert-tiny", "rl_agent_config.json")))
    ev = {
        "present": {"choice": {"items": 120, "issues": [], "temperature": 1.3},
                    "noul": {"items": 80, "issues": [], "temperature": 0.9}},
        "insufficient": {"choice": {"items": 120, "issues": [], "temperature": 1.3},
                         "score": {"items": 12, "issues": ["not fitted: 12 calibration items, below 30"]},
                         "noul": {"items": 0}},
        "missing": {"choice": {"items": 0}, "noul": {"items": 0, "issues": []}},
        "malformed": {"choice": {"items": True}, "noul": "x", "score": {"items": 40}},
    }
    for name, cal in ev.items():
        cfg = dict(base, training={"laya_train": {"dataset_sha256": "abc"}, "laya_train_calibration": cal})
        write(os.path.join(fix, "ev_" + name, "rl_agent_config.json"), cfg)
    write(os.path.join(fix, "ev_noblock", "rl_agent_config.json"), dict(base, training={"laya_train": {}}))
    write(os.path.join(fix, "ev_notobject", "rl_agent_config.json"), [1])
    write(os.path.join(fix, "ev_badjson", "rl_agent_config.json"), "{\n")
    os.makedirs(os.path.join(fix, "ev_empty"), exist_ok=True)
    write(os.path.join(fix, "ev_empty", ".keep"), "")


def derived(fix, ck):
    """Baselines derived from the report Laya wrote for checkpoint `ck`."""
    rep = json.load(open(os.path.join(fix, ck + "_run.json"), encoding="utf-8"))
    out = {}
    s = copy.deepcopy(rep)
    s["overall"]["choice_accuracy"] += 0.05
    s["overall"]["ece"] -= 0.03
    s["overall"]["brier"] += 0.001
    for g in s["slices"]["language"].values():
        if "choice_accuracy" in g:
            g["choice_accuracy"] += 0.2
    s["slices"]["qid"]["urgent"]["ece"] -= 0.02
    out["shifted"] = s
    o = copy.deepcopy(rep)
    o["config"]["dataset_sha256"] = "0" * 64
    o["config"]["questions_sha256"] = "f" * 64
    out["other"] = o
    v = copy.deepcopy(rep)
    del v["config"]["coverage_metric_definition"]
    out["v1"] = v
    e = copy.deepcopy(rep)
    e["overall"]["score_within_0.25"] = 0.5
    e["config"]["schema"] = "laya-evals-report/0"
    out["extra"] = e
    for name in ("other", "v1", "extra"):
        del out[name]["cases"]      # compare reads overall and config; keep the files small
    out["map"] = {k: v for k, v in rep["overall"].items() if "_ms" not in k and "score_within" not in k}
    for name, obj in out.items():
        write(os.path.join(fix, "%s_base_%s.json" % (ck, name), ), obj)


def cases_for(ck):
    m = ["--model", "@MODEL"]
    sw = ["--score-within", "0.5", "--score-within", "1"]
    tol = []
    for k in ("aurc", "brier", "choice_accuracy", "ece", "mean_confidence", "noul_accuracy", "score_mae",
              "score_within_0.5", "score_within_1", "selective_accuracy@50", "selective_accuracy@80"):
        tol += ["--tolerance", k + "=0.001"]
    b = lambda n: "%s_base_%s.json" % (ck, n)  # noqa: E731
    r = "%s_run.json" % ck
    return [
        ("run", ["run", "data.jsonl"] + m + sw + ["--slice", "qid", "--slice", "tag",
                                                  "--json", r, "--markdown", "%s_run.md" % ck]),
        ("run_batch", ["run", "data.jsonl"] + m + ["--batch-size", "4", "--markdown", "out/%s_batch.md" % ck]),
        ("run_mc", ["run", "data.jsonl"] + m + ["--min-confidence", "0.5", "--batch-size", "4", "--sort-by-length",
                                                "--json", "out/%s_mc.json" % ck]),
        ("run_skip", ["run", "data_bad.jsonl"] + m + ["--on-error", "skip", "--json", "out/%s_skip.json" % ck]),
        ("run_gates", ["run", "data.jsonl"] + m + ["--score-within", "0.5", "--min-accuracy", "0.9",
                                                   "--max-ece", "0.05", "--min", "score_within_0.5=0.99",
                                                   "--max", "score_mae=0.1"]),
        ("run_sw_none", ["run", "data.jsonl"] + m + ["--score-within", "0.25", "--min", "noul_accuracy=0.0"]),
        ("run_base_pass", ["run", "data.jsonl"] + m + sw + ["--baseline", r] + tol),
        ("run_base_fail", ["run", "data.jsonl"] + m + sw + ["--baseline", b("shifted"),
                                                            "--tolerance", "choice_accuracy=0.02"] + tol[2:]),
        ("run_base_other", ["run", "data.jsonl"] + m + sw + ["--baseline", b("other")] + tol),
        ("run_base_data2", ["run", "data2.jsonl"] + m + sw + ["--baseline", r] + tol),
        ("run_policy_abs", ["run", "data.jsonl"] + m + ["--gate-policy", "policy_abs.json"]),
        ("run_policy_rel", ["run", "data.jsonl"] + m + sw + ["--gate-policy", "policy_rel.json",
                                                             "--baseline", b("shifted")] + tol),
        ("compare_same", ["compare", r, "--baseline", r]),
        ("compare_shifted", ["compare", r, "--baseline", b("shifted"), "--tolerance", "choice_accuracy=0.02"]),
        ("compare_shifted_ok", ["compare", r, "--baseline", b("shifted"), "--tolerance", "choice_accuracy=0.06",
                                "--tolerance", "ece=0.031", "--tolerance", "brier=0.002"]),
        ("compare_other", ["compare", r, "--baseline", b("other")]),
        ("compare_v1", ["compare", r, "--baseline", b("v1")]),
        ("compare_extra", ["compare", r, "--baseline", b("extra")]),
        ("compare_map", ["compare", r, "--baseline", b("map"), "--tolerance", "latency_p50_ms=1e9"]),
        ("compare_policy_abs", ["compare", r, "--baseline", r, "--gate-policy", "policy_abs.json"]),
        ("compare_policy_rel", ["compare", r, "--baseline", b("shifted"), "--gate-policy", "policy_rel.json"]),
        ("compare_policy_rel_same", ["compare", r, "--baseline", r, "--gate-policy", "policy_rel.json"]),
        ("evidence_ckpt", ["evidence", "--checkpoint", "@CKPTDIR"]),
        ("evidence_report", ["evidence", "--checkpoint", "@CKPTDIR", "--report", r]),
    ]


def common_cases():
    out = []
    for name in ("present", "insufficient", "missing", "malformed", "noblock"):
        out.append(("evidence_" + name, ["evidence", "--checkpoint", "ev_" + name]))
    out += [
        ("evidence_present_report", ["evidence", "--checkpoint", "ev_present", "--report", "modernbert-tiny_run.json"]),
        ("evidence_conflict", ["evidence", "--checkpoint", "ev_present", "--report", "conflict_report.json"]),
        ("evidence_toplevel", ["evidence", "--checkpoint", "ev_insufficient", "--report", "toplevel_report.json"]),
        ("evidence_empty_report", ["evidence", "--checkpoint", "ev_missing", "--report", "empty_report.json"]),
        ("evidence_no_config", ["evidence", "--checkpoint", "ev_empty"]),
        ("evidence_no_dir", ["evidence", "--checkpoint", "nope"]),
        ("evidence_notobject", ["evidence", "--checkpoint", "ev_notobject"]),
        ("evidence_report_notobject", ["evidence", "--checkpoint", "ev_present", "--report", "not_object.json"]),
        ("compare_cross", ["compare", "modernbert-tiny_run.json", "--baseline", "mmbert-tiny_run.json"]),
        ("compare_not_object", ["compare", "modernbert-tiny_run.json", "--baseline", "not_object.json"]),
        ("compare_string_metric", ["compare", "modernbert-tiny_run.json", "--baseline", "string_metric.json"]),
        ("compare_bool_metric", ["compare", "modernbert-tiny_run.json", "--baseline", "bool_metric.json"]),
        ("compare_empty", ["compare", "modernbert-tiny_run.json", "--baseline", "empty_report.json"]),
        ("compare_overall_list", ["compare", "modernbert-tiny_run.json", "--baseline", "overall_list.json"]),
        ("compare_tol_inf", ["compare", "modernbert-tiny_run.json", "--baseline", "modernbert-tiny_run.json",
                             "--tolerance", "ece=inf"]),
        ("compare_tol_bad", ["compare", "modernbert-tiny_run.json", "--baseline", "modernbert-tiny_run.json",
                             "--tolerance", "ece=abc"]),
        ("compare_tol_noeq", ["compare", "modernbert-tiny_run.json", "--baseline", "modernbert-tiny_run.json",
                              "--tolerance", "ece"]),
        ("compare_tol_nan", ["compare", "modernbert-tiny_run.json", "--baseline", "modernbert-tiny_run.json",
                             "--tolerance", "ece=nan"]),
        ("compare_tol_neg", ["compare", "modernbert-tiny_run.json", "--baseline", "modernbert-tiny_run.json",
                             "--tolerance", "ece=-1"]),
        ("run_policy_rel_nobase", ["run", "data.jsonl", "--model", "@MODEL", "--gate-policy", "policy_rel.json"]),
        ("run_sw_negative", ["run", "data.jsonl", "--model", "@MODEL", "--score-within", "-1"]),
        ("run_sw_inf", ["run", "data.jsonl", "--model", "@MODEL", "--score-within", "inf"]),
        ("run_min_inf", ["run", "data.jsonl", "--model", "@MODEL", "--min", "ece=inf"]),
        ("run_min_noeq", ["run", "data.jsonl", "--model", "@MODEL", "--min", "ece"]),
        ("run_revision_clash", ["run", "data.jsonl", "--model", "@MODEL", "--revision", "abc", "--revision", "def"]),
        ("run_revision_pair_clash", ["run", "data.jsonl", "--model", "@MODEL", "--revision", "en=abc",
                                     "--revision", "english=def"]),
        ("run_revision_empty", ["run", "data.jsonl", "--model", "@MODEL", "--revision", " "]),
        ("run_revision_pair_empty", ["run", "data.jsonl", "--model", "@MODEL", "--revision", "english="]),
        ("run_baseline_missing", ["run", "data.jsonl", "--model", "@MODEL", "--baseline", "nope.json"]),
    ]
    for name in sorted(os.listdir(FIXDIR)):
        if name.startswith("policy_bad") or name == "policy_not_object.json":
            out.append(("run_" + name[:-5], ["run", "data.jsonl", "--model", "@MODEL", "--gate-policy", name]))
            out.append(("compare_" + name[:-5], ["compare", "modernbert-tiny_run.json", "--baseline",
                                                 "modernbert-tiny_run.json", "--gate-policy", name]))
    return out


FIXDIR = None


def run_case(name, ck, argv):
    real = []
    for a in argv:
        if a == "@MODEL":
            a = CKPTS[ck or "modernbert-tiny"]
        elif a == "@CKPTDIR":
            a = os.path.join("..", "..", "ckpt", ck)
        real.append(a)
    before = {p: os.path.getmtime(p) for p in walk(".")}
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        try:
            rc = evals_cli.main(real)
        except SystemExit as exc:
            rc = exc.code if isinstance(exc.code, int) else 2
    files = {}
    for p in walk("."):
        # the reports are committed beside cases.json (the first run of each checkpoint) or read
        # back by the test from laya.c's own run; the Markdown summaries are kept here
        if (p not in before or os.path.getmtime(p) != before[p]) and (p.endswith(".md") or p.startswith("out/")):
            files[p] = open(p, encoding="utf-8").read()
    print("%-32s %-16s rc=%d" % (name, ck, rc), file=sys.stderr)
    return {"name": name, "ckpt": ck, "argv": argv, "rc": rc, "stdout": out.getvalue(),
            "stderr": err.getvalue(), "files": files}


def save_cases(results, prefix, path):
    """A recorder's cases into `path` (JSON, as cases.json), each keeping only the files it wrote
    under out/PREFIX, which are then removed (the surfaces_eval_fast / _agreement recorders)."""
    for r in results:
        r["files"] = {k: v for k, v in r["files"].items() if k.startswith("out/" + prefix)}
    for p in os.listdir("out"):
        if p.startswith(prefix):
            os.remove(os.path.join("out", p))
    with open(path, "w", encoding="utf-8") as fh:
        json.dump(results, fh, ensure_ascii=False, indent=1, sort_keys=True)
        fh.write("\n")


def walk(top):
    out = []
    for d, _, fs in os.walk(top):
        for f in fs:
            out.append(os.path.relpath(os.path.join(d, f), top))
    return out


def main(fix):
    global FIXDIR
    fix = os.path.abspath(fix)
    FIXDIR = fix
    os.makedirs(fix, exist_ok=True)
    inputs(fix)
    results = []
    # the cases run in the fixture directory itself (relative paths as a user types them); the
    # reports of the first case per checkpoint are the committed baselines of the rest
    os.chdir(fix)
    os.makedirs("out", exist_ok=True)
    for ck in CKPTS:
        cs = cases_for(ck)
        results.append(run_case(ck + ":" + cs[0][0], ck, cs[0][1]))
        derived(fix, ck)
        for name, argv in cs[1:]:
            results.append(run_case(ck + ":" + name, ck, argv))
    rep = json.load(open("modernbert-tiny_run.json", encoding="utf-8"))
    c = copy.deepcopy(rep)
    c["config"]["dataset_sha256"] = "1" * 64
    write("conflict_report.json", c)
    top = {k: v for k, v in rep.items() if k != "config"}
    top.update(schema=rep["config"]["schema"], dataset_sha256="abc",
               questions_sha256=rep["config"]["questions_sha256"])
    write("toplevel_report.json", top)
    write("empty_report.json", {"overall": {}})
    write("not_object.json", [1, 2])
    write("string_metric.json", {"overall": {"ece": "0.1"}})
    write("bool_metric.json", {"overall": {"choice_accuracy": True}})
    write("overall_list.json", {"overall": [1]})
    for name, argv in common_cases():
        results.append(run_case(name, "modernbert-tiny" if "@MODEL" in argv else None, argv))
    shutil.rmtree("out")
    with open("cases.json", "w", encoding="utf-8") as fh:
        json.dump(results, fh, ensure_ascii=False, indent=1, sort_keys=True)
        fh.write("\n")


if __name__ == "__main__":
    main(sys.argv[1])
