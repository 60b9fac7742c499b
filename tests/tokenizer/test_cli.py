#!/usr/bin/env python3
"""`laya tokenize` end to end: its output must equal the reference's ids in the fixtures.

    test_cli.py LAYA_BINARY TOKENIZER_DIR CORPUS.jsonl EXPECTED.jsonl [N]

Feeds the first N corpus strings as --json lines (and the plain-text ones as lines), checks
--max-len and --tokens, --decode against the reference's decode, and that a lone surrogate is
refused with exit status 2.
"""
import json
import subprocess
import sys

ALPHABET = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_"


def unpack(s):
    ids, cur = [], 0
    for ch in s:
        v = ALPHABET.index(ch)
        cur = (cur << 5) | (v & 31)
        if v < 32:
            ids.append(cur)
            cur = 0
    return ids


def run(binary, args, text):
    p = subprocess.run([binary, "tokenize"] + args, input=text.encode("utf-8", "surrogatepass"),
                       stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    return p.returncode, p.stdout.decode("utf-8"), p.stderr.decode("utf-8", "replace")


def main():
    binary, tok, corpus_path, expected_path = sys.argv[1:5]
    n = int(sys.argv[5]) if len(sys.argv) > 5 else 3000
    with open(corpus_path, encoding="utf-8") as f:
        corpus = [json.loads(l) for l in f][:n]
    with open(expected_path, encoding="utf-8") as f:
        expected = [json.loads(l) for l in f][:n]
    keep = [(s, e) for s, e in zip(corpus, expected) if e is not None]
    want = [unpack(e if isinstance(e, str) else e[0]) for _, e in keep]
    failures = 0

    lines = "".join(json.dumps(s) + "\n" for s, _ in keep)
    rc, out, err = run(binary, ["--tokenizer", tok, "--json"], lines)
    got = [json.loads(l) for l in out.splitlines()]
    if rc != 0 or got != want:
        bad = next((i for i, (g, w) in enumerate(zip(got, want)) if g != w), min(len(got), len(want)))
        print("--json: rc=%d, %d lines, first difference at %d: %r" % (rc, len(got), bad, err[:200]))
        failures += 1

    rc, out, _ = run(binary, ["--tokenizer", tok, "--json", "--max-len", "7"], lines)
    if rc != 0 or [json.loads(l) for l in out.splitlines()] != [w[:7] for w in want]:
        print("--max-len 7 differs")
        failures += 1

    plain = [(s, w) for (s, _), w in zip(keep, want) if "\n" not in s and "\r" not in s and s == s.strip("\x00")]
    plain = [(s, w) for s, w in plain if not any(c in s for c in "\x0b\x0c\x1c\x1d\x1e\x85\u2028\u2029")]
    rc, out, _ = run(binary, ["--tokenizer", tok], "".join(s + "\n" for s, _ in plain))
    if rc != 0 or [json.loads(l) for l in out.splitlines()] != [w for _, w in plain]:
        print("plain lines differ")
        failures += 1

    ids_lines = "".join(json.dumps(w) + "\n" for w in want[:500])
    want_text = [s if isinstance(e, str) else e[1] for s, e in keep[:500]]
    rc, out, _ = run(binary, ["--tokenizer", tok, "--decode"], ids_lines)
    if rc != 0 or [json.loads(l) for l in out.splitlines()] != want_text:
        print("--decode differs from the reference's decode")
        failures += 1

    rc, out, _ = run(binary, ["--tokenizer", tok, "--tokens"], "hello world\n")
    toks = json.loads(out)
    if rc != 0 or not all(isinstance(t, str) for t in toks) or not toks:
        print("--tokens output is not a list of strings")
        failures += 1

    rc, out, err = run(binary, ["--tokenizer", tok, "--json"], '"ok \\ud800"\n')
    if rc != 2 or "surrogate" not in err:
        print("a lone surrogate must exit 2 naming it, got rc=%d %r" % (rc, err))
        failures += 1
    for bad in ["", "-1", "7x"]:
        rc, _, err = run(binary, ["--tokenizer", tok, "--max-len", bad], "hello\n")
        if rc != 2 or "--max-len" not in err:
            print("--max-len %r must be a usage error, got rc=%d" % (bad, rc))
            failures += 1
    # a cap beyond any row (as the top-level integer flags read any size) caps nothing
    _, nocap, _ = run(binary, ["--tokenizer", tok], "hello world\n")
    rc, out, err = run(binary, ["--tokenizer", tok, "--max-len", "3000000000"], "hello world\n")
    if rc != 0 or out != nocap or not nocap:
        print("--max-len 3000000000 must cap nothing, got rc=%d %r" % (rc, err))
        failures += 1
    rc, _, err = run(binary, ["--tokenizer", tok + "/missing"], "")
    if rc != 2 or "missing" not in err:
        print("a missing tokenizer must exit 2 naming the path")
        failures += 1

    print("tokenizer/cli: %d strings, %d failures" % (len(keep), failures))
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
