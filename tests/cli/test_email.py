#!/usr/bin/env python3
"""`laya --email` / `--email-state` against the real laya's email_state.

tests/fixtures/email/cases.jsonl holds laya==0.4.15's email_state(subject, body, sender) for the
corpus emails. Each such email is written here as a saved message (headers, blank line, body) --
raw, as base64 in a multipart/alternative message beside an HTML part, and as quoted-printable --
and `laya --email-state FILE` must print exactly the state Laya built from the same three strings.
Then `--email` answers the email preset with the tiny fixture checkpoint, and the refusals.
usage: test_email.py LAYA_BINARY FIXTURES_DIR
"""
import base64
import json
import os
import quopri
import subprocess
import sys
import tempfile

laya, fixtures = sys.argv[1], sys.argv[2]
failures = checks = 0


def check(ok, what):
    global failures, checks
    checks += 1
    if not ok:
        failures += 1
        print("FAIL:", what)


def run(args, stdin=None):
    p = subprocess.run([laya] + args, input=stdin, capture_output=True)
    return p.returncode, p.stdout.decode("utf-8", "replace"), p.stderr.decode("utf-8", "replace")


def header_lines(kw):
    h = "Subject: %s\r\n" % kw["subject"]
    if kw.get("sender"):
        h = "From: %s\r\n" % kw["sender"] + h
    return h


cases = [json.loads(line) for line in open(os.path.join(fixtures, "email", "cases.jsonl"), encoding="ascii")]
states = [c for c in cases if c["fn"] == "email_state" and "expect" in c and c["id"][:2].isalpha()
          and set(c["kwargs"]) <= {"subject", "body", "sender"}
          and all(isinstance(c["kwargs"].get(k, ""), str) for k in ("subject", "body", "sender"))
          and "\n" not in c["kwargs"]["subject"] and "\r" not in c["kwargs"]["subject"]
          and not c["id"].startswith("state-")]
check(len(states) >= 100, "at least 100 corpus states to replay (got %d)" % len(states))
with tempfile.TemporaryDirectory() as tmp:
    for c in states:
        kw = c["kwargs"]
        body = kw["body"].encode("utf-8")
        forms = {
            "raw": header_lines(kw).encode("utf-8") + b"\r\n" + body,
            "base64": (header_lines(kw) + "MIME-Version: 1.0\r\nContent-Type: multipart/alternative; "
                       "boundary=\"=_b0\"\r\n\r\npreamble\r\n--=_b0\r\nContent-Type: text/plain; charset=utf-8\r\n"
                       "Content-Transfer-Encoding: base64\r\n\r\n").encode("utf-8")
                      + base64.encodebytes(body).replace(b"\n", b"\r\n")
                      + b"--=_b0\r\nContent-Type: text/html; charset=utf-8\r\n\r\n<p>html</p>\r\n--=_b0--\r\n",
            "qp": (header_lines(kw) + "Content-Type: text/plain; charset=\"UTF-8\"\r\n"
                   "Content-Transfer-Encoding: quoted-printable\r\n\r\n").encode("utf-8")
                  + quopri.encodestring(body),
        }
        for form, data in forms.items():
            if form == "qp" and b"\r" in body:
                continue  # quoted-printable text mode does not carry bare CRs
            path = os.path.join(tmp, "%s.%s.eml" % (c["id"], form))
            with open(path, "wb") as f:
                f.write(data)
            rc, out, err = run(["--email-state", path])
            check(rc == 0 and out == c["expect"] + "\n",
                  "%s (%s): --email-state\n  got:  %r %s\n  want: %r" % (c["id"], form, out[:300], err, c["expect"][:300]))
    # stdin, and a plain body with no headers: subject "" and no from
    rc, out, _ = run(["--email-state", "-"], stdin=b"Please refund.\n\nThanks,\nAnn")
    check(rc == 0 and json.loads(out) == {"subject": "", "body": "Please refund."}, "plain body on stdin: %r" % out)
    # --email-max-chars is email_state's max_chars
    rc, out, _ = run(["--email-state", "-", "--email-max-chars", "5"], stdin=b"Subject: s\n\nabcdefgh")
    check(rc == 0 and json.loads(out)["body"] == "abcde", "--email-max-chars: %r" % out)
    # RFC 2047 words in Subject and From, folded headers, ISO-8859-1
    msg = ("From: =?UTF-8?Q?Jo=C3=A3o_Silva?= <joao@example.com>\r\nSubject: =?ISO-8859-1?Q?Cobran=E7a?=\r\n"
           " =?UTF-8?B?ZHVwbGljYWRh?=\r\nContent-Type: text/plain; charset=iso-8859-1\r\n\r\n"
           "Ol\xe1,\r\n\r\nFui cobrado duas vezes.\r\n\r\nAtenciosamente,\r\nJo\xe3o\r\n").encode("latin-1")
    rc, out, _ = run(["--email-state", "-"], stdin=msg)
    check(rc == 0 and json.loads(out) == {"subject": "Cobrançaduplicada", "body": "Olá,\n\nFui cobrado duas vezes.",
                                          "from": "João Silva <joao@example.com>"}, "encoded words: %r" % out)
    # answering: the email preset by default, another preset on request
    ckpt = os.path.join(fixtures, "ckpt", "modernbert-tiny")
    eml = os.path.join(tmp, "answer.eml")
    with open(eml, "wb") as f:
        f.write(b"From: ann@example.com\nSubject: Refund\n\nI was charged twice, please refund.\n\nThanks,\nAnn\n")
    rc, out, err = run(["--email", eml, "--model", ckpt, "--json"])
    ans = json.loads(out)["answers"] if rc == 0 else {}
    check(set(ans) == {"category", "is_spam", "is_phishing", "urgency", "needs_reply"}, "email preset answers: %r %s" % (out[:200], err))
    rc, out, err = run(["--email", eml, "--model", ckpt, "--json", "--preset", "triage"])
    check(rc == 0 and "intent" in json.loads(out)["answers"], "--preset triage on an email: %s" % err)
    # refusals
    rc, _, err = run(["--email", eml, "some text"])
    check(rc == 2 and "--email" in err, "text and --email: %d %s" % (rc, err))
    rc, _, err = run(["--email-state", os.path.join(tmp, "missing.eml")])
    check(rc == 2 and "missing.eml" in err, "missing file: %d %s" % (rc, err))
    rc, _, err = run(["--email-state", "-"], stdin=b"Subject: x\nContent-Type: text/plain; charset=koi8-r\n\nhi")
    check(rc != 0 and "koi8-r" in err, "unknown charset: %d %s" % (rc, err))
print("test_email.py: %d checks, %d failed" % (checks, failures))
sys.exit(1 if failures else 0)
