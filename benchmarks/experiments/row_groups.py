"""GPU experiment (issue 14 item 1): GEMMs whose output or input rows start off 16-byte boundaries, four ways.

GPT-2's lm_head (2048 x 768 -> 50257) and a vocabulary of 32001 (8192 x 4096) give ``C`` rows that no tensor map
addresses one by one, an fp16 K of 4001 (4096 x 4096) ``A`` rows. The gemm template takes a tile's rows 8 or 16
apart there (``row_group``; rows that far apart lie on 16- or 32-byte boundaries), so that its staged tile is one
TMA store away, or its ``A`` tiles one TMA load; ``row_group=1`` keeps consecutive rows, which TileLang stores (loads)
an element a thread, and at K = 4001 ``lda`` 4008 reads ``A``'s rows kept 16 bytes apart by TMA. Each variant runs the
search's plan at one pinned tile per shape (the tile-multiple twin's pick), timed in one process from CUDA graphs in
alternating, settled rounds beside the twin (N = 50304, 32000; K = 3968), every output checked against float32 on
fresh inputs. ``python -m benchmarks.experiments.row_groups $OUT [SHAPE]`` (the shapes whose label holds SHAPE:
``lm_head``, ``vocab``, ``K 4001``) writes ``row_groups.json`` (``row_groups-SHAPE.json``) and prints a table.
"""
import json
import os
import sys

DTYPE = "float16"
VARIANTS = {"element-wise (rows 1 apart)": {"row_group": 1}, "rows 8 apart": {"row_group": 8},
            "rows 16 apart": {"row_group": 16}}
# (label, problem, the twin's sizes, the pinned tile, the variants: consecutive rows of 1001 elements need a
# software pipeline, whose 128 threads cannot hold a 128 x 256 tile's accumulators)
SHAPES = (
    ("GPT-2 lm_head", {"M": 2048, "N": 50257, "K": 768, "trans_B": True}, {"N": 50304},
     {"block_M": 128, "block_N": 256, "block_K": 64, "threads": 128}, VARIANTS),
    ("vocab 32001", {"M": 8192, "N": 32001, "K": 4096, "trans_B": True}, {"N": 32000},
     {"block_M": 256, "block_N": 160, "block_K": 64, "threads": 128}, VARIANTS),
    ("A rows K 4001", {"M": 4096, "N": 4096, "K": 4001}, {"K": 3968},
     {"block_M": 128, "block_N": 256, "block_K": 64, "threads": 128},
     {"rows 8 apart": {"row_group": 8}, "rows 16 apart": {"row_group": 16},
      "rows 16 bytes apart (lda 4008)": {"lda": 4008, "row_group": 1}}),
)


def run(out_dir: str, only: str = "") -> None:
    import torch

    from benchmarks.suite import header
    from pt_tvm import hw, templates
    from pt_tvm.compiler import schedule_template
    from pt_tvm.measure import GRAPH, REL_TOL, capture, rel_err, time_samplers

    vdev = hw.from_device()
    gemm = templates.get("gemm")

    rows, samplers = [], {}
    for label, base, twin, tile, variants in (s for s in SHAPES if only in s[0]):
        cases = {"twin": {**twin, "row_group": 0}, **variants}
        for name, change in cases.items():
            params = {**base, "dtype": DTYPE, **tile, **change}
            result, problem, build = schedule_template("gemm", vdev, params=params)
            kernel = gemm.compile(build(), vdev.tvm_target())
            make = lambda seed: gemm.make_inputs(problem, "cuda", torch.Generator("cuda").manual_seed(seed))  # noqa: E731
            a, b = make(1)
            err = rel_err(kernel(a, b).float(), a.float() @ (b.float().T if base.get("trans_B") else b.float()))
            sets = [make(seed) for seed in (2, 3)]
            rows.append({"shape": label, "system": name, **{k: problem[k] for k in ("M", "N", "K")},
                         "row_group": change.get("row_group", 0), "lda": change.get("lda", 0), "tile": tile,
                         "plan": result.best.note, "predicted_ms": result.best.seconds * 1e3, "rel_err": err,
                         "valid": err < REL_TOL[DTYPE]})
            samplers[(label, name)] = capture(kernel, sets)
    times = time_samplers(samplers, rounds=9, round_ms=150.0, settle_ms=300.0)
    for row in rows:
        t = times[(row["shape"], row["system"])]
        row.update(ms=t.ms, p20_ms=t.p20, p80_ms=t.p80,
                   tflops=2.0 * row["M"] * row["N"] * row["K"] / (t.ms * 1e-3) / 1e12)
    for row in rows:
        twin = next(r for r in rows if r["shape"] == row["shape"] and r["system"] == "twin")
        row["over_twin"] = row["tflops"] / twin["tflops"]
    result = {"header": header("python -m benchmarks.experiments.row_groups $OUT", torch.cuda.get_device_name()),
              "dtype": DTYPE, "timing": GRAPH, "bar": 0.95, "rows": rows}
    with open(os.path.join(out_dir, f"row_groups{'-' + only.split()[0] if only else ''}.json"), "w") as f:
        json.dump(result, f, indent=1)
    print(f"{torch.cuda.get_device_name()}; {DTYPE}; timing {GRAPH}; TFLOP/s over the twin's (bar 0.95)")
    for row in rows:
        print(f"{row['shape']:14} {row['system']:30} N={row['N']:<6} K={row['K']:<5} {row['tflops']:5.0f} TFLOP/s  "
              f"{row['over_twin']:.3f}  {row['ms'] * 1e3:7.1f} us ({row['p20_ms'] * 1e3:.1f}-{row['p80_ms'] * 1e3:.1f})"
              f"  predicted {row['predicted_ms'] * 1e3:.1f}  rel_err {row['rel_err']:.1e}"
              f"{'' if row['valid'] else ' WRONG'}")


if __name__ == "__main__":
    run(sys.argv[1] if len(sys.argv) > 1 else os.environ["OUT"], " ".join(sys.argv[2:]))
