"""CPU experiment: the search bounded to configurations near the best (SearchSpace.local_within) against no bound.

For every config of the attention-core, gemm and mamba suites and every eleventh of the decode grid, the search
runs twice on the H200 model, with the default bound and with none; the best four candidates (note and predicted
time) must be the same. Writes one JSON line a config (both times, plans considered, whether the four agree) and
prints the count of those that differ.

Run from the project root: ``python -m benchmarks.experiments.search_bound OUT [I/N]`` (configs I, I+N, ... only,
to spread the work over N processes).
"""
import json
import math
import os
import sys
import time
from dataclasses import replace

from benchmarks import decode
from benchmarks.configs import suite_configs
from pt_tvm import hw
from pt_tvm.compiler import schedule_template
from pt_tvm.search import SearchSpace

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


def main(out_dir: str, part: str = "0/1") -> int:
    i, n = (int(x) for x in part.split("/"))
    os.makedirs(out_dir, exist_ok=True)
    vdev = hw.get("h200")
    rows = []
    with open(os.path.join(out_dir, f"search-bound-{i}of{n}.jsonl"), "w") as f:
        for kernel, problem in cases()[i::n]:
            rows.append(compare(kernel, problem, vdev))
            f.write(json.dumps(rows[-1], default=str) + "\n")
            f.flush()
    print(f"{sum(not r['same_best_four'] for r in rows)} of {len(rows)} configs differ in their best four")
    return 0


if __name__ == "__main__":
    sys.exit(main(*sys.argv[1:]))
