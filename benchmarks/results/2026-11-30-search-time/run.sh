#!/bin/bash
# pt-tvm's cost-model search on this 2-core CPU (no GPU) before and after the search changes of 91284d8 and 1adf35e
# (the local search's moves that keep their own dependences; one simulation a plan for the price and the deadlock
# rule; two phases: every tile's base plans, then the refinement of the configurations priced within 1.25 of the
# best base plan of all tiles), on the search-time configs (342d584 added decoding and chunk_scan to them; the
# "before" tree is e141ab9 with that config list copied in). Both ran at once, one a core, 2026-11-30:
#   (cd e141ab9-worktree && PT_TVM_GIT_COMMIT=e141ab9 python -m benchmarks search-time --target h100 --out search-time-h100-e141ab9.json)
#   python -m benchmarks search-time --target h100 --out search-time-h100-1adf35e.json
# Every config found the same best plan at the same predicted time both ways (the rows' best_plan, predicted_ms).
# The bound against none on 81 configs (every attention-core, gemm and mamba config, every eleventh of the decode
# grid; H200 model; at e9e3c3b, two processes, one a core):
#   python -m benchmarks.experiments.search_bound . 0/2 & python -m benchmarks.experiments.search_bound . 1/2
# search-bound-*.jsonl: the best four (note and predicted time) the same on all 81; the bounded search 1.3-2.5x
# faster in sum per template (decoding 2.45x, FlashAttention 1.51x, GEMM 1.31x), beside the two changes before it.
