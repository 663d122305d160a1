#!/bin/bash
# pt-tvm's cost-model search on this 2-core CPU (no GPU) before and after the search changes of 91284d8 and 1adf35e
# (the local search's moves that keep their own dependences; one simulation a plan for the price and the deadlock
# rule; two phases: every tile's base plans, then the refinement of the configurations priced within 1.25 of the
# best base plan of all tiles), on the search-time configs (342d584 added decoding and chunk_scan to them; the
# "before" tree is e141ab9 with that config list copied in). Both ran at once, one a core, 2026-11-30:
#   (cd e141ab9-worktree && PT_TVM_GIT_COMMIT=e141ab9 python -m benchmarks search-time --target h100 --out search-time-h100-e141ab9.json)
#   python -m benchmarks search-time --target h100 --out search-time-h100-1adf35e.json
# Every config found the same best plan at the same predicted time both ways (the rows' best_plan, predicted_ms).
