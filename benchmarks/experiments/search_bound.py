"""CPU experiment: the search bounded to configurations near the best (SearchSpace.local_within) against no bound.

For every config of the attention-core, gemm and mamba suites and every eleventh of the decode grid, the search
runs twice on the H200 model, with the default bound and with none; the best four candidates (note and predicted
time) must be the same. Writes one JSON line a config (both times, plans considered, whether the four agree) and
prints the count of those that differ.

Run from the project root: ``python -m benchmarks.experiments.search_bound OUT [I/N]`` (configs I, I+N, ... only,
to spread the work over N processes). ``python -m benchmarks.experiments.search_bound OUT I/N --against RUN.json``
instead searches every pt-tvm config of a recorded dry run (``benchmarks run --dry-run``) again and compares the
candidates the tuner would measure (note, tile, predicted time) with the recorded ones.
"""
import json
import math
import os
import sys
import time
from dataclasses import replace

from benchmarks import decode
from benchmarks.configs import suite_configs
from benchmarks.runfile import load_run
from pt_tvm import hw
from pt_tvm.compiler import schedule_template
from pt_tvm.search import SearchSpace
from pt_tvm.tune import diverse_top

DECODE_EVERY = 11


def cases() -> list[tuple[str, dict]]:
    out = [(c.kernel, dict(c.problem)) for s in ("attention-core", "gemm", "mamba") for c in suite_configs(s)]
    return out + [(c.kernel, dict(c.problem)) for c in decode.configs()[::DECODE_EVERY]]


def compare(kernel: str, problem: dict, vdev) -> dict:
    row = {"kernel": kernel, "problem": problem}
    best = {}
    for name, within in (("unbounded", math.inf), ("bounded", SearchSpace().local_within)):
        t0 = time.perf_counter()
        result, _, _ = schedule_template(kernel, vdev, params=problem, jobs=1,
                                         space=replace(SearchSpace(), local_within=within))
        row[f"{name}_s"], row[f"{name}_considered"] = round(time.perf_counter() - t0, 2), result.considered
        best[name] = [(c.note, c.seconds) for c in result.ranked[:4]]
    row["same_best_four"] = best["bounded"] == best["unbounded"]
    if not row["same_best_four"]:
        row["best_four"] = best
    return row


def against(row: dict, vdev) -> dict:
    """A recorded dry run's row searched again: the tuner's candidates now against those recorded."""
    t0 = time.perf_counter()
    result, _, _ = schedule_template(row["kernel"], vdev, params=row["config"], jobs=1)
    now = [{"note": c.note, "tile": dict(c.plan.tile), "predicted_ms": c.seconds * 1e3}
           for c in diverse_top(result, len(row["tune_candidates"]))]
    return {"kernel": row["kernel"], "problem": row["config"], "s": round(time.perf_counter() - t0, 2),
            "recorded_s": row.get("search_wall_s"), "same_candidates": now == row["tune_candidates"],
            **({} if now == row["tune_candidates"] else {"now": now, "recorded": row["tune_candidates"]})}


def main(out_dir: str, part: str = "0/1", *rest: str) -> int:
    i, n = (int(x) for x in part.split("/"))
    os.makedirs(out_dir, exist_ok=True)
    vdev = hw.get("h200")
    rows = []
    if rest[:1] == ("--against",):
        recorded = [r for r in load_run(rest[1])["rows"] if r["system"] == "pt-tvm" and r.get("tune_candidates")]
        name, jobs, check, same = "against", recorded[i::n], against, "same_candidates"
    else:
        name, jobs, check, same = "search-bound", cases()[i::n], lambda job, vdev: compare(*job, vdev), "same_best_four"
    with open(os.path.join(out_dir, f"{name}-{i}of{n}.jsonl"), "w") as f:
        for job in jobs:
            rows.append(check(job, vdev))
            f.write(json.dumps(rows[-1], default=str) + "\n")
            f.flush()
    print(f"{sum(not r[same] for r in rows)} of {len(rows)} configs differ ({same} false)")
    return 0


if __name__ == "__main__":
    sys.exit(main(*sys.argv[1:]))
