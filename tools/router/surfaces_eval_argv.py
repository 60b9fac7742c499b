"""`laya eval` command-line cases, recorded from the real laya 0.4.15 CLI (laya.evals_cli.main, which
`laya eval ...` runs): agreement seeds of any size, and argparse's handling of the flags of every
subcommand (exit status 2, the usage block and `laya-evals[ SUB]: error: ...` on stderr, the order
errors are reported in, unique prefixes of long options, ambiguous prefixes).

    /work/refvenv/bin/python tools/router/surfaces_eval_argv.py tests/fixtures/surfaces/eval_compare

Run after surfaces_eval_agreement.py and surfaces_eval_fast.py (it reads their agreement/ runs and
the fixture directory's reports). Writes argv_cases.json, in cases.json's schema, replayed by
tests/cli/test_eval_argv.py. No case loads a model and no case writes a file: a `run` case names a
missing dataset, so it reaches the parser's verdict and then stops on the missing file.
"""
import json
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import surfaces_eval_compare as sec  # noqa: E402

A = "agreement/"
BASE = ["agreement", A + "ref.json", A + "rep.json", A + "stu.json", "--bootstrap-samples", "100"]
MANY = ["agreement", A + "many_ref.json", A + "many_rep.json", A + "many_stu.json", "--bootstrap-samples", "100"]
ONE = ["agreement", A + "ref1.json", A + "rep1.json", A + "stu1.json"]
MISSING = "fast/missing.jsonl"


def seed_cases():
    big = {
        "2p63": str(2 ** 63), "2p63m1": str(2 ** 63 - 1), "2p64m1": str(2 ** 64 - 1), "2p64": str(2 ** 64),
        "2p96p5": str(2 ** 96 + 5), "2p128m1": str(2 ** 128 - 1), "2p128": str(2 ** 128),
        "2p128p1": str(2 ** 128 + 1), "2p160p7": str(2 ** 160 + 7), "3p200": str(3 ** 200),
        "2p256p12345": str(2 ** 256 + 12345), "digits400": "9" * 400,
    }
    out = []
    for name, s in big.items():
        out.append(("seed_" + name, BASE + ["--seed", s]))
    for name in ("2p128", "2p160p7"):
        out.append(("seed_many_" + name, MANY + ["--seed", big[name]]))
    out.append(("seed_one_case_2p200", ONE + ["--seed", str(2 ** 200)]))
    spelled = {
        "spaces": "  42  ", "tabs_newline": "\t42\n", "nbsp": "\u00a042\u2003", "underscores": "1_000_000",
        "plus": "+7", "leading_zeros": "0007", "zero": "0", "zeros": "000", "minus_zero": "-0",
        "big_underscores": "340_282_366_920_938_463_463_374_607_431_768_211_457", "big_plus_zeros": "+000" + big["2p128"],
        "big_spaces": " " + big["2p64"] + " ",
        "arabic_indic": "\u0661\u0662\u0663", "fullwidth": "\uff11\uff12", "mixed_scripts": "1\u0662",
        "arabic_underscore": "\u0661_\u0662", "plus_arabic": "+\u0661", "nel": "\x855", "ideographic_space": "\u30005",
        "vt_ff": "\x0b5\x0c", "big_devanagari": "\u0967" + "\u0966" * 40,
        "digits4300": "7" * 4300, "zeros_then_4299": "0" + "3" * 4299, "underscored_4300": "_".join("5" * 4300),
    }
    for name, s in spelled.items():
        out.append(("seed_" + name, BASE + ["--seed=" + s]))
    bad = {
        "double_us": "1__0", "lead_us": "_1", "trail_us": "1_", "hex": "0x10", "float": "1.0", "exp": "1e3",
        "empty": "", "blank": "   ", "sign_only": "+", "inner_space": "1 0", "sign_space": "- 1",
        "big_bad": big["2p128"] + "x", "fullwidth_letters": "12a",
        "file_separator": "\x1c5", "unit_separator": "5\x1f", "del": "5\x7f", "arabic4301": "\u0663" * 4301,
        "superscript": "\u00b2", "roman_numeral": "\u2167", "nbsp_inside": "4\u00a02",
        "digits4301": "7" * 4301, "zeros4301": "0" * 4301, "plus_zeros_4301": "+" + "0" * 4300 + "1",
    }
    for name, s in bad.items():
        out.append(("seed_bad_" + name, BASE + ["--seed=" + s]))
    neg = {"minus_one": "-1", "minus_2p64": "-" + big["2p64"], "minus_2p200": "-" + str(2 ** 200),
           "minus_us": "-1_0", "minus_spaces": " -3 "}
    for name, s in neg.items():
        out.append(("seed_neg_" + name, BASE + ["--seed=" + s]))
    out += [
        ("seed_neg_separate", BASE + ["--seed", "-5"]),
        ("seed_neg_separate_big", BASE + ["--seed", "-" + big["2p128"]]),
        ("seed_neg_separate_us", BASE + ["--seed", "-1_0"]),
        ("seed_neg_and_samples", BASE[:4] + ["--bootstrap-samples", "99", "--seed", "-1"]),
        ("seed_neg_missing_run", ["agreement", A + "ref.json", A + "nope.json", A + "stu.json", "--seed", "-1"]),
        ("samples_huge", BASE[:4] + ["--bootstrap-samples", big["2p128"]]),
        ("samples_huge_negative", BASE[:4] + ["--bootstrap-samples", "-" + big["2p64"]]),
        ("samples_spelled", BASE[:4] + ["--bootstrap-samples", " 1_0_0 ", "--seed", big["2p64"]]),
        ("samples_fullwidth", BASE[:4] + ["--bootstrap-samples", "\uff11\u0660\u0660", "--seed", "\u0663"]),
        ("seed_samples_bad", BASE[:4] + ["--bootstrap-samples", "x", "--seed", "y"]),
        ("seed_samples_bad_rev", BASE[:4] + ["--seed", "y", "--bootstrap-samples", "x"]),
    ]
    return out


def flag_cases():
    g = lambda *a: list(a)  # noqa: E731
    ag = BASE[:4]
    out = [
        # the top-level parser
        ("top_none", g()),
        ("top_bad_command", g("nope")),
        ("top_unknown_first", g("--bogus", "validate", MISSING)),
        ("top_help_prefix", g("--he")),
        ("top_help_glued", g("-hx")),
        ("top_help_twice_glued", g("-hh")),
        ("top_help_eq", g("-h=x")),
        ("top_unknown_only", g("--bogus")),
        ("top_dashdash", g("--", "validate", MISSING)),
        ("top_negative", g("-5")),
        ("top_unknown_and_sub_extra", g("--bogus", "validate", MISSING, "more")),
        ("top_unknown_and_sub_error", g("-x", "agreement", "a", "b", "c", "--seed", "q")),
        # agreement
        ("ag_none", g("agreement")),
        ("ag_two", g("agreement", A + "ref.json", A + "rep.json")),
        ("ag_extra", ag + ["extra"]),
        ("ag_extras", ag + ["x1", "--bogus", "x2"]),
        ("ag_unknown", ag + ["--bogus"]),
        ("ag_unknown_short", ag + ["-x"]),
        ("ag_unknown_then_missing", g("agreement", "--bogus", A + "ref.json", A + "rep.json")),
        ("ag_unknown_then_bad_int", ag + ["--bogus", "--seed", "x"]),
        ("ag_seed_no_value", ag + ["--seed"]),
        ("ag_seed_then_option", ag + ["--seed", "--json", "x"]),
        ("ag_seed_then_unknown", ag + ["--seed", "--bogus"]),
        ("ag_seed_bad", ag + ["--seed", "x"]),
        ("ag_seed_float", ag + ["--seed", "1.5"]),
        ("ag_seed_empty_eq", ag + ["--seed="]),
        ("ag_json_no_value", ag + ["--json"]),
        ("ag_prefix_seed", ag + ["--se", "5", "--boot", "100"]),
        ("ag_prefix_seed_eq", ag + ["--s=5", "--b=100"]),
        ("ag_prefix_json", ag + ["--bootstrap-samples", "100", "--js", "/dev/null"]),
        ("ag_prefix_bad", ag + ["--se", "x"]),
        ("ag_ambiguous_all", ag + ["--=1"]),
        ("ag_seed_dashdash", ag + ["--bootstrap-samples", "100", "--seed", "--", "5"]),
        ("ag_seed_value_dashdash", ag + ["--bootstrap-samples", "100", "--seed", "5", "--"]),
        ("ag_dashdash_positional", g("agreement", A + "ref.json", "--", A + "rep.json", A + "stu.json",
                                     "--bootstrap-samples")),
        ("ag_help_after_extra", ag + ["extra", "-h"]),
        ("ag_help_after_bad", ag + ["--seed", "x", "-h"]),
        ("ag_help_prefix", ag + ["--hel"]),
        ("ag_help_glued", ag + ["-hv"]),
        ("ag_help_glued_hh", ag + ["-hhv"]),
        ("ag_help_glued_twice", ag + ["-hh"]),
        ("ag_help_short_eq_empty", ag + ["-h="]),
        ("ag_help_eq", ag + ["--help=1"]),
        ("ag_negative_positional", g("agreement", "-5", A + "rep.json", A + "stu.json")),
        ("ag_space_positional", g("agreement", "-x y", A + "rep.json", A + "stu.json")),
        # validate
        ("val_none", g("validate")),
        ("val_two", g("validate", MISSING, "b")),
        ("val_unknown", g("validate", "--x", MISSING)),
        ("val_dashdash", g("validate", "--", "-x")),
        ("val_only_dashdash", g("validate", "--")),
        ("val_help_prefix", g("validate", "--h")),
        ("val_ambiguous_eq", g("validate", "--=x", MISSING)),
        # run (a missing dataset: the parser's verdict, then the missing file)
        ("run_none", g("run")),
        ("run_unknown_only", g("run", "--bogus")),
        ("run_extra", g("run", MISSING, "e")),
        ("run_ambiguous_m", g("run", MISSING, "--m", "x")),
        ("run_ambiguous_mi", g("run", MISSING, "--mi=0.5")),
        ("run_ambiguous_ma", g("run", MISSING, "--ma", "x")),
        ("run_ambiguous_ba", g("run", MISSING, "--ba", "3")),
        ("run_ambiguous_first", g("run", MISSING, "--batch-size", "x", "--m", "y")),
        ("run_ambiguous_after_help", g("run", "-h", "--s")),
        ("run_ambiguous_as_value", g("run", MISSING, "--json", "--m")),
        ("run_prefixes", g("run", MISSING, "--bas", "b.json", "--tol", "ece=1", "--mod", "x", "--dev", "cpu",
                           "--batch", "2", "--sort", "--min-a", "0.5", "--max-e", "0.2", "--sc", "0.1",
                           "--sl", "qid", "--gate", "p.json", "--js", "o.json", "--mar", "o.md", "--rev", "abc",
                           "--cal", "c.json", "--on-e", "skip", "--min-c", "0.5")),
        ("run_exact_min", g("run", MISSING, "--min", "ece=0.1", "--max", "ece=0.9")),
        ("run_batch_bad", g("run", MISSING, "--batch-size", "x")),
        ("run_batch_float", g("run", MISSING, "--batch", "2.0")),
        ("run_min_acc_bad", g("run", MISSING, "--min-accuracy", "x")),
        ("run_min_acc_inf", g("run", MISSING, "--min-accuracy", "inf")),
        ("run_max_ece_nan", g("run", MISSING, "--max-ece=nan")),
        ("run_order_ece_batch", g("run", MISSING, "--max-ece", "x", "--batch-size", "y")),
        ("run_order_batch_ece", g("run", MISSING, "--batch-size", "y", "--max-ece", "x")),
        ("run_min_conf_bad", g("run", MISSING, "--min-confidence", "x")),
        ("run_score_within_bad", g("run", MISSING, "--score-within", "0.1", "--score-within", "x")),
        ("run_order_sw_choice", g("run", MISSING, "--score-within", "x", "--on-error", "maybe")),
        ("run_order_choice_sw", g("run", MISSING, "--on-error", "maybe", "--score-within", "x")),
        ("run_on_error_bad", g("run", MISSING, "--on-error", "x")),
        ("run_slice_bad", g("run", MISSING, "--slice", "qid", "--slice", "x")),
        ("run_flag_value", g("run", MISSING, "--sort-by-length=1")),
        ("run_flag_prefix_value", g("run", MISSING, "--sort=1")),
        ("run_unknown_then_bad", g("run", MISSING, "--bogus", "--batch-size", "x")),
        ("run_unknown_then_missing", g("run", "--bogus", "x", "--batch-size", "1")),
        ("run_json_no_value", g("run", MISSING, "--json")),
        ("run_json_then_option", g("run", MISSING, "--json", "--markdown", "x")),
        ("run_model_no_value", g("run", MISSING, "--model")),
        ("run_revision_no_value", g("run", MISSING, "--revision")),
        ("run_help_after_extras", g("run", MISSING, "e", "--bogus", "--he")),
        ("run_batch_negative", g("run", MISSING, "--batch-size", "-2")),
        ("run_batch_spelled", g("run", MISSING, "--batch-size", " +0_2 ")),
        ("run_batch_arabic", g("run", MISSING, "--batch-size=\u0662")),
        ("run_batch_hex", g("run", MISSING, "--batch-size", "0x2")),
        ("run_batch_neg_exp", g("run", MISSING, "--batch-size", "-1e3")),
        ("run_min_acc_negative", g("run", MISSING, "--min-accuracy", "-.5")),
        # int() of any size, float() of Unicode digits (each value accepted, then the missing file)
        ("run_batch_huge", g("run", MISSING, "--batch-size", "9" * 23)),
        ("run_batch_huge_negative", g("run", MISSING, "--batch-size=-" + str(2 ** 64))),
        ("run_batch_huge_prefix", g("run", MISSING, "--batch", str(2 ** 200))),
        ("run_batch_4301", g("run", MISSING, "--batch-size", "7" * 4301)),
        ("run_min_conf_fullwidth", g("run", MISSING, "--min-confidence", "\uff10.\uff15", "--batch-size", "\uff11")),
        ("run_min_acc_arabic", g("run", MISSING, "--min-accuracy", "\u0660.\u0665")),
        ("run_max_ece_nbsp", g("run", MISSING, "--max-ece", "\u00a00.2\u2003")),
        ("run_score_within_fullwidth", g("run", MISSING, "--score-within", "\uff10.\uff11")),
        ("run_min_conf_vulgar", g("run", MISSING, "--min-confidence", "\u00bd")),
        ("run_min_acc_file_separator", g("run", MISSING, "--min-accuracy", "\x1c0.5")),
        # compare
        ("cmp_none", g("compare")),
        ("cmp_no_baseline", g("compare", "modernbert-tiny_run.json")),
        ("cmp_no_report", g("compare", "--bas", "modernbert-tiny_run.json")),
        ("cmp_baseline_no_value", g("compare", "modernbert-tiny_run.json", "--baseline")),
        ("cmp_prefixes", g("compare", "modernbert-tiny_run.json", "--b", "modernbert-tiny_base_shifted.json",
                           "--tol", "choice_accuracy=0.06", "--to=ece=0.031", "--t", "brier=0.002")),
        ("cmp_prefix_policy", g("compare", "modernbert-tiny_run.json", "--basel=modernbert-tiny_run.json",
                                "--g", "policy_abs.json")),
        ("cmp_extra", g("compare", "a.json", "b.json", "--baseline", "x.json")),
        ("cmp_unknown_missing", g("compare", "--bogus", "a.json")),
        ("cmp_ambiguous_eq", g("compare", "a.json", "--=x")),
        # evidence
        ("ev_none", g("evidence")),
        ("ev_checkpoint_no_value", g("evidence", "--checkpoint")),
        ("ev_prefixes", g("evidence", "--c", "ev_present", "--r", "modernbert-tiny_run.json")),
        ("ev_prefix_missing", g("evidence", "--check=nope")),
        ("ev_extra", g("evidence", "extra", "--checkpoint", "nope")),
        ("ev_unknown_required", g("evidence", "--bogus")),
        ("ev_dashdash_extra", g("evidence", "--checkpoint=nope", "--", "y")),
        ("ev_ambiguous", g("evidence", "--=x")),
    ]
    return out


def main(fix):
    fix = os.path.abspath(fix)
    sec.FIXDIR = fix
    os.chdir(fix)
    os.makedirs("out", exist_ok=True)
    cases = [("argv_" + n, a) for n, a in seed_cases() + flag_cases()]
    results = [sec.run_case(name, None, argv) for name, argv in cases]
    for r in results:
        assert not r["files"], r["name"]
    sec.save_cases(results, "argv_", "argv_cases.json")


if __name__ == "__main__":
    main(sys.argv[1])
