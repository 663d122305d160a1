"""GPU experiment (issues 14, 15): what TMA multicast across a 2-CTA cluster buys the layers' small-M GEMMs.

pt-tvm's GEMMs at 512 tokens run 10-15% behind cuBLAS, whose kernels there are 1x2 clusters sharing one operand's
load (docs/NOTES-parity.md: the plans are bound by L2 reads). TileLang 0.1.15's warp-specialization passes decline
cluster kernels, so before pt-tvm emits such plans this probe measures the effect with a hand-written kernel:
``C = A @ B^T`` (``linear``'s layout), 128x256x64 tiles, 4 stages, one producer and two consumer
warpgroups (wgmma kept in flight) with explicit full/empty mbarriers, clusters of two CTAs along N.
``multicast``: CTA rank 0 loads the shared A tile into both CTAs (``T.tma_copy(cluster_mask=0b11)``) and each
CTA's consumers release a stage on both CTAs' empty barriers (a cluster barrier, remote arrive); ``unicast``: the
same kernel, each CTA loading its own A. Beside them, cuBLAS (``F.linear``) and pt-tvm's ``linear`` (the cost
model's plan), all checked against float32 on fresh
inputs and timed from CUDA graphs in settled, rotating rounds.

This kernel is a probe with a hand-written schedule, not a template: what it measures says whether the multicast
plan is worth adding to pt-tvm's plan space. Run from the project root on the GPU machine:
``python -m benchmarks.experiments.multicast_gemm $OUT``. Writes ``multicast_gemm.json``.
"""
import concurrent.futures
import json
import multiprocessing
import os
import sys
import time

import tilelang
import tilelang.language as T
import torch
import torch.nn.functional as F
from tilelang.transform import PassConfigKey

from benchmarks.suite import header
from pt_tvm.measure import REL_TOL, capture, input_sets, rel_err, time_samplers

SHAPES = [("o", 512, 4096, 4096), ("down", 512, 4096, 14336), ("qkv", 512, 6144, 4096),
          ("gate_up", 512, 28672, 4096), ("o", 4096, 4096, 4096)]
VARIANTS = ("multicast", "unicast")
_PASSES = {PassConfigKey.TL_DISABLE_THREAD_STORAGE_SYNC: True}  # the mbarriers order producer and consumer


def probe(M, N, K, multicast, bM=128, bN=256, bK=64, stages=4, dtype="float16"):
    """The hand-written cluster GEMM (see the module docstring): warpgroups 0 and 1 consume (64 rows each),
    warpgroup 2 produces; each consumer keeps one wgmma batch in flight and releases the stage before it."""
    consumers = 256

    @T.prim_func
    def gemm_cluster(A: T.Tensor((M, K), dtype), B: T.Tensor((N, K), dtype), C: T.Tensor((M, N), dtype)):
        with T.Kernel(T.ceildiv(N, bN), T.ceildiv(M, bM), threads=384, cluster_dims=(2, 1, 1)) as (bx, by):
            A_s = T.alloc_shared((stages, bM, bK), dtype)
            B_s = T.alloc_shared((stages, bN, bK), dtype)
            C_l = T.alloc_fragment((bM, bN), "float32")
            full = T.alloc_barrier([128] * stages)  # every producer thread arrives
            empty = (T.alloc_cluster_barrier([2 * consumers] * stages) if multicast
                     else T.alloc_barrier([consumers] * stages))
            rank = T.block_rank_in_cluster()
            n_k = T.ceildiv(K, bK)
            T.cluster_sync()
            with T.ws(0, 1):
                T.clear(C_l)
            for k in T.serial(n_k):
                s = k % stages
                with T.ws(2):
                    T.mbarrier_wait_parity(empty[s], ((k // stages) & 1) ^ 1)
                    if multicast:
                        T.tma_copy(A[by * bM:(by + 1) * bM, k * bK:(k + 1) * bK], A_s[s, :, :], barrier=full[s],
                                   cluster_mask=0b11)
                    else:
                        T.tma_copy(A[by * bM:(by + 1) * bM, k * bK:(k + 1) * bK], A_s[s, :, :], barrier=full[s])
                    T.tma_copy(B[bx * bN:(bx + 1) * bN, k * bK:(k + 1) * bK], B_s[s, :, :], barrier=full[s])
                    T.barrier_arrive(full[s])
                with T.ws(0, 1):
                    T.mbarrier_wait_parity(full[s], (k // stages) & 1)
                    T.wgmma_gemm(A_s[s, :, :], B_s[s, :, :], C_l, transpose_B=True, policy=T.GemmWarpPolicy.FullRow)
                    T.wait_wgmma(1)  # the batch of stage k stays in flight; stage k - 1 is read
                    if k > 0:
                        T.mbarrier_arrive(empty[(k - 1) % stages])
                        if multicast:
                            T.mbarrier_arrive(empty[(k - 1) % stages], cta_id=rank ^ 1)
            with T.ws(0, 1):
                T.wait_wgmma(0)
                T.copy(C_l, C[by * bM, bx * bN])
            T.cluster_sync()

    return gemm_cluster


def compile_probe(M, N, K, multicast):
    return tilelang.compile(probe(M, N, K, multicast), out_idx=[2], target="cuda", pass_configs=_PASSES)


def _warm(job):
    """Worker: compile one probe (TileLang's disk cache keeps it) or make pt-tvm's linear plan and kernel."""
    kind, (M, N, K), multicast = job
    try:
        if kind == "probe":
            compile_probe(M, N, K, multicast)
        else:
            import pt_tvm.ops
            pt_tvm.ops.linear(torch.zeros(M, K, dtype=torch.float16, device="cuda"),
                              torch.zeros(N, K, dtype=torch.float16, device="cuda"))
            torch.cuda.synchronize()
        return ""
    except Exception as e:
        return f"{type(e).__name__}: {str(e).strip().splitlines()[-1][:300] if str(e).strip() else ''}"


def main(out_dir):
    import pt_tvm.ops
    t0 = time.time()
    jobs = [(kind, (M, N, K), mc) for _, M, N, K in SHAPES
            for kind, mc in [("probe", True), ("probe", False), ("pt-tvm", None)]]
    with concurrent.futures.ProcessPoolExecutor(max(1, (os.cpu_count() or 2) - 1),
                                                mp_context=multiprocessing.get_context("spawn")) as pool:
        errors = dict(zip(jobs, pool.map(_warm, jobs)))
    print(f"compiled {len(jobs)} kernels in {time.time() - t0:.0f} s; errors: "
          f"{ {str(j): e for j, e in errors.items() if e} }", flush=True)
    rows = []
    for name, M, N, K in SHAPES:
        def make(seed, M=M, N=N, K=K):
            g = torch.Generator(device="cuda").manual_seed(seed)
            return (torch.randn(M, K, generator=g, device="cuda").half(),
                    torch.randn(N, K, generator=g, device="cuda").half())

        sets = input_sets(make, (M + N) * K * 2, torch.cuda.get_device_properties(0).L2_cache_size)
        a, b = make(10_000)
        ref = a.float() @ b.float().T
        fns = {"cublas": F.linear, "pt-tvm": pt_tvm.ops.linear}
        for mc, label in ((True, "multicast"), (False, "unicast")):
            if not errors[("probe", (M, N, K), mc)]:
                fns[label] = compile_probe(M, N, K, mc)
        row = {"shape": name, "M": M, "N": N, "K": K, "rel_err": {}, "ms": {}}
        checked = {}
        for label, fn in fns.items():
            try:
                row["rel_err"][label] = rel_err(fn(a, b).float(), ref)
                if row["rel_err"][label] <= REL_TOL["float16"]:
                    checked[label] = fn
            except Exception as e:  # a probe that fails to run is reported, the others timed
                row["rel_err"][label] = f"{type(e).__name__}: {e}"[:300]
        graphs = {label: capture(fn, sets) for label, fn in checked.items()}
        for label, t in time_samplers(graphs, rounds=5, warmup_ms=50.0, round_ms=60.0, settle_ms=300.0).items():
            row["ms"][label] = t.ms
        rows.append(row)
        cb = row["ms"].get("cublas")
        print(f"{name:8} M{M:<5} N{N:<6} K{K:<6} " + "  ".join(
            f"{k} {v * 1e3:7.1f} us ({cb / v:.2f}x cuBLAS)" for k, v in row["ms"].items()), flush=True)
        print(f"{'':8} rel_err {row['rel_err']}", flush=True)
        del graphs, sets
        torch.cuda.empty_cache()
    head = header("python -m benchmarks.experiments.multicast_gemm $OUT", torch.cuda.get_device_name())
    with open(os.path.join(out_dir, "multicast_gemm.json"), "w") as f:
        json.dump({"header": head, "rows": rows}, f, indent=1)


if __name__ == "__main__":
    main(sys.argv[1] if len(sys.argv) > 1 else os.environ["OUT"])
