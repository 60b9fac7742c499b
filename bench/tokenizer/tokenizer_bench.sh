#!/bin/sh
# Tokenizer benchmark: laya.c vs Hugging Face tokenizers, same corpus, same machine, one run.
#   bench/tokenizer/tokenizer_bench.sh [BUILD_DIR] [ROUNDS]
# Needs a release build (cmake -DCMAKE_BUILD_TYPE=Release; ninja tokenizer_bench) and the reference
# venv (/opt/layaref, or PYTHON=...). HF runs on one thread (RAYON_NUM_THREADS=1).
set -e
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
BUILD=${1:-$ROOT/build}
ROUNDS=${2:-5}
PYTHON=${PYTHON:-/opt/layaref/bin/python}
SHARED=${LAYA_SHARED:-$ROOT/../shared}
FIX=$ROOT/tests/fixtures
CORPUS=$FIX/tokenizer/corpus.jsonl
DOCS=$(mktemp /tmp/laya-tok-docs.XXXXXX.jsonl)
trap 'rm -f "$DOCS"' EXIT
# Second corpus: the same strings joined into ~4 kB documents (a Laya state is text of that size).
"$PYTHON" - "$CORPUS" "$DOCS" <<'PY'
import json, sys
out, cur = [], []
size = 0
for line in open(sys.argv[1], encoding="utf-8"):
    s = json.loads(line)
    if any(0xD800 <= ord(c) <= 0xDFFF for c in s):
        continue
    cur.append(s); size += len(s)
    if size > 4000:
        out.append(" ".join(cur)); cur, size = [], 0
with open(sys.argv[2], "w", encoding="utf-8") as f:
    for s in out:
        f.write(json.dumps(s) + "\n")
PY
TOKS="gemma3=$SHARED/tokenizers/gemma3 llama3=$SHARED/tokenizers/llama3 modernbert-mini=$FIX/tokenizers/modernbert-mini mmbert-mini=$FIX/tokenizers/mmbert-mini"
echo "# $(date -u +%FT%TZ) $(uname -m) $(nproc) cores; load: $(cut -d' ' -f1-3 /proc/loadavg)"
for C in "$CORPUS" "$DOCS"; do
  echo "# corpus: $(basename "$C" | sed 's/laya-tok-docs.*/documents (~4 kB)/')"
  "$BUILD/bench/tokenizer/tokenizer_bench" "$C" "$ROUNDS" $TOKS
  RAYON_NUM_THREADS=1 TOKENIZERS_PARALLELISM=false "$PYTHON" "$ROOT/bench/tokenizer/tokenizer_bench_hf.py" "$C" "$ROUNDS" $TOKS
done
echo "# load after: $(cut -d' ' -f1-3 /proc/loadavg)"
