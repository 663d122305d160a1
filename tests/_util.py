"""Helpers shared by the test files."""
import functools
import json
import math
import os
import re
import subprocess
from dataclasses import replace

import torch
import torch.nn.functional as F
from tilelang import tvm

import pt_tvm
from pt_tvm import hw
from pt_tvm.space import Priority, warp_specialized
from pt_tvm.templates import get


@functools.lru_cache(maxsize=None)
def _build(template: str, params: tuple):
    return get(template).build(**dict(params))


def nvcc_flags(arch: str = "90a") -> tuple[str, ...]:
    """nvcc's flags for a kernel TileLang emitted for ``sm_<arch>``, as TileLang compiles it (ptxas reports
    spills)."""
    from tilelang.env import CUTLASS_INCLUDE_DIR, TILELANG_TEMPLATE_PATH

    return ("--cubin", "-O3", f"-gencode=arch=compute_{arch},code=sm_{arch}", "-std=c++20",
            "-I" + TILELANG_TEMPLATE_PATH, "-I" + CUTLASS_INCLUDE_DIR, "-lineinfo", "--ptxas-options=-v",
            "--use_fast_math")


def compiles_without_spills(src: str, folder, name: str = "kernel", arch: str = "90a") -> str:
    """Compile emitted CUDA ``src`` with nvcc (in ``folder``) and assert it builds, ptxas reports no register
    spill and does not serialize the wgmmas (C7512: too few registers, as in a persistent FlashAttention walk of a
    key-tail tile; C7514: a non-wgmma instruction may touch an accumulator between a wgmma and its wait, which cost
    the varlen attention kernel 1.6x on an H200); nvcc's log."""
    cu = folder / f"{name}.cu"
    cu.write_text(src)
    p = subprocess.run(["nvcc", *nvcc_flags(arch), "-o", str(folder / f"{name}.cubin"), str(cu)],
                       capture_output=True, text=True, timeout=600)
    log = p.stdout + p.stderr
    assert p.returncode == 0, log[-3000:]
    assert re.search(r"0 bytes spill stores, 0 bytes spill loads", log), log[-2000:]
    assert not re.search(r"[1-9]\d* bytes spill", log), log[-2000:]
    assert not re.search(r"C751[24]", log), log[-2000:]
    return log


def built(template: str, **params):
    """A template's PrimFunc, built once per parameter set for the whole test session."""
    return _build(template, tuple(sorted(params.items())))


# The loop of a chunk_scan plan measured wrong on one H200 (relative error 7e-3): the scores (par_1) come
# ahead of the cp.async loads of dt, dA and cb, with the x load between them.
RACY_LOOP = ("par_1", "gemm_1", "copy_5", "copy_6", "copy_4", "copy_3")


def chunk_scan_plan(loop: tuple, num_stages: int = 2):
    """(plan, graph): a software-pipelined chunk_scan plan on h200 (64x64x64 tile) with the given loop order."""
    from pt_tvm import hw
    from pt_tvm.hw import SEUKind
    from pt_tvm.passes import extract_stask_graph
    from pt_tvm.plan import Append, ExecutionPlan, Pipeline, Role, Style

    problem, tile = get("chunk_scan").resolve(seqlen=1024, block_M=64, block_N=64, block_K=64)
    graph = extract_stask_graph(get("chunk_scan").build(**problem, **tile), hw.get("h200"))
    seu = {"copy": SEUKind.LSU, "gemm": SEUKind.TENSOR_CORE, "par": SEUKind.SFU}
    stage = {"par_1": 1, "gemm_1": 1} if num_stages > 1 else {}
    order = ["copy_0", "copy_1", "copy_2", "gemm_0", "par_0", *loop, "copy_7", "par_2", "copy_8", "copy_9"]
    steps = tuple(Append(t, "block", SEUKind.CUDA_CORE if t == "par_2" else seu[t.split("_")[0]], stage.get(t, 0))
                  for t in order)
    pipes = (Pipeline("p_cb_shared", ("cb_shared", "dA_k_shared", "dt_k_shared"), num_stages, "block", "block", "loop"),
             Pipeline("p_x_shared", ("x_shared",), num_stages, "block", "block", "loop"))
    plan = ExecutionPlan("chunk_scan", "h200", Style.SOFTWARE_PIPELINE, (Role("block", 0, 4),), steps, pipes,
                         num_stages, tile=tile)
    return plan, graph


def tunedb_lines(db) -> list[dict]:
    """Every line of a tuning database's files, parsed, as they lie on disk."""
    out = []
    for name in sorted(os.listdir(db.directory)):
        if name.endswith(".jsonl"):
            with open(os.path.join(db.directory, name)) as f:
                out += [json.loads(line) for line in f]
    return out


def ssd_recurrence(x, dt, A, B, C, D=None, z=None, dt_bias=None, initial_states=None, dt_softplus=False,
                   dt_limit=(0.0, math.inf)):
    """Float32 ``h_t = exp(dt_t A) h_{t-1} + dt_t x_t B_t^T``, ``y_t = h_t C_t + D x_t``, gated by silu(z):
    the SSM one position at a time, independent of the chunked algorithm; ``(y, the last state)``."""
    b, s, h, p = x.shape
    r = h // B.shape[2]
    dt = dt.float() + (dt_bias.float() if dt_bias is not None else 0.0)
    dt = (F.softplus(dt) if dt_softplus else dt).clamp(*dt_limit)
    Bh, Ch = B.float().repeat_interleave(r, 2), C.float().repeat_interleave(r, 2)
    state = (initial_states.float() if initial_states is not None
             else x.new_zeros(b, h, p, B.shape[3], dtype=torch.float32))
    ys = []
    for t in range(s):
        state = (state * torch.exp(dt[:, t] * A.float())[..., None, None]
                 + (dt[:, t, :, None] * x[:, t].float())[..., None] * Bh[:, t, :, None, :])
        ys.append(torch.einsum("bhpn,bhn->bhp", state, Ch[:, t]))
    y = torch.stack(ys, 1)
    if D is not None:
        y = y + (D.float()[:, None] if D.dim() == 1 else D.float()) * x.float()
    if z is not None:
        y = y * F.silu(z.float())
    return y, state


def clamped(e: "tvm.tirx.PrimExpr") -> int:
    """The value of a tile walk's coordinate once its launch indices are constants: TVM's analyzer folds the walk
    but not the opaque ``min`` (a CUDA call) that clamps it to the grid, nor the arithmetic around it."""
    tirx = tvm.tirx
    if isinstance(e, tirx.IntImm):
        return e.value
    if isinstance(e, tirx.Call):
        return min(clamped(a) for a in e.args[1:])  # args[0] names the function
    ops = {tirx.Max: max, tirx.Min: min, tirx.Add: int.__add__, tirx.Sub: int.__sub__, tirx.Mul: int.__mul__,
           tirx.FloorDiv: int.__floordiv__, tirx.FloorMod: int.__mod__}
    return ops[type(e)](clamped(e.a), clamped(e.b))


GEMM_TILE = {"M": 1024, "N": 1024, "K": 512, "block_M": 128, "block_N": 256, "block_K": 64}  # 8 x 4 tiles


def ws_gemm_plan(depth: int = 3, persistent: bool = True, **shape):
    """(func, vdev, graph, plan): the gemm template at ``GEMM_TILE`` updated by ``shape``, and its warp-specialized
    plan of two consumer warpgroups ``depth`` stages deep, in program order, persistent or launched (H100 model)."""
    func = built("gemm", **{**GEMM_TILE, **shape})
    vdev = hw.get("h100")
    graph = pt_tvm.extract(func, vdev)
    plan = warp_specialized(graph, vdev, consumer_wgs=2, depth=depth, pipeline_stage={}, priority=Priority.PROGRAM)
    return func, vdev, graph, replace(plan, persistent=persistent)
