#!/usr/bin/env bash
# The test command: release build + its tests, then an ASan/UBSan build + its tests.
# Usage: scripts/test.sh [--exhaustive]
# CI leaves out the label `exhaustive` (full-fixture replays, each a superset of a strided test
# that does run); --exhaustive adds them to the release run. The sanitizer run leaves out `slow`
# too (whole-fixture forwards, where the sanitizers find nothing the smaller runs do not).
set -euo pipefail
cd "$(dirname "$0")/.."
skip=(-LE exhaustive)
[ "${1:-}" = "--exhaustive" ] && skip=()
scripts/setup.sh
ctest --test-dir build --output-on-failure -j "$(nproc)" "${skip[@]}"
scripts/setup.sh --sanitize
ASAN_OPTIONS=detect_leaks=1:abort_on_error=1 UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1 \
  ctest --test-dir build-asan --output-on-failure -j "$(nproc)" -LE slow
