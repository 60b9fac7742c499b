#!/usr/bin/env bash
# Regenerate every fixture this directory owns, in dependency order, with the reference venv:
#   tests/fixtures/tokenizers/{modernbert-mini,mmbert-mini}/
#   tests/fixtures/ckpt/{modernbert-tiny,mmbert-tiny}/      (+ SHA256SUMS)
#   tests/fixtures/parity/{<ckpt>/cases.jsonl,<ckpt>/rows.jsonl,meta.json}
#   tests/fixtures/{ckpt,parity}/modernbert-tiny-<variant>/  (encoder variants, make_variants.py)
#   tests/fixtures/act/values.json  (torch's ACT2FN activations element by element, make_act_values.py)
#   tests/fixtures/email/cases.jsonl and src/core/email_tables.c  (email cleaning)
#   tests/fixtures/confidence/cases.jsonl  (the confidence helpers, gen_confidence.py)
#   tests/fixtures/surfaces/presets_api.jsonl  (the preset builders' shape, gen_presets_api.py)
#   tests/fixtures/calibrate/cases.json  (temperature fitting, gen_calibrate.py)
#   tests/fixtures/lang/cases.jsonl  (detect_language / detect_script / is_english, gen_lang.py)
#   tests/fixtures/shortlist/{<ckpt>/embed.jsonl,<ckpt>/cases.jsonl,<ckpt>/tournament.jsonl,meta.json}
# Every step is deterministic: on the same versions a re-run leaves `git status` clean.
#
# Usage: tools/ref/regen.sh [tokenizers|checkpoints|parity|variants|email|lang|confidence|shortlist|all]   (default all)
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
repo="$(cd "$here/../.." && pwd)"
venv="${LAYA_REF_VENV:-$here/.venv}"
py="$venv/bin/python"
[ -x "$py" ] || { echo "no reference venv at $venv; run tools/ref/setup.sh first" >&2; exit 1; }
export PYTHONHASHSEED=0
what="${1:-all}"
cd "$repo"
case "$what" in
  tokenizers|all) "$py" "$here/make_tokenizers.py" ;;&
  checkpoints|all) "$py" "$here/make_checkpoints.py"
                   for d in tests/fixtures/ckpt/*/; do [ ! -f "$d/SHA256SUMS" ] || (cd "$d" && sha256sum --quiet -c SHA256SUMS); done ;;&
  parity|all) "$py" "$here/gen_parity.py" ;;&
  variants|all) "$py" "$here/make_variants.py"
                "$py" "$here/make_act_values.py" ;;&
  lang|all) "$py" "$here/gen_lang.py" ;;&
  confidence|all) "$py" "$here/gen_confidence.py"
                  "$py" "$here/gen_presets_api.py"
                  "$py" "$here/gen_calibrate.py" ;;&
  email|all) "$py" "$here/email_tables.py" src/core/email_tables.c
             "$py" "$here/gen_email.py" ;;&
  shortlist|all) "$py" "$here/gen_shortlist.py"
                 "$py" "$here/gen_tournament.py" ;;&
  tokenizers|checkpoints|parity|variants|email|shortlist|all) ;;
  *) echo "usage: $0 [tokenizers|checkpoints|parity|variants|email|shortlist|all]" >&2; exit 2 ;;
esac
