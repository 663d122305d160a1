#!/usr/bin/env bash
# Every GPU test (`-m gpu`) on one GPU machine, in chunks of CHUNK tests (default 3, in file order, so a chunk
# shares its module's fixtures) that PROCS pytest processes take in turn as they finish: the tests are
# compile-bound (TileLang and nvcc on the host's cores), one process per file left most of 16 cores idle and ran
# out of the 220 s a call gave it (2026-11-23), and a fixed round-robin split left one of 16 processes at 447 s
# where the mean was 217 (one H200, 2026-11-29, benchmarks/results/2026-11-29-h200-gpu-tests-1d9fa65).
#   bash benchmarks/gpu-tests.sh [PROCS] [LIMIT_S] [PYTEST_ARGS...]   (from the project root, TileLang set up)
# PYTEST_ARGS that name tests or test files (`tests/x.py::test_y[id]`, `tests/x.py`) are what to collect and spread
# (all of tests/ without them); the others (`-k EXPR`, ...) go to the collection and to every process. No chunk
# starts after LIMIT_S, and a running one is stopped there.
# Writes one file, ${OUT:-gpu-tests-out}/gpu-tests.txt: the summary (the outcome counts, the failures, the tests
# no process reached before the limit), then every chunk's log, passed tests' output included (the relative errors
# they print; a device call returns at most 8 files: one log per process lost them all on 2026-11-23). Prints the
# summary.
set -uo pipefail
procs=${1:-8}
limit=${2:-400}
shift $(( $# < 2 ? $# : 2 ))
out="${OUT:-gpu-tests-out}"
work=$(mktemp -d)
mkdir -p "$out"
named=() opts=()
for a in "$@"; do [[ $a == *::* || ( $a == *.py && -f $a ) ]] && named+=("$a") || opts+=("$a"); done
python -m pytest -q -m gpu --collect-only -p no:cacheprovider "${opts[@]}" "${named[@]:-tests}" 2>/dev/null \
  | grep '::' > "$work/ids.txt"
grep -q ' ' "$work/ids.txt" && { echo "a test id holds a space; this script splits ids on spaces"; exit 2; }
split -l "${CHUNK:-3}" -d -a 3 "$work/ids.txt" "$work/chunk-"
if (( ${#opts[@]} )); then printf '%s\0' "${opts[@]}"; fi > "$work/opts"
export work deadline=$(( $(date +%s) + limit ))

run_chunk() {  # one chunk in one pytest process, with what is left of the limit; none once it is spent
  local left=$(( deadline - $(date +%s) )) opts=()
  (( left > 5 )) || return 0
  mapfile -d '' opts < "$work/opts"
  timeout "$left" python -m pytest -v -m gpu -p no:cacheprovider -rfExP "${opts[@]}" $(cat "$1") > "$1.log" 2>&1
}
export -f run_chunk
ls "$work"/chunk-??? | xargs -P "$procs" -I{} bash -c 'run_chunk "$1"' _ {}
{
  outcomes=$(cat "$work"/chunk-*.log 2>/dev/null \
    | grep -oE '^tests/[^ ]+::[^ ]+ (PASSED|FAILED|SKIPPED|XFAIL|XPASS|ERROR)' | sort -u)
  echo "$(wc -l < "$work/ids.txt") GPU tests in chunks of ${CHUNK:-3} over $procs processes, $limit s in all:" \
    "$(echo "$outcomes" | grep -o '[A-Z]*$' | sort | uniq -c | awk '{printf "%s%d %s", (NR > 1 ? ", " : ""), $1, $2}')"
  grep -h "^FAILED\|^ERROR" "$work"/chunk-*.log || echo "no failures reported"
  missed=$(grep -vxFf <(echo "$outcomes" | cut -d' ' -f1) "$work/ids.txt")
  echo "not reached before the limit: $(echo -n "$missed" | grep -c .)"
  [ -n "$missed" ] && echo "$missed" | sed 's/^/  /'
  echo "slowest chunks (s): $(grep -hoE ' in [0-9.]+s' "$work"/chunk-*.log | grep -oE '[0-9.]+' | sort -rn | head -3 \
    | tr '\n' ' ')"
} | tee "$work/summary.txt"
for f in "$work/summary.txt" "$work"/chunk-*.log; do echo "==== $(basename "$f")"; cat "$f"; echo; done \
  > "$out/gpu-tests.txt"
rm -rf "$work"
