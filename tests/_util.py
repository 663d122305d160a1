"""Helpers shared by the test files."""
import functools

from pt_tvm.templates import get


@functools.lru_cache(maxsize=None)
def _build(template: str, params: tuple):
    return get(template).build(**dict(params))


def nvcc_flags() -> tuple[str, ...]:
    """nvcc's flags for an sm_90a kernel TileLang emitted, as TileLang compiles it (ptxas reports spills)."""
    from tilelang.env import CUTLASS_INCLUDE_DIR, TILELANG_TEMPLATE_PATH

    return ("--cubin", "-O3", "-gencode=arch=compute_90a,code=sm_90a", "-std=c++20", "-I" + TILELANG_TEMPLATE_PATH,
            "-I" + CUTLASS_INCLUDE_DIR, "-lineinfo", "--ptxas-options=-v", "--use_fast_math")


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
