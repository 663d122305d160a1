#!/bin/bash
# GPU smoke check of the benchmark harness on ONE H100 (nvidia-h100-x1): every output checked in
# NaN-prefilled memory, timing queued and from a CUDA graph, TileLang's autotuner and role-based
# warp-specialized peers. Two device calls on one warm machine, from the project root (what travels per
# call is capped at 64 MiB, so the bundles come in two calls):
#   bash benchmarks/smoke-gpu.sh tests COMMIT   carry .gpu-bundle .gpu-peers/a   GPU tests of the path, ~5 min
#   bash benchmarks/smoke-gpu.sh smoke COMMIT   carry .gpu-peers/b               smoke suite + report, ~7 min
# $OUT gets gpu-tests.log, smoke.json, smoke.log and smoke/ (table.md and charts).
set -u
step=$1
export PT_TVM_GIT_COMMIT=${2:-unknown}
source benchmarks/gpu-env.sh
env_setup || exit 1
case $step in
  tests) nvidia-smi -L
         timeout 540 python -m pytest -m gpu -q -rP -n 8 tests/test_templates_gpu.py > $OUT/gpu-tests.log 2>&1
         echo "tests: rc=$?"; grep -h "REL_ERR\|TIMING" $OUT/gpu-tests.log | cut -c1-160; tail -3 $OUT/gpu-tests.log ;;
  smoke) timeout 560 python -m benchmarks run --suite smoke --tune-top-k 2 --rep-ms 200 --autotune-stages 2 \
           --out $OUT/smoke.json > $OUT/smoke.log 2>&1
         echo "smoke: rc=$?"
         python -m benchmarks report $OUT/smoke.json --out-dir $OUT/smoke | head -1
         python - $OUT/smoke.json <<'PY'
import json, sys
run = json.load(open(sys.argv[1]))
print("wall_s", run["header"].get("wall_s"), "partial", run["header"].get("partial"), "sms", run["header"].get("sms"))
for r in run["rows"]:
    q, g = r.get("queued") or {}, r.get("graph") or {}
    us = lambda ms: f"{ms * 1e3:9.1f}" if ms else "        -"
    print(f"{r['kernel'][:10]:<10} {r['config'].get('dim', r['config'].get('M'))!s:<5} {r['system']:<17} "
          f"valid={r['valid']!s:<5} {r.get('timing', '-'):<10} graph{us(g.get('ms'))} us queued{us(q.get('ms'))} us "
          f"waves={r.get('waves')} prefill={r.get('prefill')} {(r.get('error') or r.get('graph_error') or '')[:70]}")
PY
         grep -h "geomean" $OUT/smoke.log | cut -c1-200 ;;
  *) echo "usage: bash benchmarks/smoke-gpu.sh tests|smoke COMMIT" >&2; exit 2 ;;
esac
