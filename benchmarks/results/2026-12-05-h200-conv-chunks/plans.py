"""Step 3 of run.sh: at 4 x 4096 x 4353 fp16, the search's pick and the best plan of five other tiles the search
ranks, beside torch.compile of the reference, every output checked (benchmarks.experiments.variants.compare)."""
import os

from benchmarks.experiments.variants import compare


def picks(result, vdev):
    out, seen = {"pick": result.best}, {(str(result.best.plan.tile), result.best.plan.num_stages)}
    for c in result.ranked:
        key = (str(c.plan.tile), c.plan.num_stages)
        if key not in seen and len(out) < 6:
            seen.add(key)
            out[f"ranked {len(out)}"] = c
    return out


if __name__ == "__main__":
    compare([{"batch": 4, "seqlen": 4096, "channels": 4353, "x_stride": 4353, "dtype": "float16",
              "note": "4353 channels"}], picks, ["pick", *(f"ranked {i}" for i in range(1, 6))], os.environ["OUT"],
            "plans.json", "python benchmarks/results/2026-12-05-h200-conv-chunks/plans.py", deadline_s=200,
            template="causal_conv1d", peer="torch-compile", settle_ms=300.0, rounds=5)
