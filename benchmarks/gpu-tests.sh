#!/usr/bin/env bash
# Every GPU test (`-m gpu`) on one GPU machine, spread round-robin over PROCS pytest processes side by side:
# the tests are compile-bound (TileLang and nvcc on the host's cores), so one process per file left most of
# 16 cores idle and ran out of the 220 s a call gave it (2026-11-23: 9 of test_ops_gpu's 27 tests).
#   bash benchmarks/gpu-tests.sh [PROCS] [LIMIT_S] [PYTEST_ARGS...]   (from the project root, TileLang set up)
# PYTEST_ARGS that name tests or test files (`tests/x.py::test_y[id]`, `tests/x.py`) are what to collect and spread
# (all of tests/ without them); the others (`-k EXPR`, ...) go to the collection and to every process.
# Writes one file, ${OUT:-gpu-tests-out}/gpu-tests.txt: the summary (each process's last line, the failures,
# the tests no process reached before the limit), then every process's log (a device call returns at most 8
# files: one log per process lost them all on 2026-11-23). Prints the summary.
set -uo pipefail
procs=${1:-8}
limit=${2:-400}
shift $(( $# < 2 ? $# : 2 ))
out="${OUT:-gpu-tests-out}"
work=$(mktemp -d)
mkdir -p "$out"
named=() opts=()
for a in "$@"; do [[ $a == *::* || ( $a == *.py && -f $a ) ]] && named+=("$a") || opts+=("$a"); done
set -- "${opts[@]}"
python -m pytest -q -m gpu --collect-only -p no:cacheprovider "$@" "${named[@]:-tests}" 2>/dev/null | grep '::' \
  > "$work/ids.txt"
grep -q ' ' "$work/ids.txt" && { echo "a test id holds a space; this script splits ids on spaces"; exit 2; }
for ((i = 0; i < procs; i++)); do
  awk -v i=$i -v n=$procs 'NR % n == i' "$work/ids.txt" > "$work/ids-$i.txt"
  [ -s "$work/ids-$i.txt" ] || continue
  timeout "$limit" python -m pytest -v -m gpu -p no:cacheprovider -rfEx "$@" $(cat "$work/ids-$i.txt") \
    > "$work/part-$i.txt" 2>&1 &
done
wait
{
  echo "$(wc -l < "$work/ids.txt") GPU tests over $procs processes, $limit s each"
  for f in "$work"/part-*.txt; do echo "$(basename "$f" .txt): $(tail -1 "$f")"; done
  grep -h "^FAILED\|^ERROR" "$work"/part-*.txt || echo "no failures reported"
  reached=$(cat "$work"/part-*.txt | grep -oE '^tests/[^ ]+::[^ ]+ (PASSED|FAILED|SKIPPED|XFAIL|XPASS|ERROR)' | cut -d' ' -f1)
  missed=$(grep -vxFf <(echo "$reached") "$work/ids.txt")
  echo "not reached before the limit: $(echo -n "$missed" | grep -c .)"
  [ -n "$missed" ] && echo "$missed" | sed 's/^/  /'
} | tee "$work/summary.txt"
for f in "$work/summary.txt" "$work"/part-*.txt; do echo "==== $(basename "$f")"; cat "$f"; echo; done > "$out/gpu-tests.txt"
rm -rf "$work"
