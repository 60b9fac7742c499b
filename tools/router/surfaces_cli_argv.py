"""The top-level `laya` command's flags as the real laya 0.4.15 command parses them (argparse):
unique prefixes of long options, ambiguous prefixes, the order refusals come in (an ambiguous
prefix first, then a bad value as its option is consumed, left to right, then the unrecognized
arguments), the one run of words the text takes, `--`, glued `-h`, explicit values on flags, and
the int / float spellings Python's int() and float() take (any size, Unicode digits).

    /work/refvenv/bin/python tools/router/surfaces_cli_argv.py tests/fixtures/surfaces/cli_argv_cases.json

Each case runs `laya ARGV` (the installed console script) offline (HF_HUB_OFFLINE=1) in a scratch
directory holding FILES, and records exit status, stdout and stderr. No case loads a checkpoint:
routing is offline, and every answering flag here is stopped by a check that comes before a model
(--explain with an answering mode, --min-confidence without one, two question sets). Replayed by
tests/cli/test_cli_argv.py, which also lists the cases where laya.c's larger option set makes
argparse's answer differ (a prefix unique among Laya's options but not among laya.c's).
"""
import json
import os
import subprocess
import sys
import tempfile

LAYA = os.path.join(os.path.dirname(sys.executable), "laya")

FILES = {
    "requests.txt": "I was charged twice, please refund\nWo ist mein Paket?\n",
    "q_ok.json": json.dumps({"intent": {"type": "choice", "instructions": "What?", "criteria": ["a", "b"]}}),
}

BIG = "99999999999999999999999"

CASES = {
    # unique prefixes (Laya's and laya.c's option sets agree on these)
    "prefix_model": ["My payment failed twice", "--mo", "en"],
    "prefix_model_eq_json": ["My payment failed twice", "--mod=ml", "--js"],
    "prefix_lang_j": ["Hola amigo, necesito ayuda", "--lang=es", "--j"],
    "prefix_lang_guess": ["My payment failed twice", "--lang-g", "de"],
    "prefix_task": ["My payment failed twice", "--ta", "Typed_Decisions"],
    "prefix_explain_json": ["Hola amigo, necesito ayuda con mi cuenta", "--ex", "--js"],
    "prefix_device": ["hi there", "--d", "cpu"],
    "prefix_batch_size": ["--batch", "requests.txt", "--batch-s", "2"],
    "prefix_batch_eq": ["--batch=requests.txt", "--batch-si=1", "--json"],
    "prefix_sort": ["--batch", "requests.txt", "--so", "--json"],
    "prefix_min_conf": ["hi", "--mi", "0.5"],
    "prefix_predict_explain": ["hi", "--pred", "--exp"],
    "prefix_preset_explain": ["hi", "--pres", "triage", "--ex"],
    "prefix_preset_bad": ["hi", "--pres", "nope"],
    "prefix_questions_preset": ["hi", "--que", "q_ok.json", "--pres", "triage"],
    "prefix_flag_value": ["hi", "--js=1"],
    # prefixes unique in Laya that laya.c's own options make ambiguous (the test expects laya.c's)
    "diverge_e": ["hi", "--e"],
    "diverge_s": ["--batch=requests.txt", "--s"],
    "diverge_ma": ["hi", "--ma", "5"],
    "diverge_batch_dash": ["--batch", "requests.txt", "--batch-", "2"],
    "diverge_q": ["hi", "--q", "q_ok.json", "--pres", "triage"],
    "diverge_lang_dash": ["My payment failed twice", "--lang-", "de"],
    # ambiguous prefixes
    "ambiguous_p": ["hi", "--p"],
    "ambiguous_pre": ["hi", "--pre", "triage"],
    "ambiguous_la": ["hi", "--la", "de"],
    "ambiguous_m": ["hi", "--m", "en"],
    "ambiguous_m_eq": ["hi", "--m=en"],
    "ambiguous_he": ["hi", "--he"],
    "ambiguous_b": ["hi", "--b", "x"],
    "ambiguous_bat": ["--bat", "requests.txt"],
    "ambiguous_after_bad_value": ["hi", "--max-len", "x", "--p"],
    "ambiguous_after_help": ["-h", "--la"],
    "ambiguous_as_value": ["hi", "--model", "--m"],
    # values, in the order argparse meets them
    "int_word": ["hi", "--max-len", "ten"],
    "int_float": ["hi", "--max-len", "1.5"],
    "int_hex": ["hi", "--head-max-len", "0x10"],
    "int_empty": ["hi", "--batch-size="],
    "int_double_us": ["hi", "--max-len", "1__0"],
    "int_4301_digits": ["hi", "--max-len", "7" * 4301],
    "int_quote": ["hi", "--max-len", "it's"],
    "model_then_int": ["hi", "--model", "bogus", "--max-len", "x"],
    "int_then_model": ["hi", "--max-len", "x", "--model", "bogus"],
    "unknown_then_int": ["hi", "--frob", "--max-len", "x"],
    "unknown_then_model": ["hi", "--frob", "--model", "bogus"],
    "min_conf_word": ["hi", "--min-confidence", "x"],
    "min_conf_quote": ["hi", "--min-confidence", "'x"],
    "min_conf_range": ["hi", "--min-confidence", "2"],
    "min_conf_nan": ["hi", "--min-confidence", "nan"],
    "min_conf_neg_inf": ["hi", "--min-confidence", "-inf"],
    "min_conf_prefix_eq": ["hi", "--min-c=1.5"],
    "min_conf_underscore": ["hi", "--min-confidence", "1_0"],
    "min_conf_hex": ["hi", "--min-confidence", "0x1"],
    "preset_quote": ["hi", "--preset", "it's"],
    "model_no_value": ["hi", "--model"],
    "model_then_option": ["hi", "--model", "--json"],
    "flag_value": ["hi", "--json=1"],
    "flag_empty_value": ["hi", "--predict="],
    # help
    "help_prefix": ["hi", "--hel"],
    "help_short": ["-h"],
    "help_twice_glued": ["hi", "-hh"],
    "help_glued_bad": ["hi", "-hx"],
    "help_short_eq": ["hi", "-h=1"],
    "help_eq": ["--help=1"],
    "help_after_bad": ["hi", "--max-len", "x", "-h"],
    "help_before_bad": ["hi", "-h", "--max-len", "x"],
    "help_after_unknown": ["hi", "--frob", "-h"],
    # the text: one run of words; `--`
    "unknown_long": ["hi", "--frob"],
    "unknown_short": ["hi", "-x"],
    "text_after_option": ["hi", "--json", "there"],
    "text_after_option_extras": ["hi", "--json", "there", "--frob", "x"],
    "text_after_options_first": ["--json", "My", "payment", "failed"],
    "text_dashdash_after": ["hi", "--json", "--", "x"],
    "text_dashdash_first": ["--", "--json"],
    "text_dashdash_twice": ["hi", "--", "--json", "--", "x"],
    "text_negative": ["-5"],
    "text_space_dash": ["-x y"],
    "text_dash": ["hi", "-"],
    # numbers Python's int() / float() take
    "int_huge_batch_size": ["hi", "--batch-size", BIG],
    "int_huge_batch_run": ["--batch", "requests.txt", "--batch-size", BIG],
    "int_huge_max_len": ["hi", "--max-len=" + BIG],
    "int_arabic_indic": ["hi", "--max-len", "\u0661\u0662"],
    "int_fullwidth": ["hi", "--head-max-len", "\uff11\uff12"],
    "int_spaces_us": ["hi", "--max-len", " 1_000 "],
    "int_nbsp": ["hi", "--batch-size", "\u00a02\u2003"],
    "int_superscript": ["hi", "--max-len", "\u00b2"],
    "float_fullwidth": ["hi", "--min-confidence", "\uff10.\uff15"],
    "float_arabic_explain": ["hi", "--min-confidence", "\u0660.\u0665", "--pred", "--exp"],
    "float_nbsp": ["hi", "--min-confidence", "\u00a00.5\u2003"],
    "float_vulgar": ["hi", "--min-confidence", "\u00bd"],
    "float_file_separator": ["hi", "--min-confidence", "\x1c0.5"],
    "float_arabic_range": ["hi", "--min-confidence", "\u0662"],
}


def main(out_path):
    results = []
    for name, argv in CASES.items():
        with tempfile.TemporaryDirectory() as d:
            for fname, content in FILES.items():
                with open(os.path.join(d, fname), "w", encoding="utf-8") as fh:
                    fh.write(content)
            env = dict(os.environ, HF_HUB_OFFLINE="1", PYTHONIOENCODING="utf-8", COLUMNS="80")
            p = subprocess.run([LAYA] + argv, cwd=d, capture_output=True, env=env, timeout=120)
        results.append({"name": name, "argv": argv, "rc": p.returncode, "stdout": p.stdout.decode(),
                        "stderr": p.stderr.decode()})
        print("%-28s rc=%d %s" % (name, p.returncode, p.stderr.decode().strip().split("\n")[-1][:90]),
              file=sys.stderr)
    with open(out_path, "w", encoding="utf-8") as fh:
        json.dump({"files": FILES, "cases": results}, fh, ensure_ascii=False, indent=1)
        fh.write("\n")
    print("recorded %d cases" % len(results))


if __name__ == "__main__":
    main(sys.argv[1])
