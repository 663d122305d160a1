#!/usr/bin/env bash
# Every GPU test (`-m gpu`) on one GPU machine, spread round-robin over PROCS pytest processes side by side:
# the tests are compile-bound (TileLang and nvcc on the host's cores), so one process per file left most of
# 16 cores idle and ran out of the 220 s a call gave it (2026-11-23: 9 of test_ops_gpu's 27 tests).
#   bash benchmarks/gpu-tests.sh [PROCS] [LIMIT_S] [PYTEST_ARGS...]   (from the project root, TileLang set up)
# Logs under ${OUT:-gpu-tests-out}/gpu-tests/; prints each process's summary line, then the failures.
set -uo pipefail
procs=${1:-8}
limit=${2:-400}
shift $(( $# < 2 ? $# : 2 ))
out="${OUT:-gpu-tests-out}/gpu-tests"
mkdir -p "$out"
python -m pytest -q -m gpu --collect-only -p no:cacheprovider "$@" tests 2>/dev/null | grep '::' > "$out/ids.txt"
grep -q ' ' "$out/ids.txt" && { echo "a test id holds a space; this script splits ids on spaces"; exit 2; }
echo "$(wc -l < "$out/ids.txt") GPU tests over $procs processes"
for ((i = 0; i < procs; i++)); do
  awk -v i=$i -v n=$procs 'NR % n == i' "$out/ids.txt" > "$out/ids-$i.txt"
  [ -s "$out/ids-$i.txt" ] || continue
  timeout "$limit" python -m pytest -q -m gpu -p no:cacheprovider -rfEx "$@" $(cat "$out/ids-$i.txt") \
    > "$out/part-$i.txt" 2>&1 &
done
wait
for f in "$out"/part-*.txt; do echo "$(basename "$f" .txt): $(tail -1 "$f")"; done
grep -h "^FAILED\|^ERROR" "$out"/part-*.txt || echo "no failures reported"
