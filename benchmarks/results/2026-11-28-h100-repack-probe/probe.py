# The probe as run on one H100, 2026-11-28 (from .scratch/repack.py, the tree at 9c1c7a9), laid out for the linter
# (its unused names dropped): four ways to copy an fp16 4096 x K operand into rows 16 bytes apart, timed from CUDA
# graphs over four operands, alternating rounds. Not part of the package.
import tilelang
import tilelang.language as T
import torch
import torch.nn.functional as F

from pt_tvm.measure import capture, time_samplers

M = 4096


def tl_repack(M, K, Kp, dtype="float16", block=1024, threads=128):
    @T.prim_func
    def repack(src: T.Tensor((M * K,), dtype), dst: T.StridedTensor((M, K), (Kp, 1), dtype)):
        with T.Kernel(T.ceildiv(M * K, block), threads=threads) as bx:
            for i in T.Parallel(block):
                idx = bx * block + i
                if idx < M * K:
                    dst[idx // K, idx % K] = src[idx]

    return tilelang.compile(repack, out_idx=[], target="cuda")


for K in (4001, 4004):
    Kp = -(-K // 8) * 8
    sets = [(torch.randn(M, K, device="cuda", dtype=torch.half),) for _ in range(4)]
    dst = torch.empty(M, Kp, device="cuda", dtype=torch.half)[:, :K]
    k = tl_repack(M, K, Kp)
    fns = {"copy_": lambda a: dst.copy_(a), "pad": lambda a: F.pad(a, (0, Kp - K)),
           "cat": lambda a: torch.cat([a, a.new_zeros(M, Kp - K)], 1), "tilelang flat": lambda a: k(a.view(-1), dst)}
    if K % 2 == 0:
        d32 = torch.empty(M, Kp // 2, device="cuda", dtype=torch.int32)[:, :K // 2]
        fns["int32 view"] = lambda a: d32.copy_(a.view(torch.int32))
    a = sets[0][0]
    for n, f in fns.items():
        if n in ("copy_", "tilelang flat"):
            dst.zero_()
            f(a)
            assert torch.equal(dst, a), n
    g = {n: capture(f, sets) for n, f in fns.items()}
    t = time_samplers(g, rounds=5, round_ms=50)
    for n, v in t.items():
        print(f"K={K} {n:14} {v.ms * 1e3:7.1f} us  {2 * M * K * 2 / (v.ms * 1e-3) / 1e12:.2f} TB/s (read+write)")
