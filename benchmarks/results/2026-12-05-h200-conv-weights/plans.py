"""Step 3 of run.sh: at 4 x 4096 x 4353 fp16, the search's pick, the best plan of the next four tiles the search
ranks and of two named tiles (the twin's pick and 715d540's pick at 4353), beside torch.compile of the reference,
every output checked (benchmarks.experiments.variants.compare)."""
import os

from benchmarks.experiments.variants import compare


def _tile(c):
    """The candidate's tile less `stage_y`: rows TMA cannot address are staged for their chunked store either way."""
    return str({k: v for k, v in c.plan.tile.items() if k != "stage_y"})


NAMED = {(128, 64, 256): "twin's tile", (64, 64, 256): "715d540's tile"}


def picks(result, vdev):
    out, seen, ranked = {"pick": result.best}, {_tile(result.best)}, 0
    for c in sorted(result.ranked, key=lambda c: c.estimate.seconds):
        name = NAMED.get((c.plan.tile["block_L"], c.plan.tile["block_D"], c.plan.tile["block_S"]))
        if _tile(c) in seen or not (name or ranked < 4):
            continue
        seen.add(_tile(c))
        if not name:
            ranked += 1
        out[name or f"ranked {ranked}"] = c
    return out


if __name__ == "__main__":
    compare([{"batch": 4, "seqlen": 4096, "channels": 4353, "x_stride": 4353, "dtype": "float16",
              "note": "4353 channels"}], picks, ["pick", *(f"ranked {i}" for i in range(1, 5)), *NAMED.values()],
            os.environ["OUT"],
            "plans.json", "python benchmarks/results/2026-12-05-h200-conv-weights/plans.py", deadline_s=200,
            template="causal_conv1d", peer="torch-compile", settle_ms=300.0, rounds=5)
