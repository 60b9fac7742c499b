#!/usr/bin/env python3
"""The folder rule of docs/engine.md: which folder under src/ may include which.

Reads every #include "..." line of src/ (C, headers, CUDA) and fails when a file includes a
header from a folder its own folder must not depend on. The rule is the RULES table (a folder, or
one header of a folder, per entry); DEBTS lists the includes that break it today, each named as
a debt to remove. A debt that no longer occurs is reported (and should be deleted from the list).

usage: check_layers.py <repository root>
"""
import os
import re
import sys

# folder -> what its files may include ("core" = any header of src/core/, "model/weights.h" =
# that one header). Every folder may include its own headers and include/laya.h.
RULES = {
    "core": set(),
    "tokenizer": {"core"},
    # a backend says how to run the forward: the weights it is given and the model's facts
    # (model/spec.h: constants, the config check, the kept rows), never the engine above it
    "backend": {"core", "model/weights.h", "model/spec.h"},
    # the engine: drives a backend through its interface only, never a backend's own files (the
    # containers of packed weights, model/artifact.c, store a backend's arrays as named bytes; the
    # layout's code is the backend's, backend/cpu/cpu_artifact.c). No debt may be listed here.
    "model": {"core", "tokenizer", "backend/backend.h"},
    # routing is pure text analysis; the Router API (laya_router.c) runs models through the engine
    "router": {"core", "tokenizer", "model"},
    "cli": {"core", "tokenizer", "model", "router", "backend/backend.h"},
    # the servers run the engine through include/laya.h and its typed internal headers
    "serve": {"core", "router", "model/typed.h", "model/result_json.h", "model/presets.h", "model/shortlist.h"},
}

# (file, included header) -> the debt. Remove an entry when its include is gone.
DEBTS = {
    ("src/serve/models.c", "model/hub.h"):
        "the servers resolve checkpoint names through the Hub cache directly; the resolver belongs "
        "behind the router's interface, which serve/ may include",
}

# Includes no debt may excuse: model/ never includes a backend's own files (its one backend header
# is the interface, backend/backend.h), so the artifact <-> cpu.c cycle of issue 13 item 5 cannot
# come back as a listed debt.
NEVER = [("model", "backend/")]


def never(src_folder, header):
    return any(src_folder == f and header.startswith(p) for f, p in NEVER)


INCLUDE = re.compile(r'^\s*#\s*include\s+"([^"]+)"', re.M)
EXTS = (".c", ".h", ".cu", ".cuh")


def folder_of(rel):
    """src/backend/cpu/cpu.c -> backend"""
    return rel.split("/")[1]


def allowed(src_folder, header):
    """header is a path under src/ (e.g. model/engine.h)."""
    top = header.split("/")[0]
    if top == src_folder:
        return True
    rule = RULES.get(src_folder)
    if rule is None:
        return True  # a folder the rule does not cover (none today): checked by the count below
    return top in rule or header in rule


def main():
    root = sys.argv[1] if len(sys.argv) > 1 else "."
    src = os.path.join(root, "src")
    bad, seen_debts, n_files, n_includes = [], set(), 0, 0
    uncovered = set()
    for dirpath, _, files in os.walk(src):
        for name in sorted(files):
            if not name.endswith(EXTS):
                continue
            path = os.path.join(dirpath, name)
            rel = os.path.relpath(path, root).replace(os.sep, "/")
            n_files += 1
            me = folder_of(rel)
            if me not in RULES:
                uncovered.add(me)
            with open(path, encoding="utf-8", errors="replace") as f:
                text = f.read()
            for m in INCLUDE.finditer(text):
                inc = m.group(1)
                n_includes += 1
                if inc == "laya.h":
                    continue
                # a header next to the file ("cuda_internal.h") or relative to src/
                beside = os.path.normpath(os.path.join(dirpath, inc))
                if os.path.exists(beside) and "/" not in inc:
                    header = os.path.relpath(beside, src).replace(os.sep, "/")
                else:
                    header = os.path.normpath(inc).replace(os.sep, "/")
                if header.startswith("..") or not os.path.exists(os.path.join(src, header)):
                    bad.append(f"{rel}: #include \"{inc}\" is not a header under src/")
                    continue
                if allowed(me, header):
                    continue
                if (rel, header) in DEBTS and not never(me, header):
                    seen_debts.add((rel, header))
                    continue
                line = text.count("\n", 0, m.start()) + 1
                bad.append(f"{rel}:{line}: {me}/ must not include {header} "
                           f"({me}/ may include: {', '.join(sorted(RULES[me])) or 'nothing else'})")
    for (f, h) in sorted(DEBTS):
        if never(folder_of(f), h):
            bad.append(f"{f} -> {h} is listed as a debt, but {folder_of(f)}/ may never include {h}")
    for f in sorted(uncovered):
        bad.append(f"src/{f}/ is not in the folder rule (tests/layers/check_layers.py RULES)")
    for (f, h), why in sorted(DEBTS.items()):
        state = "still there" if (f, h) in seen_debts else "GONE: delete it from DEBTS"
        print(f"known debt ({state}): {f} includes {h}: {why}")
    print(f"{n_files} files, {n_includes} #include lines checked")
    for b in bad:
        print("FAIL " + b)
    return 1 if bad or n_files == 0 else 0


if __name__ == "__main__":
    sys.exit(main())
