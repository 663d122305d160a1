"""The systems compared: pt-tvm's searched kernels, TileLang's own ways of scheduling them, and the peers.

Each system is a factory ``make(template, problem, vdev, **options) -> (callable, info)`` that builds
(and compiles) once; the callable takes the template's inputs and returns every output of the
template's reference, in its order (a peer does what its library's user would write, nothing
more). Building errors surface as a row marked invalid with the reason, not as a crash of the
suite. ``options`` carries run-wide settings (``tune_top_k`` for pt-tvm, ``autotune_cache`` for
TileLang's autotuner); a factory ignores those it does not use. ``info["grid"]`` is the number
of thread blocks a TileLang kernel launches (peers' grids are not known).
"""
from __future__ import annotations

import contextlib
import functools
import itertools
import math
import os
import time
from typing import Any, Callable, Iterator, Mapping, Sequence

import tilelang
import torch
import torch.nn.functional as F
from tilelang.transform import PassConfigKey
from torch.nn.attention import SDPBackend, sdpa_kernel

from pt_tvm import templates
from pt_tvm.compiler import planned_func, schedule_template
from pt_tvm.measure import kernel_outputs
from pt_tvm.passes import launch_grid, symbolic_sizes
from pt_tvm.templates import TemplateError
from pt_tvm.tune import tune_template

from .decode_peers import flashinfer, lower_right_mask, peer

__all__ = ["SYSTEMS", "PEERS_BY_SUITE", "AUTOTUNE_NUM_STAGES", "build_system", "flops_per_second", "grid_blocks",
           "autotune_configs", "autotune_jit", "tilelang_cache", "role_based_ws_configs"]


def grid_blocks(func: Any, sizes: Mapping[str, Any] | None = None) -> int | None:
    """Thread blocks a TileLang PrimFunc launches (the product of its ``blockIdx`` extents), its symbolic sizes
    (``T.dynamic``) taken from ``sizes`` by name (a kernel of dynamic sizes run at a problem's); None if unknown."""
    values = {var: sizes[name] for name, var in symbolic_sizes(func).items()
              if isinstance((sizes or {}).get(name), int)}
    extents = [ext for _, ext in launch_grid(func, values).values()]
    return math.prod(extents) if extents and None not in extents else None


def _tilelang_info(func: Any, sizes: Mapping[str, Any] | None = None, **info: Any) -> dict:
    """``info`` with the grid of the TileLang PrimFunc a system compiled (at ``sizes``, where it has dynamic ones)."""
    return {**info, "grid": grid_blocks(func, sizes)}


def _planned_info(func: Any, template: Any, problem: Mapping[str, Any], chosen: Any, **info: Any) -> dict:
    """:func:`_tilelang_info` of a planned kernel, with ``tiles``: the output tiles it computes, which for a
    persistent plan ``chosen`` (one block per SM walking them) is the grid of the same tile unwalked, not its
    launch grid."""
    out = _tilelang_info(func, problem, **info)
    if chosen.persistent:
        out["tiles"] = grid_blocks(template.build(**problem, **chosen.tile), problem)
    return out


def _pt_tvm(template: Any, problem: Mapping[str, Any], vdev: Any, *, tune_top_k: int | None = None,
            tune_workers: int | None = None, tune_rep_ms: float | None = None, shared: dict | None = None,
            searched: Any = None, **_: Any) -> tuple[Callable, dict]:
    """Cost-model search, then the best ``tune_top_k`` plans (default 8) measured on this GPU (pt_tvm.tune).

    ``tune_top_k=1`` measures only the model's first choice (no refinement); ``tune_workers=1``
    compiles the candidates in this process (the suite's precompile step has cached them, and hands
    over its search as ``searched``); ``tune_rep_ms`` is the timing per candidate (the run's own
    ``--rep-ms``). The search result goes into ``shared`` (one dict per config)
    for ``pt-tvm-model``.
    """
    t0 = time.perf_counter()
    kw = {"top_k": int(tune_top_k)} if tune_top_k else {}
    if tune_workers:
        kw["workers"] = int(tune_workers)
    if searched is not None:
        kw["searched"] = searched
    if tune_rep_ms:
        kw["rep_ms"] = float(tune_rep_ms)
    tr = tune_template(template.name, vdev, params=problem, **kw)
    if shared is not None:
        shared["search"] = tr.search
    best = tr.best.candidate
    return kernel_outputs(template, tr.kernel), _planned_info(
        tr.kernel.prim_func, template, problem, best.plan, plan=best.note, tile=dict(best.plan.tile),
        search_s=round(tr.search.seconds, 3),
        tune_s=round(time.perf_counter() - t0, 1), predicted_ms=best.seconds * 1e3, candidates_timing=tr.timing,
        candidates=[{"note": m.candidate.note, "tile": dict(m.candidate.plan.tile),
                     "predicted_ms": m.candidate.seconds * 1e3, "ms": m.ms, "rel_err": m.rel_err, "error": m.error,
                     "plan": m.candidate.plan.to_dict()} for m in tr.measured])


def _pt_tvm_model(template: Any, problem: Mapping[str, Any], vdev: Any, *, shared: dict | None = None,
                  **_: Any) -> tuple[Callable, dict]:
    """The cost model's first choice alone, no GPU measurement in the loop (the search ``pt-tvm`` left in
    ``shared`` when it ran on this config first: the search is deterministic)."""
    if shared and "search" in shared:
        result = shared["search"]
        func = planned_func(template.name, problem, result.best, vdev)
    else:
        result, _, build = schedule_template(template.name, vdev, params=problem)
        func = build()
    kernel = template.compile(func, vdev.tvm_target())
    return kernel_outputs(template, kernel), _planned_info(
        func, template, problem, result.best.plan, plan=result.best.note, tile=dict(result.best.plan.tile),
        search_s=round(result.seconds, 3),
        predicted_ms=result.best.seconds * 1e3, plan_json=result.best.plan.to_dict())


def _tilelang_auto(template: Any, problem: Mapping[str, Any], vdev: Any, *, shared: dict | None = None,
                   **_: Any) -> tuple[Callable, dict]:
    """The same template with TileLang's default schedule: ``T.Pipelined(num_stages=2)``, default tile
    (its CUDA goes into ``shared`` for ``tilelang-ws`` to tell whether its scheduler changed anything)."""
    func = template.build(num_stages=2, **problem)
    kernel = template.compile(func, vdev.tvm_target())
    if shared is not None:
        shared["tilelang_source"] = kernel.get_kernel_source()
    return kernel_outputs(template, kernel), _tilelang_info(func, tile=dict(template.tile))


def role_based_ws_configs(template: Any) -> dict[str, Any]:
    """The template's pass configs with TileLang's role-based automatic warp specialization turned on."""
    return {**template.pass_configs, PassConfigKey.TL_ENABLE_AUTO_WARP_SPECIALIZATION.value: "role_based"}


def _tilelang_ws(template: Any, problem: Mapping[str, Any], vdev: Any, *, shared: dict | None = None,
                 **_: Any) -> tuple[Callable, dict]:
    """TileLang's default schedule with its role-based automatic warp specialization
    (``tl.enable_auto_warp_specialization="role_based"``, off by default in TileLang 0.1.15);
    ``ws_changed_kernel`` says whether its CUDA differs from ``tilelang-auto``'s (TileLang skips
    kernels its scheduler cannot split, with a warning), when that system ran first."""
    func = template.build(num_stages=2, **problem)
    kernel = tilelang.compile(func, out_idx=list(template.out_idx), target=vdev.tvm_target(),
                              pass_configs=role_based_ws_configs(template))
    info = {"tile": dict(template.tile), "pass_configs": role_based_ws_configs(template)}
    if shared and "tilelang_source" in shared:
        info["ws_changed_kernel"] = kernel.get_kernel_source() != shared["tilelang_source"]
    return kernel_outputs(template, kernel), _tilelang_info(func, **info)


AUTOTUNE_NUM_STAGES = (1, 2, 3)  # pipeline depths TileLang's autotuner tries beside the template's tiles


def autotune_configs(template: Any, problem: Mapping[str, Any],
                     stages: Sequence[int] = AUTOTUNE_NUM_STAGES) -> list[dict]:
    """TileLang autotuner configs: every tile of the template's tile space that the template accepts for
    ``problem`` and that is no larger than it (``block_M`` at most ``M``, ...: the templates take any size, but
    a tile past the whole problem only adds work), at every pipeline depth of ``stages``."""
    keys = list(template.tile_space)
    out = []
    for values in itertools.product(*template.tile_space.values()):
        tile = dict(zip(keys, values))
        if any(k.startswith("block_") and isinstance(problem.get(k[6:]), int) and v > problem[k[6:]]
               for k, v in tile.items()):
            continue
        try:
            template.check(dict(problem), tile)
        except TemplateError:
            continue
        out += [{**tile, "num_stages": s} for s in stages]
    return out


def autotune_jit(template: Any, vdev: Any, problem: Mapping[str, Any]) -> Any:
    """The template's builder under ``tilelang.jit`` with its outputs and pass configs, as a TileLang user
    writes a kernel for ``tilelang.autotune``. Output indices are counted from the front of ``problem``'s
    PrimFunc: TileLang's autotuner resolves a negative one before it looks up its kernel cache, so a kernel
    the run's workers compiled with ``-1`` (chunk_scan's output) was compiled again by the timed process."""
    params = _param_count(template.name, tuple(sorted(problem.items())))
    return tilelang.jit(out_idx=[i % params for i in template.out_idx], target=vdev.tvm_target(),
                        pass_configs=dict(template.pass_configs))(template.builder)


@functools.lru_cache(maxsize=64)
def _param_count(name: str, problem: tuple) -> int:
    """Parameters of template ``name``'s PrimFunc at ``problem`` (its items), built once per process: a
    compile worker makes the autotuner's jit for each of a config's tiles."""
    return len(templates.get(name).build(**dict(problem)).params)


@contextlib.contextmanager
def tilelang_cache(path: str | None) -> Iterator[None]:
    """TileLang's on-disk caches (kernels and autotuner results, ``TILELANG_CACHE_DIR``) under ``path``
    while inside; unchanged when ``path`` is None."""
    if path is None:
        yield
        return
    before = os.environ.get("TILELANG_CACHE_DIR")
    os.environ["TILELANG_CACHE_DIR"] = path
    try:
        yield
    finally:
        if before is None:
            del os.environ["TILELANG_CACHE_DIR"]
        else:
            os.environ["TILELANG_CACHE_DIR"] = before


def _tilelang_autotune(template: Any, problem: Mapping[str, Any], vdev: Any, *, autotune_cache: str | None = None,
                       autotune_stages: Sequence[int] = AUTOTUNE_NUM_STAGES, **_: Any) -> tuple[Callable, dict]:
    """TileLang's own autotuner (``tilelang.autotune`` over ``tilelang.jit``) across the template's tile space
    and the pipeline depths ``autotune_stages``, with TileLang's default schedule; its caches (results and
    compiled configs) in the run's ``autotune_cache``."""
    configs = autotune_configs(template, problem, autotune_stages)
    if not configs:
        raise TemplateError(f"{template.name}: no tile of the template's tile space fits this problem")
    tuned = tilelang.autotune(configs=configs)(autotune_jit(template, vdev, problem))
    with tilelang_cache(autotune_cache):
        kernel = tuned.compile(**problem)
    best = dict(kernel.config or {})
    return kernel_outputs(template, kernel), _tilelang_info(
        kernel.prim_func, tile={k: v for k, v in best.items() if k != "num_stages"}, num_stages=best.get("num_stages"),
        autotune_configs=len(configs), autotune_latency_ms=kernel.latency)


def _sdpa(backend_name: str) -> Callable:
    def make(template: Any, problem: Mapping[str, Any], vdev: Any, **_: Any) -> tuple[Callable, dict]:
        backend = getattr(SDPBackend, backend_name)
        gqa = problem["heads"] != problem["kv_heads"]
        lq = problem["seq_len"]
        lk = problem.get("seq_len_k") or lq
        # causal over a KV cache is aligned bottom-right, as pt-tvm and FlashAttention define it: PyTorch's
        # is_causal aligns it top-left, so its users pass a lower-right mask instead
        bottom_right = problem["causal"] and lq != lk
        masks: dict = {}  # by device, built on the first call

        def run(q, k, v):
            if bottom_right and q.device not in masks:
                masks[q.device] = lower_right_mask(lq, lk, gqa, q.device)
            with sdpa_kernel(backend):
                o = F.scaled_dot_product_attention(q.transpose(1, 2), k.transpose(1, 2), v.transpose(1, 2),
                                                   attn_mask=masks.get(q.device),
                                                   is_causal=problem["causal"] and not bottom_right, enable_gqa=gqa)
            return o.transpose(1, 2)

        info = {"layout": "BHSD views of BSHD tensors"}
        if bottom_right:  # torch.nn.attention.bias.CausalBias dispatches itself, past sdpa_kernel's choice
            info["causal"] = ("a boolean lower-right mask" if gqa else "causal_lower_right: PyTorch's "
                              "FlashAttention-2 or memory-efficient kernel, whatever backend is asked")
        return run, info

    return make


def _fa3(template: Any, problem: Mapping[str, Any], vdev: Any, **_: Any) -> tuple[Callable, dict]:
    from flash_attn.cute import flash_attn_func  # optional peer: installed on the GPU machine only

    def run(q, k, v):
        out = flash_attn_func(q, k, v, causal=problem["causal"])
        return out[0] if isinstance(out, tuple) else out

    return run, {"package": "flash-attn-4 (CuTe sm90 forward)"}


def _gemm_rowsum(a: Any, b: Any, s: Any) -> tuple:
    """GEMM + row sum as a PyTorch user writes it: the row sums in float32 without a float32 copy of C."""
    c = a @ b
    return c, c.sum(dim=1, dtype=torch.float32)


def _chunk_state(B: Any, x: Any, dt: Any, dA_cumsum: Any) -> Any:
    """Mamba2's chunk state in the input dtype (mamba_ssm's ``chunk_state_ref``), states out in float32."""
    b, L, h, p = x.shape
    g, n = B.shape[2], B.shape[3]
    _, _, c, chunk = dt.shape
    Bh = B.repeat_interleave(h // g, dim=2).reshape(b, c, chunk, h, n)
    decay = torch.exp(dA_cumsum[..., -1:] - dA_cumsum)
    states = torch.einsum("bclhn,bhcl,bhcl,bclhp->bchpn", Bh, decay.to(x.dtype), dt.to(x.dtype),
                          x.reshape(b, c, chunk, h, p))
    return states.float()


def _chunk_scan(cb: Any, x: Any, dt: Any, dA_cumsum: Any, C: Any, prev_states: Any, D: Any = None) -> Any:
    """Mamba2's chunk scan in the input dtype (mamba_ssm's ``chunk_scan_ref`` with ``cb`` given)."""
    b, L, h, p = x.shape
    g, n = C.shape[2], C.shape[3]
    _, _, c, chunk = dt.shape
    r = h // g
    causal = torch.ones(chunk, chunk, dtype=torch.bool, device=x.device).tril()
    decay = torch.exp(dA_cumsum[..., :, None] - dA_cumsum[..., None, :]).permute(0, 2, 1, 3, 4)   # b c h l s
    scores = (cb.repeat_interleave(r, dim=2) * decay).masked_fill(~causal, 0.0)
    out = torch.einsum("bchls,bhcs,bcshp->bclhp", scores.to(x.dtype), dt.to(x.dtype), x.reshape(b, c, chunk, h, p))
    Ch = C.repeat_interleave(r, dim=2).reshape(b, c, chunk, h, n)
    out_prev = torch.einsum("bclhn,bchpn->bclhp", Ch, prev_states.to(C.dtype))
    out = out + out_prev * torch.exp(dA_cumsum).permute(0, 2, 3, 1)[..., None]
    out = out.reshape(b, L, h, p)
    if D is not None:
        out = out + x * D[None, None, :, None]
    return out.to(x.dtype)


def _causal_conv1d_silu(x: torch.Tensor, weight: torch.Tensor, bias: torch.Tensor) -> torch.Tensor:
    """``nn.Conv1d``'s depthwise conv over ``x [batch, seqlen, channels]``'s transpose, cut to the length, and SiLU:
    the PyTorch path of HF transformers' Mamba2 mixer (``weight [channels, width]`` as the template takes it)."""
    y = F.conv1d(x.transpose(1, 2), weight[:, None], bias, padding=weight.shape[1] - 1, groups=weight.shape[0])
    return F.silu(y[..., :x.shape[1]]).transpose(1, 2)


def _eager(template: Any, problem: Mapping[str, Any]) -> Callable:
    """The kernel as plain PyTorch in the input dtype: what a user would write and hand to ``torch.compile``.

    (The template's ``reference`` computes in float32 to check results; compiling
    it would time an fp32 kernel, not a peer.)
    """
    if template.name == "gemm":
        return lambda a, b: a @ b
    if template.name == "gemm_rowsum":
        return _gemm_rowsum
    if template.name == "flash_attention":
        scale = 1.0 / math.sqrt(problem["dim"])
        groups = problem["heads"] // problem["kv_heads"]
        causal = problem["causal"]

        def attention(q, k, v):  # BSHD in, BSHD out
            q, k, v = q.transpose(1, 2), k.transpose(1, 2), v.transpose(1, 2)
            if groups > 1:
                k, v = k.repeat_interleave(groups, dim=1), v.repeat_interleave(groups, dim=1)
            s = (q @ k.transpose(-2, -1)) * scale
            if causal:
                n = s.shape[-1]
                s = s.masked_fill(torch.ones(n, n, dtype=torch.bool, device=s.device).triu(1), float("-inf"))
            return (s.softmax(dim=-1) @ v).transpose(1, 2)
        return attention
    if template.name == "chunk_state":
        return _chunk_state
    if template.name == "chunk_scan":
        return _chunk_scan
    if template.name == "causal_conv1d" and problem["activation"] == "silu":
        return _causal_conv1d_silu
    raise NotImplementedError(f"no eager PyTorch form for template {template.name!r}")


def _torch_compile(template: Any, problem: Mapping[str, Any], vdev: Any, **_: Any) -> tuple[Callable, dict]:
    return torch.compile(_eager(template, problem), dynamic=False), {"mode": "default",
                                                                     "source": "eager PyTorch in the input dtype"}


def _mamba_triton(template: Any, problem: Mapping[str, Any], vdev: Any, **_: Any) -> tuple[Callable, dict]:
    """mamba-ssm 2.3.2's official Triton kernels (laid out by benchmarks/fetch_mamba_ssm.sh, on PYTHONPATH)."""
    if template.name == "chunk_state":
        from mamba_ssm.ops.triton.ssd_chunk_state import _chunk_state_fwd  # optional peer (fetch_mamba_ssm.sh)

        def run(B, x, dt, dA):
            return _chunk_state_fwd(B, x, dt, dA, states_in_fp32=True)

        return run, {"package": "mamba-ssm 2.3.2"}
    if template.name == "chunk_scan":
        from mamba_ssm.ops.triton.ssd_chunk_scan import _chunk_scan_fwd  # optional peer (fetch_mamba_ssm.sh)

        def run(cb, x, dt, dA, C, states, *D):
            return _chunk_scan_fwd(cb, x, dt, dA, C, states, D=D[0] if D else None)[0]

        return run, {"package": "mamba-ssm 2.3.2"}
    raise ValueError(f"mamba-ssm has no kernel for {template.name!r}")


def _cublas(template: Any, problem: Mapping[str, Any], vdev: Any, **_: Any) -> tuple[Callable, dict]:
    if template.name == "gemm_rowsum":
        return _gemm_rowsum, {"impl": "torch.matmul + torch.sum(dim=1, dtype=torch.float32)"}
    if template.name == "gemm_swiglu":  # the MLP as eager PyTorch writes it: one cuBLAS linear, then SiLU and product
        def swiglu(a: torch.Tensor, w: torch.Tensor) -> torch.Tensor:
            gate, up = F.linear(a, w).chunk(2, dim=-1)
            return F.silu(gate) * up

        return swiglu, {"impl": "torch.nn.functional.linear, silu(gate) * up"}
    if problem.get("trans_B"):  # B is a linear layer's weight [N, K]: multiplied as F.linear does (cuBLAS TN)
        return F.linear, {"impl": "torch.nn.functional.linear"}
    return (lambda a, b: torch.matmul(a, b)), {}


SYSTEMS: dict[str, Callable] = {
    "pt-tvm": _pt_tvm,
    "pt-tvm-model": _pt_tvm_model,
    "tilelang-auto": _tilelang_auto,
    "tilelang-autotune": _tilelang_autotune,
    "tilelang-ws": _tilelang_ws,
    "cudnn-sdpa": _sdpa("CUDNN_ATTENTION"),
    "fa2-sdpa": _sdpa("FLASH_ATTENTION"),
    "fa3": _fa3,
    "torch-compile": _torch_compile,
    "cublas": _cublas,
    "mamba-triton": _mamba_triton,
    "flashinfer": flashinfer,
}

_TILELANG = ("tilelang-auto", "tilelang-autotune", "tilelang-ws")
PEERS_BY_SUITE = {
    "attention": ("pt-tvm", "pt-tvm-model", *_TILELANG, "cudnn-sdpa", "fa2-sdpa", "fa3", "torch-compile"),
    "gemm": ("pt-tvm", "pt-tvm-model", *_TILELANG, "cublas", "torch-compile"),
    "mamba": ("pt-tvm", "pt-tvm-model", *_TILELANG, "mamba-triton", "torch-compile"),
}


def build_system(name: str, template: Any, problem: Mapping[str, Any], vdev: Any,
                 **options: Any) -> tuple[Callable | None, dict]:
    """(callable or None, info); info["error"] says why a system could not be built. A peer of the decode
    suite (SDPA, flash-attn-4) is called in its decoding form (benchmarks/decode_peers.py)."""
    factory = SYSTEMS[name]
    if template.name == "decode_attention":
        factory = peer(name) or factory
    try:
        fn, info = factory(template, problem, vdev, **options)
        return fn, info
    except Exception as e:  # a peer that cannot build is a reported row, not a crash
        text = str(e).strip()
        return None, {"error": f"{type(e).__name__}: {text.splitlines()[-1][:300] if text else ''}"}


def flops_per_second(flops: float, ms: float) -> float:
    return flops / (ms * 1e-3) if ms and math.isfinite(ms) else 0.0
