#!/usr/bin/env python3
"""The environment table of src/core/options.c is complete and is the only way in.

Fails when a library file under src/ calls getenv() directly (the library reads its variables
into laya_env_options through the table; allowed: core/options.c itself, serve/config.c (the
servers' own variables, docs/serve.md) and the command-line front ends of cli/; the CUDA backend
(src/backend/cuda/) is library code like the rest: its variables come from the options struct);
when anything outside core/options.c calls the raw reader laya_env() (use sites read the struct:
LAYA_SHA256_DIGESTS in model/ and router/, the CUDA switches); and when a variable named in a
laya_env_options_read_one(..., "NAME", ...) call, in the CUDA backend's list of its rows, or in a
laya_env("...") call is missing from the table.

usage: check_env.py <repository root>
"""
import os
import re
import sys

root = sys.argv[1] if len(sys.argv) > 1 else "."
src = os.path.join(root, "src")
table_text = open(os.path.join(src, "core", "options.c"), encoding="utf-8").read()
table = set(re.findall(r'^\s*\{"([A-Z_][A-Z0-9_]*)",', table_text, re.M))
ALLOWED_GETENV = ("src/core/options.c", "src/serve/config.c")
bad = []
names = 0
for dirpath, _, files in os.walk(src):
    for name in sorted(files):
        if not name.endswith((".c", ".h", ".cu", ".cuh")):
            continue
        rel = os.path.relpath(os.path.join(dirpath, name), root).replace(os.sep, "/")
        text = open(os.path.join(dirpath, name), encoding="utf-8", errors="replace").read()
        cuda = rel.startswith("src/backend/cuda/")
        for m in re.finditer(r'\bgetenv\(', text):
            line = text.count("\n", 0, m.start()) + 1
            if not (rel in ALLOWED_GETENV or rel.startswith("src/cli/") or (rel.endswith(".h") and not cuda)):
                bad.append("FAIL %s:%d: getenv() in the library; read the variable into laya_env_options (core/options.h)" % (rel, line))
        if rel != "src/core/options.c":
            for m in re.finditer(r'\blaya_env\(', text):
                line = text.count("\n", 0, m.start()) + 1
                if not (rel.startswith("src/cli/") or rel.endswith(".h")):
                    bad.append("FAIL %s:%d: laya_env() outside core/options.c; read laya_env_options' field" % (rel, line))
        pat = r'\b(?:laya_env|laya_env_options_read_one)\((?:[^,()]*,\s*)?"([A-Za-z_][A-Za-z0-9_]*)"'
        names_here = [m for m in re.finditer(pat, text)]
        if cuda:  # the backend's list of its own rows (backend_cuda_create)
            names_here += [m for m in re.finditer(r'"(LAYA_[A-Z0-9_]+)"', text)]
        for m in names_here:
            names += 1
            if m.group(1) not in table:
                line = text.count("\n", 0, m.start()) + 1
                bad.append("FAIL %s:%d: %s is not in the table of src/core/options.c" % (rel, line, m.group(1)))
for b in bad:
    print(b)
print("%d variables in the table, %d named reads checked, %d problems" % (len(table), names, len(bad)))
sys.exit(1 if bad else 0)
