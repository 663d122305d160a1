"""Probe (2026-11-30, one H200): chunk_scan at 4000 tokens (16 chunks, the last 160 of 256 positions) ran 6% slower
than at 4096 with the same tiles and plan (2026-11-30-h200-ragged-settled). Each shape's pick, its output checked
against float32, is called once inside the NVTX range ``profile`` for Nsight Compute (run.sh), then ``compare``
prints the metrics that could tell the two launches apart.

    ncu --nvtx --nvtx-include profile/ ... python benchmarks/results/2026-11-30-h200-chunk-scan-ragged/profile.py
    python benchmarks/results/2026-11-30-h200-chunk-scan-ragged/profile.py compare raw.csv.gz
"""
import csv
import gzip
import sys

PROBLEM = {"batch": 4, "heads": 64, "headdim": 64, "dstate": 128, "chunk": 256, "groups": 1}
SEQLENS = (4000, 4096)
METRICS = [
    "gpu__time_duration.sum", "smsp__cycles_elapsed.avg.per_second", "sm__throughput.avg.pct_of_peak_sustained_elapsed",
    "dram__bytes_read.sum", "dram__bytes_write.sum", "lts__t_bytes.sum", "lts__t_sector_hit_rate.pct",
    "l1tex__t_bytes.sum", "sm__inst_executed.sum", "sm__warps_active.avg.pct_of_peak_sustained_active",
    "sm__pipe_tensor_cycles_active.avg.pct_of_peak_sustained_active", "launch__registers_per_thread",
    "launch__occupancy_limit_registers", "launch__occupancy_limit_shared_mem", "launch__grid_size",
    "lts__average_gcomp_input_sector_success_rate.pct", "l1tex__data_bank_conflicts_pipe_lsu_mem_shared.sum",
]
STALL = "smsp__pcsamp_warps_issue_stalled_"


def run() -> int:
    import torch

    from pt_tvm import hw, templates
    from pt_tvm.compiler import planned_func, schedule_template
    from pt_tvm.measure import REL_TOL, as_outputs, check_call

    vdev = hw.from_device()
    tmpl = templates.get("chunk_scan")
    failed, kernels = 0, []
    for seqlen in SEQLENS:
        result, problem, _ = schedule_template("chunk_scan", vdev, params={**PROBLEM, "seqlen": seqlen})
        kernel = tmpl.compile(planned_func("chunk_scan", problem, result.best, vdev), vdev.tvm_target())
        shape = {k: v for k, v in problem.items() if k not in tmpl.tile}
        inputs = tmpl.make_inputs(shape, "cuda", torch.Generator("cuda").manual_seed(7))
        err = max(c.rel_err for c in check_call(kernel, inputs, as_outputs(tmpl.reference(*inputs, **shape)),
                                                inout=tmpl.inout_idx))
        failed += err >= REL_TOL[shape["dtype"]]
        print(f"seqlen {seqlen}: rel_err {err:.2e}; tile {dict(result.best.plan.tile)}, {result.best.note}",
              flush=True)
        kernels.append((kernel, inputs))
    for kernel, inputs in kernels:  # warm, then one launch each in the profiled range
        kernel(*inputs)
    torch.cuda.synchronize()
    torch.cuda.nvtx.range_push("profile")
    for kernel, inputs in kernels:
        kernel(*inputs)
    torch.cuda.synchronize()
    torch.cuda.nvtx.range_pop()
    return failed


def compare(path: str) -> None:
    """The two launches' metrics side by side (ncu's raw page: a header row, a units row, a row per launch)."""
    with gzip.open(path, "rt") if path.endswith(".gz") else open(path) as f:
        rows = [r for r in csv.reader(f) if len(r) > 10]
    head, units, launches = rows[0], rows[1], rows[2:]
    col = {name: i for i, name in enumerate(head)}
    print(f"{'metric':<66} " + "  ".join(f"{s:>14}" for s in SEQLENS))
    for m in METRICS + sorted(n for n in head if n.startswith(STALL) and not n.endswith("_not_issued.sum")):
        if m in col:
            print(f"{m[:60]:<60} {units[col[m]][:5]:>5} " + "  ".join(f"{r[col[m]]:>14}" for r in launches))


if __name__ == "__main__":
    if sys.argv[1:2] == ["compare"]:
        compare(sys.argv[2])
    else:
        sys.exit(run())
