#!/usr/bin/env python3
"""schemathesis and prometheus_client against a live laya-serve (run by serve/api_fuzz with the
pinned client venv, tests/serve/client-requirements.txt):

    build/serve-clients/bin/python tests/serve/api_fuzz_check.py http://127.0.0.1:PORT

1. schemathesis (PyPI) fuzzes every operation /openapi.json documents, deterministically, with
   the checks that hold a server to its own document: no 5xx, every status documented, the
   documented content type and headers, every response body valid against its schema. Left out:
   positive_data_acceptance and negative_data_rejection, which require the JSON Schema alone to
   decide acceptance. Laya's own checks go further than a schema can say (an option_order must be
   a permutation, at most 32 score levels answer 413 as in Laya), so schema-valid bodies are
   rightly refused with 422/413 and 413 is not a status schemathesis counts as a refusal.
2. /metrics, scraped after the fuzzing, is parsed by prometheus_client's own parser (the one the
   official client library ships) and agrees with prom_text.py's strict reading family by family.
"""
import os
import re
import subprocess
import sys
import urllib.request

HERE = os.path.dirname(os.path.abspath(__file__))
CHECKS = ("not_a_server_error,status_code_conformance,content_type_conformance,"
          "response_headers_conformance,response_schema_conformance")


def main():
    base = sys.argv[1].rstrip("/")
    st = os.path.join(os.path.dirname(sys.executable), "schemathesis")
    cmd = [st, "run", base + "/openapi.json", "--checks", CHECKS, "--max-examples", "25",
           "--generation-deterministic", "--request-timeout", "60", "--workers", "1", "--no-color"]
    p = subprocess.run(cmd, capture_output=True, text=True, timeout=1200, env=dict(os.environ, NO_COLOR="1"))
    out = p.stdout + p.stderr
    print(out[-3000:])
    sel = re.search(r"Selected:\s*(\d+)/(\d+)", out)
    tested = re.search(r"Tested:\s*(\d+)", out)
    ok = p.returncode == 0 and sel and tested and sel.group(1) == sel.group(2) and tested.group(1) == sel.group(2)
    if not ok:
        print("FAIL schemathesis: rc %d, %s, %s" % (p.returncode, sel and sel.group(0), tested and tested.group(0)))
        return 1
    print("schemathesis: %s operations, no failure" % tested.group(1))

    from prometheus_client.parser import text_string_to_metric_families
    sys.path.insert(0, HERE)
    import prom_text
    raw = urllib.request.urlopen(base + "/metrics", timeout=30).read().decode()
    fams = {f.name: f for f in text_string_to_metric_families(raw)}
    strict = prom_text.parse(raw)
    # prometheus_client names a counter family without its _total suffix
    names = {n[:-6] if strict[n]["type"] == "counter" and n.endswith("_total") else n for n in strict}
    bad = []
    if set(fams) != names:
        bad.append("families differ: prometheus_client %s, prom_text %s" % (sorted(set(fams) - names),
                                                                            sorted(names - set(fams))))
    for n, f in strict.items():
        pf = fams.get(n[:-6] if f["type"] == "counter" and n.endswith("_total") else n)
        if pf is None:
            continue
        if pf.type != f["type"]:
            bad.append("%s: type %s vs %s" % (n, pf.type, f["type"]))
        got = sorted((s.name, tuple(sorted(s.labels.items())), s.value) for s in pf.samples
                     if not s.name.endswith("_created"))
        want = sorted((s[0], tuple(sorted(s[1].items())), s[2]) for s in f["samples"])
        if got != want:
            bad.append("%s: samples differ\n  %r\n  %r" % (n, got[:5], want[:5]))
    req = fams.get("laya_requests")
    served = sum(s.value for s in req.samples if s.name == "laya_requests_total") if req else 0
    if served < 100:
        bad.append("laya_requests_total counts %r requests after the fuzzing" % served)
    for b in bad:
        print("FAIL metrics: " + b)
    if bad:
        return 1
    print("prometheus_client: %d families, %d requests counted" % (len(fams), served))
    return 0


if __name__ == "__main__":
    sys.exit(main())
