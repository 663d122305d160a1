#!/bin/bash
# pt-tvm's cost-model search on this 2-core CPU (no GPU) before and after the search changes of 91284d8, 1adf35e and
# d66731a (the local search's moves that keep their own dependences; one simulation a plan for the price and the
# deadlock rule; two phases: every tile's base plans, then the refinement of the configurations priced within 1.25
# of the best base plan of their emission style over all tiles).
#
# 1. Search time on the search-time configs (342d584 added decoding and chunk_scan to them; the "before" tree is
#    e141ab9 with that config list copied in), both at once, one a core:
#   (cd e141ab9-worktree && PT_TVM_GIT_COMMIT=e141ab9 python -m benchmarks search-time --target h100 --out search-time-h100-e141ab9.json)
#   python -m benchmarks search-time --target h100 --out search-time-h100-3bed888.json   (HEAD: 3bed888)
#    table-*.md: each run's table. Every config found the same best plan at the same predicted time both ways.
# 2. The bound against none (H200 model), every attention-core, gemm and mamba config and every eleventh of the
#    decode grid, two processes, one a core (search-bound-*.jsonl: the best four, note and predicted time):
#   python -m benchmarks.experiments.search_bound . 0/2 & python -m benchmarks.experiments.search_bound . 1/2
# 3. The whole decode grid searched again against the 2026-11-29 dry run (69e89b4, before these changes), two
#    processes (against-*.jsonl: the tuner's candidates, note, tile and predicted time, and both search times):
#   python -m benchmarks merge ../2026-11-29-decode-dryrun/decode-*.json.gz --out /tmp/dry.json
#   python -m benchmarks.experiments.search_bound . 0/2 --against /tmp/dry.json & (the same with 1/2)
