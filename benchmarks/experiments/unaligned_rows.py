"""GPU experiment (issue 14 item 1): GEMM at an fp16 K whose rows TMA cannot address, through ``pt_tvm.ops``.

A tensor map wants row strides on 16-byte boundaries; an fp16 ``A [4096, K]`` at K = 4001 (8002-byte rows) or 4004
(8008) has none, and the template's kernel then loads its tiles an element (or 8 bytes) at a time: 240 and 390
TFLOP/s against 725 at K = 3968 on one H100 (benchmarks/results/2026-11-28-h100-tma-rows). The kernel now loads
such rows by TMA in tiles of rows 16 apart (the gemm template's row groups, ``b`` lying ``[K, N]``), and
``ops.matmul`` passes ``a`` as it lies. Timed here in one process on one GPU, from CUDA graphs in alternating,
settled rounds, each output checked against float32 on fresh inputs, at M = N = 4096:

- ``op``: ``ops.matmul(a, b)`` on a contiguous ``a`` (the row-group kernel, no copy);
- ``op, copied``: the same after copying ``a`` into rows 16 bytes apart (``lda``; what the op did before);
- ``op, rows kept aligned``: the op on a view of ``a``'s K columns of a tensor whose rows the caller keeps 16
  bytes apart (the kernel alone, no copy);
- ``consecutive rows``: the template's kernel at ``row_group = 1``, loading ``a``'s rows as they are an element or
  8 bytes at a time (what the op ran before it copied);
- ``cuBLAS``: ``torch.matmul(a, b)``, at K and at the twin;

and the twin K = 3968 (the nearest multiple of 128) through the op. TFLOP/s count each K's own multiply-adds;
issue 14's bar is 0.95 of the twin's. ``python -m benchmarks.experiments.unaligned_rows $OUT`` writes
``unaligned_rows.json`` and prints a table.
"""
import importlib
import json
import os
import sys

M = N = 4096
KS = (4001, 4004)
TWIN = 3968
DTYPE = "float16"
BAR = 0.95


def run(out_dir: str) -> None:
    import torch

    import pt_tvm.ops as ops
    from benchmarks.suite import header
    from pt_tvm import hw, templates
    from pt_tvm.compiler import schedule_template
    from pt_tvm.measure import GRAPH, REL_TOL, capture, rel_err, time_samplers

    vdev = hw.from_device()
    gemm = templates.get("gemm")
    dtype = getattr(torch, DTYPE)

    def randn(*shape, seed):
        g = torch.Generator(device="cuda").manual_seed(seed)
        return torch.randn(shape, generator=g, device="cuda").to(dtype)

    def aligned_view(a):
        rows, cols = a.shape
        view = torch.empty((rows, -(-cols // 8) * 8), device="cuda", dtype=dtype)[:, :cols]
        return view.copy_(a)

    def lsu_kernel(K):
        result, problem, build = schedule_template("gemm", vdev, params={"M": M, "N": N, "K": K, "dtype": DTYPE,
                                                                        "row_group": 1})
        return gemm.compile(build(), vdev.tvm_target()), result.best.note

    tma_rows = importlib.import_module("pt_tvm.ops.gemm")._tma_rows  # the module, not the op it exports

    def copied_op(a, b):
        return ops.matmul(tma_rows(a)[0], b)

    systems, notes = {}, {}
    for K in (*KS, TWIN):
        sets = [(randn(M, K, seed=2 * s), randn(K, N, seed=2 * s + 1)) for s in range(4)]  # 4 x 64 MB: past L2
        systems[(K, "op")] = (ops.matmul, sets)
        systems[(K, "cuBLAS")] = (torch.matmul, sets)
        if K != TWIN:
            systems[(K, "op, copied")] = (copied_op, sets)
            systems[(K, "op, rows kept aligned")] = (ops.matmul, [(aligned_view(a), b) for a, b in sets])
            kernel, notes[K] = lsu_kernel(K)
            systems[(K, "consecutive rows")] = (kernel, sets)
    rows, graphs = [], {}
    for key, (fn, sets) in systems.items():
        K = key[0]
        a, b = randn(M, K, seed=101), randn(K, N, seed=102)
        if key[1] == "op, rows kept aligned":
            a = aligned_view(a)
        err = rel_err(fn(a, b).float(), a.float() @ b.float())
        rows.append({"K": K, "system": key[1], "rel_err": err, "valid": err < REL_TOL[DTYPE]})
        graphs[key] = capture(fn, sets)
    times = time_samplers(graphs, rounds=9, round_ms=150.0, settle_ms=300.0)
    twin_tflops = 2.0 * M * N * TWIN / (times[(TWIN, "op")].ms * 1e-3) / 1e12
    for row in rows:
        t = times[(row["K"], row["system"])]
        tflops = 2.0 * M * N * row["K"] / (t.ms * 1e-3) / 1e12
        row.update(ms=t.ms, p20_ms=t.p20, p80_ms=t.p80, tflops=tflops, over_twin_op=tflops / twin_tflops)
    result = {"header": header("python -m benchmarks.experiments.unaligned_rows $OUT", torch.cuda.get_device_name()),
              "M": M, "N": N, "dtype": DTYPE, "twin_K": TWIN, "bar": BAR, "timing": GRAPH,
              "consecutive_rows_plans": {str(k): v for k, v in notes.items()}, "rows": rows}
    with open(os.path.join(out_dir, "unaligned_rows.json"), "w") as f:
        json.dump(result, f, indent=1)
    print(f"{torch.cuda.get_device_name()}; M = N = {M}, {DTYPE}; timing {GRAPH}; TFLOP/s over the K = {TWIN} op's")
    for row in rows:
        print(f"K={row['K']:<5} {row['system']:24} {row['tflops']:6.0f} TFLOP/s  {row['over_twin_op']:.3f}  "
              f"{row['ms'] * 1e3:7.1f} us ({row['p20_ms'] * 1e3:.1f}-{row['p80_ms'] * 1e3:.1f})  "
              f"rel_err {row['rel_err']:.1e}{'' if row['valid'] else ' WRONG'}")


if __name__ == "__main__":
    run(sys.argv[1] if len(sys.argv) > 1 else os.environ["OUT"])
