"""GPU probe (issue 14, ragged shapes): GPT-2's lm_head output, rows of 100514 bytes that no tensor map describes,
stored by TMA through the rows 8 apart (804112 bytes, a multiple of 16): ``C`` viewed as ``[M / 8, 8 N]``, whose row
``k`` holds C's rows ``8k .. 8k + 7`` end to end, so a tile's rows of one residue are one 2-D box at an element
coordinate. The staged tile is written with its rows grouped by residue, unswizzled (at 39ea65f, swizzled, the
stores stopped the kernel: illegal instruction), then stored in 8 TMA stores. The probe
kernel covers the column tiles that end inside a row (50176 of 50257 columns; the last, partial tile would run
into the next row); it is timed beside the template's kernels at N = 50257 (element stores) and at its
tile-multiple twin 50304 (TMA store), each checked against float32 on fresh random inputs (the probe on the
columns it writes), TFLOP/s over the columns each computes, CUDA graphs, alternating rounds.

Run from the project root on the GPU machine: ``python -m benchmarks.experiments.residue_rows $OUT``.
"""
import json
import os
import sys

import tilelang.language as T
import torch
from tilelang.layout import make_linear_layout

from benchmarks.suite import header
from pt_tvm import hw, templates
from pt_tvm.compiler import compile as compile_planned
from pt_tvm.compiler import planned_func, schedule_template
from pt_tvm.measure import REL_TOL, capture, input_sets, rel_err, time_samplers

M, N, K, BM, BN, BK = 2048, 50257, 768, 128, 256, 64
MAIN = N // BN * BN
RESIDUES = tuple(range(8))  # a Python iterable: the builder unrolls a loop over it


def residue_kernel():
    """``C[:, :MAIN] = A @ B[:MAIN].T`` into ``Cv = C.view(M // 8, 8 * N)``, 8 TMA stores a tile."""
    f16, f32 = "float16", "float32"

    @T.prim_func
    def lm_head(A: T.Tensor((M, K), f16), B: T.Tensor((N, K), f16), Cv: T.Tensor((M // 8, 8 * N), f16)):
        with T.Kernel(MAIN // BN, M // BM, threads=128) as (bx, by):
            A_s = T.alloc_shared((BM, BK), f16)
            B_s = T.alloc_shared((BN, BK), f16)
            C_l = T.alloc_fragment((BM, BN), f32)
            C_s = T.alloc_shared((8, BM // 8, BN), f16)
            T.annotate_layout({C_s: make_linear_layout(C_s)})  # no swizzle: a swizzled box must start aligned
            T.clear(C_l)
            for k in T.Pipelined(T.ceildiv(K, BK), num_stages=3):
                T.copy(A[by * BM, k * BK], A_s)
                T.copy(B[bx * BN, k * BK], B_s)
                T.gemm(A_s, B_s, C_l, transpose_B=True)
            for i, j in T.Parallel(BM, BN):
                C_s[i % 8, i // 8, j] = C_l[i, j]
            for q in RESIDUES:
                T.copy(C_s[q, :, :], Cv[by * (BM // 8):(by + 1) * (BM // 8), q * N + bx * BN:q * N + bx * BN + BN])

    return lm_head


def main(out_dir: str) -> None:
    vdev = hw.from_device()
    tmpl = templates.get("gemm")
    gen = torch.Generator("cuda").manual_seed(0)
    samplers, info = {}, {}
    for name, n in (("twin 50304, TMA store", 50304), ("50257, element stores", N)):
        result, problem, _ = schedule_template("gemm", vdev, params={"M": M, "N": n, "K": K, "trans_B": True,
                                                                     "block_M": BM, "block_N": BN})
        kernel = tmpl.compile(planned_func("gemm", problem, result.best, vdev), vdev.tvm_target())
        make = lambda seed, p=problem: tmpl.make_inputs(p, "cuda", torch.Generator("cuda").manual_seed(seed))  # noqa: E731
        a, b = make(1_000)
        err = rel_err(kernel(a, b), (a.float() @ b.float().T))
        assert err < REL_TOL["float16"], (name, err)
        info[name] = {"plan": result.best.note, "rel_err": err, "flops": 2.0 * M * n * K}
        samplers[name] = capture(kernel, input_sets(make, (M + n) * K * 2, vdev.l2_bytes, max_sets=4))
        print(f"{name}: {result.best.note}, rel err {err:.1e}", flush=True)
    kernel = compile_planned(residue_kernel(), vdev.tvm_target())
    a = torch.randn(M, K, generator=gen, device="cuda").half()
    b = torch.randn(N, K, generator=gen, device="cuda").half()
    c = torch.full((M, N), float("nan"), device="cuda", dtype=torch.float16)
    kernel(a, b, c.view(M // 8, 8 * N))
    err = rel_err(c[:, :MAIN], a.float() @ b[:MAIN].float().T)
    assert err < REL_TOL["float16"] and torch.isnan(c[:, MAIN:]).all(), err
    name = "50257, rows 8 apart by TMA (50176 columns)"
    info[name] = {"rel_err": err, "flops": 2.0 * M * MAIN * K}
    sets = [(torch.randn(M, K, generator=gen, device="cuda").half(), torch.randn(N, K, generator=gen, device="cuda")
             .half(), torch.empty(M // 8, 8 * N, device="cuda", dtype=torch.float16)) for _ in range(4)]
    samplers[name] = capture(kernel, sets)
    print(f"{name}: rel err {err:.1e}", flush=True)
    timings = time_samplers(samplers, rounds=7, round_ms=150.0, settle_ms=300.0)
    twin = info["twin 50304, TMA store"]
    for name, t in timings.items():
        info[name].update(ms=t.ms, p20_ms=t.p20, p80_ms=t.p80, tflops=info[name]["flops"] / t.ms / 1e9)
    twin_tflops = twin["tflops"]
    for name, e in info.items():
        print(f"{name:<46} {e['ms'] * 1e3:8.1f} us  {e['tflops']:5.0f} TFLOP/s  {e['tflops'] / twin_tflops:.3f} "
              "of the twin (CUDA graphs)")
    with open(os.path.join(out_dir, "residue_rows.json"), "w") as f:
        json.dump({"header": header("python -m benchmarks.experiments.residue_rows $OUT", torch.cuda.get_device_name()),
                   "kernels": info}, f, indent=1, default=str)


if __name__ == "__main__":
    main(sys.argv[1] if len(sys.argv) > 1 else os.environ["OUT"])
