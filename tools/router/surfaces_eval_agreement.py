"""`laya eval agreement` cases, recorded from the real laya 0.4.15 CLI (laya.evals_cli.main).

    /work/refvenv/bin/python tools/router/surfaces_eval_agreement.py tests/fixtures/surfaces/eval_compare

Writes agreement/*.json (teacher reference, teacher repeat and student runs in Laya's
`laya-agreement-run/1` schema, and runs broken in one way each) and agreement_cases.json, in
cases.json's schema, replayed by tests/cli/test_eval_compare.py. No model is involved: the
outputs must be Laya's byte for byte (the bootstrap interval included: numpy's PCG64 stream).
"""
import copy
import json
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import surfaces_eval_compare as sec  # noqa: E402

Q = {"intent": {"type": "choice", "instructions": "What does `message` want?",
                "criteria": {"refund": "money back", "help": "technical help", "other": None}},
     "tone": {"type": "choice", "instructions": "Tone of `message`?", "criteria": ["calm", "angry"]}}
MSGS = ["I was charged twice, refund me", "The app crashes on start", "Thanks, all good", "Où est mon argent ?",
        "Necesito ayuda con la app", "Refund now!!!", "How do I export?"]


def run(run_id, model, answers, revision="abc123", student=False):
    cases = []
    for i, m in enumerate(MSGS):
        c = {"id": "c%02d" % i, "state": {"message": m}, "questions": Q,
             "answers": {"intent": answers[i][0], "tone": answers[i][1]}}
        if i % 3 == 0:
            c["language"] = "en" if i != 3 else "fr"
        if i % 2 == 0:
            c["tags"] = ["vip"] if i % 4 == 0 else ["vip", "web", "vip"]
        cases.append(c)
    return {"schema": "laya-agreement-run/1", "run_id": run_id,
            "provenance": {"model": model, "revision": revision, "settings": {"temperature": 0}},
            "cases": cases[::-1] if student else cases}


def files(fix):
    ref_a = [("refund", "angry"), ("help", "calm"), ("other", "calm"), ("refund", "angry"), ("help", "calm"),
             ("refund", "angry"), ("help", "calm")]
    rep_a = list(ref_a)
    rep_a[2] = ("help", "calm")
    rep_a[5] = ("refund", "calm")
    stu_a = list(ref_a)
    stu_a[1] = (None, "calm")
    stu_a[3] = ("other", "angry")
    stu_a[6] = ("help", None)
    out = {
        "ref.json": run("t1", "teacher-x", ref_a),
        "rep.json": run("t2", "teacher-x", rep_a),
        "stu.json": run("s1", "laya-student", stu_a, revision=None, student=True),
    }
    one = lambda r: dict(r, cases=r["cases"][:1])  # noqa: E731
    out["ref1.json"], out["rep1.json"], out["stu1.json"] = one(out["ref.json"]), one(out["rep.json"]), \
        dict(out["stu.json"], cases=[c for c in out["stu.json"]["cases"] if c["id"] == "c00"])
    bad = {}
    bad["same_id.json"] = dict(out["rep.json"], run_id="t1")
    bad["schema.json"] = dict(out["rep.json"], schema="laya-agreement-run/2")
    bad["fewer.json"] = dict(out["rep.json"], cases=out["rep.json"]["cases"][1:])
    s = copy.deepcopy(out["stu.json"])
    s["cases"][0]["answers"]["intent"] = "maybe"
    bad["stu_label.json"] = s
    s = copy.deepcopy(out["stu.json"])
    s["cases"][1]["state"] = {"message": "changed"}
    bad["stu_state.json"] = s
    r = copy.deepcopy(out["rep.json"])
    r["provenance"]["settings"] = {"temperature": 1}
    bad["rep_settings.json"] = r
    r = copy.deepcopy(out["rep.json"])
    del r["provenance"]["revision"]
    bad["rep_norev.json"] = r
    r = copy.deepcopy(out["rep.json"])
    r["cases"][2]["tags"] = ["vip", 3]
    bad["rep_tags.json"] = r
    r = copy.deepcopy(out["rep.json"])
    r["cases"][0]["questions"] = {"intent": dict(Q["intent"], type="noul"), "tone": Q["tone"]}
    bad["rep_qtype.json"] = r
    r = copy.deepcopy(out["rep.json"])
    r["cases"][4]["id"] = "c00"
    bad["rep_dupid.json"] = r
    out.update(bad)
    # 101 cases: the bootstrap draws its indices in several calls (131072 // 101 replicates each),
    # an odd count of 32-bit halves per call
    many = {}
    for role, rid in (("ref", "m1"), ("rep", "m2"), ("stu", "m3")):
        cases = []
        for i in range(101):
            ans = ["refund", "help", "other"][(i * (3 if role == "ref" else 5 if role == "rep" else 7)) % 3 if i % 4 else 0]
            c = {"id": "m%03d" % i, "state": {"message": "message %d" % i, "n": i, "w": i / 8},
                 "questions": {"intent": Q["intent"]} if i % 5 else Q,
                 "answers": {"intent": None if role == "stu" and i % 11 == 0 else ans}}
            if i % 5 == 0:
                c["answers"]["tone"] = ["calm", "angry"][(i // 5) % 2 if role != "stu" else i % 2]
            c["tags"] = ["t%d" % (i % 3)]
            c["language"] = ["en", "pt", None][i % 3]
            cases.append(c)
        many["many_%s.json" % role] = {"schema": "laya-agreement-run/1", "run_id": rid,
                                       "provenance": {"model": "x" if role != "stu" else "y", "revision": None,
                                                      "settings": {"t": 0.5, "list": [1, 2.0, "é"]}},
                                       "cases": cases}
    out.update(many)
    r = copy.deepcopy(out["rep.json"])
    r["provenance"]["settings"] = {"temperature": float("nan")}
    out["rep_nan.json"] = r
    bad["rep_nan.json"] = r
    d = os.path.join(fix, "agreement")
    os.makedirs(d, exist_ok=True)
    for name, obj in out.items():
        with open(os.path.join(d, name), "w", encoding="utf-8") as fh:
            json.dump(obj, fh, ensure_ascii=False, indent=1, allow_nan=True)
            fh.write("\n")
    raw = {"dupkey.json": '{"schema": "laya-agreement-run/1", "run_id": "t2", "run_id": "t3"}\n',
           "badjson.json": '{"schema": "laya-agreement-run/1",\n', "list.json": "[1, 2]\n"}
    for name, text in raw.items():
        with open(os.path.join(d, name), "w", encoding="utf-8") as fh:
            fh.write(text)
    return sorted(bad) + sorted(raw)


def main(fix):
    fix = os.path.abspath(fix)
    sec.FIXDIR = fix
    broken = files(fix)
    os.chdir(fix)
    os.makedirs("out", exist_ok=True)
    a = lambda n: "agreement/" + n  # noqa: E731
    base = ["agreement", a("ref.json"), a("rep.json"), a("stu.json")]
    cases = [
        ("agreement", base),
        ("agreement_seed", base + ["--seed", "7", "--bootstrap-samples", "100"]),
        ("agreement_big", base + ["--bootstrap-samples", "20001", "--seed", "123456789012"]),
        ("agreement_json", base + ["--json", "out/agreement_report.json"]),
        ("agreement_one_case", ["agreement", a("ref1.json"), a("rep1.json"), a("stu1.json")]),
        ("agreement_many", ["agreement", a("many_ref.json"), a("many_rep.json"), a("many_stu.json"),
                            "--bootstrap-samples", "3001", "--seed", "5"]),
        ("agreement_many_max", ["agreement", a("many_ref.json"), a("many_rep.json"), a("many_stu.json"),
                                "--bootstrap-samples", "100000", "--json", "out/agreement_many.json"]),
        ("agreement_samples_low", base + ["--bootstrap-samples", "99"]),
        ("agreement_samples_high", base + ["--bootstrap-samples", "100001"]),
        ("agreement_seed_negative", base + ["--seed", "-1"]),
        ("agreement_missing", ["agreement", a("ref.json"), a("nope.json"), a("stu.json")]),
        ("agreement_student_is_teacher", ["agreement", a("ref.json"), a("rep.json"), a("ref.json")]),
    ]
    for n in broken:
        role = 3 if n.startswith("stu_") else 2
        argv = list(base)
        argv[role] = a(n)
        cases.append(("agreement_" + n[:-5], argv))
    cases.append(("agreement_ref_list", ["agreement", a("list.json"), a("rep.json"), a("stu.json")]))
    results = [sec.run_case(name, None, argv) for name, argv in cases]
    sec.save_cases(results, "agreement", "agreement_cases.json")


if __name__ == "__main__":
    main(sys.argv[1])
