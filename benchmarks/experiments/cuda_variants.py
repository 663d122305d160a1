"""GPU experiment (issue 15 item 3): FlashAttention's kernel as TileLang emits it against variants of its CUDA,
where Nsight Compute on one H200 found it to differ from flash-attn-4's
(``benchmarks/results/2026-11-29-h200-attention-profile``).

**uniform warpgroup.** Nsight Compute counted 13% more instructions in pt-tvm's head-dim-128 kernel than in
flash-attn-4's, 9.4 million of them ``R2UR`` (none in flash-attn-4's): TileLang offsets each ``Q K^T`` wgmma's
descriptor of ``Q`` by the consumer warpgroup's rows through ``threadIdx.x >> 7``, which ptxas cannot prove uniform
across a warp, so the descriptor is built in ordinary registers and moved into uniform ones before every wgmma.
CUTLASS takes the warpgroup index through ``__shfl_sync`` from lane 0 (``canonical_warp_group_idx``), which ptxas
knows to be uniform; so does this variant (the same value, so the same results). On one H200 at ecf8f7b
(``benchmarks/results/2026-11-29-h200-uniform-warpgroup``) it changed the time by -0.7% to +0.3%: within the noise.

**wait after softmax.** In the head-dim-128 loop step a warpgroup issues block j's ``Q K^T``, then block j-1's
``P V``, waits for the first (``wait_wgmma<1>``) and runs block j's softmax before waiting for the second, so that
the softmax runs under ``P V`` (FlashAttention 3's intra-warpgroup overlap). ptxas moves that second wait
(``WARPGROUP.DEPBAR.LE gsb0, 0x0``) up into the row max, before every exponential: 6.5% of the kernel's warp
stall samples sit on it, against 0.1% in flash-attn-4's, whose wait ptxas leaves under its exponentials. This
variant wraps the softmax between the two waits in a loop that runs once (its bound, ``blockDim.x >= 32``, is 1
for every block of these kernels and unknown to ptxas), which ptxas cannot move the wait into.

**data before turn.** The two consumer warpgroups take turns issuing their gemms (a named barrier each). pt-tvm's
kernel takes its turn and then waits for the stage of ``K`` its first gemm reads; flash-attn-4 waits for ``K``
first and then for its turn, so a warpgroup never holds the turn while its data is still in flight. This variant
swaps the two waits.

**rescale before pv.** pt-tvm's loop step rescales the output accumulator by the running max's step at its end,
after waiting for ``P V``, before the next step's turn and ``Q K^T``; FlashAttention 3 (and flash-attn-4's Hopper
kernel) rescales it in the next step, after issuing ``Q K^T`` and before issuing ``P V``, so the tensor cores
start the next ``Q K^T`` one rescale earlier. This variant moves the rescale there (one more before the ``P V``
after the loop; the first step's, of the zero accumulator, dropped). A WSSchedule cannot place it so: an op that
touches no pipeline buffer runs at the base stage, so the rescale would miss the last step's ``P V``.

**row sum after loop.** Each loop step all-reduces the block's row sums across the four threads that hold a row
(two ``SHFL`` and two ``FADD`` a row) before adding them to the running sum; flash-attn-4 keeps each thread's
partial running sum and reduces it once, after the loop (TileLang 0.1.15's ``T.reduce_sum`` always all-reduces,
and its reducers could not express the running sum's rescale: NOTES-parity). The running sum's update
(``logsum * scores_scale + scores_sum``) is linear and ``scores_scale`` is the same on a row's four threads (the
row max is all-reduced), so the partial sums add up to the same total. This variant drops the loop's all-reduces
of ``scores_sum`` and all-reduces ``logsum`` once before each normalization of the output (nvcc builds it without
spills at the registers of the emitted kernel, 168 at head dims 128 and 256 and 128 in head dim 64's persistent
walk; its PTX has four ``shfl`` fewer a step). "row sum after loop, rescale before pv" applies both rewrites,
FlashAttention 3's loop step in both respects. On one H200 (``benchmarks/results/2026-12-03-h200-row-sum`` and
``-row-sum-rounds``) the row sums alone ran 0.99-1.02x the emitted kernel; both rewrites 1.015-1.020x at head dim 128
and 1.013-1.017x at 256 without the mask, 0.975-0.993x with it.

The search's pick of each config is compiled once per variant (a CUDA post-processing hook), each checked against
the float32 reference on fresh random inputs, then timed beside cuDNN SDPA in alternating rounds.

Run from the project root on the GPU machine: ``python -m benchmarks.experiments.cuda_variants $OUT [VARIANT ...]``
(all variants by default; ``--non-causal`` times only the configs without the mask, ``--extra`` the configs of
``EXTRA`` instead, ``--rounds N`` sets the alternating rounds, 7 by default).
"""
import argparse
import json
import os
import re
import time

import torch
from tilelang import env as tl_env
from tilelang.engine import register_cuda_postproc

from benchmarks.experiments.attention_tiles import _cfg
from benchmarks.experiments.variants import check_and_time
from benchmarks.suite import header
from benchmarks.systems import build_system
from pt_tvm import hw, templates
from pt_tvm.compiler import planned_func, schedule_template

CONFIGS = [_cfg(128, 4096, False), _cfg(128, 4096, True), _cfg(64, 4096, True), _cfg(256, 4096, True),
           _cfg(64, 4096, False), _cfg(256, 4096, False)]
# attention-core's other configs without the mask where flash-attn-4 leads (``--extra``)
EXTRA = [{**_cfg(128, 4096, False), "dtype": "bfloat16"}, _cfg(128, 16384, False), _cfg(256, 16384, False)]
WARPGROUP = "((int)threadIdx.x) >> 7"
UNIFORM = "pt_warpgroup"


def uniform_warpgroup(code: str, target) -> str:
    """``code`` with the warpgroup index of its wgmma descriptors taken once, at entry, through ``__shfl_sync``."""
    lines = [line.replace(WARPGROUP, UNIFORM) if "wgmma" in line and WARPGROUP in line else line
             for line in code.split("\n")]
    if not any(UNIFORM in line for line in lines):
        return code
    code = "\n".join(lines)
    entry = code.index("{", code.index("__launch_bounds__")) + 1
    return (code[:entry] + f"\n  const int {UNIFORM} = __shfl_sync(0xffffffffu, {WARPGROUP}, 0);" + code[entry:])


def wait_after_softmax(code: str, target) -> str:
    """``code`` with the statements between each ``wait_wgmma<1>`` (and the stage release after it) and the next
    ``wait_wgmma<0>`` in a loop that runs once, where their braces balance."""
    out, at = [], 0
    while (first := code.find(_WAIT_ONE, at)) >= 0 and (last := code.find(_WAIT_ALL, first)) >= 0:
        start = code.index("\n", first) + 1
        if ".arrive();" in code[start:code.index("\n", start)]:
            start = code.index("\n", start) + 1
        stop = code.rindex("\n", 0, last) + 1
        body = code[start:stop]
        out.append(code[at:start])
        if body.count("{") == body.count("}") and body.strip():
            body = f"for (int pt_once = 0; pt_once < {_ONCE}; ++pt_once) {{\n{body}}}\n"
        out.append(body)
        at = stop
    return "".join(out) + code[at:]


def data_before_turn(code: str, target) -> str:
    """``code`` with each warpgroup's wait for its turn (a named barrier) after, not before, its wait for the
    stage its turn's first gemm reads."""
    lines = code.split("\n")
    for i in range(len(lines) - 1):
        if _TURN in lines[i] and re.search(r"p_\w+_full\[.*\]\.wait\(", lines[i + 1]):
            lines[i], lines[i + 1] = lines[i + 1], lines[i]
    return "\n".join(lines)


def _block_end(code: str, opening: int) -> int:
    """The index just past the ``}`` matching the ``{`` at ``opening``."""
    depth = 0
    for i in range(opening, len(code)):
        depth += {"{": 1, "}": -1}.get(code[i], 0)
        if depth == 0:
            return i + 1
    raise ValueError("unbalanced braces")


def _line_start(code: str, at: int) -> int:
    return code.rindex("\n", 0, at) + 1


def _gemm_block(code: str, at: int) -> int:
    """The start of the line opening the ``{`` block around the first register-operand wgmma (``P V``) after
    ``at``, or of the wait for its stage of ``V`` just before it."""
    rs = code.index("wgmma_rs", at)
    start = _line_start(code, rs)
    while code[start:code.index("\n", start)].strip() != "{":
        start = _line_start(code, start - 1)
    before = _line_start(code, start - 1)
    return before if re.search(r"_full\[.*\]\.wait\(", code[before:start]) else start


def rescale_before_pv(code: str, target) -> str:
    """``code`` with ``O``'s rescale by the running max's step moved from the end of each loop step to just before
    the next step's ``P V`` issue (after its ``Q K^T``), and one before the ``P V`` after the loop; the first
    step's rescale (of the zero accumulator) dropped."""
    rescales = []
    for m in re.finditer(r"\n([ \t]*)#pragma unroll\n\1for \(int (i_\d+) = 0; \2 < \d+; \+\+\2\) \{", code):
        end = _block_end(code, code.index("{", m.start() + 1 + len(m.group(1)) + len("#pragma unroll\n")))
        body = code[m.start():end]
        if "make_float2(scores_scale" in body and "acc_o" in body and "acc_s" not in body:
            rescales.append((m.start() + 1, end + 1))
    loop = re.search(r"for \(int k_\d+ = 1; ", code)
    if len(rescales) != 2 or loop is None:
        return code
    (pro, pro_end), (body, body_end) = rescales
    loop_end = _block_end(code, code.index("{", loop.start()))
    if not pro_end <= loop.start() < body < loop_end:
        return code
    in_loop, after = _gemm_block(code, loop.start()), _gemm_block(code, loop_end)
    if in_loop > body:
        return code
    step = code[body:body_end]
    return (code[:pro] + code[pro_end:in_loop] + step + code[in_loop:body] + code[body_end:after] + step
            + code[after:])


_ROW_SUM = re.compile(r"\n[ \t]*scores_sum\[(\w+)\] = (tl::AllReduce<tl::SumOp, [^;]*?>)::run\(scores_sum\[\1\]\);")


def row_sum_after_loop(code: str, target) -> str:
    """``code`` with the per-step all-reduce of the block's row sums dropped and the running sum ``logsum``
    all-reduced once, before each loop that normalizes the output by it."""
    reduces = list(_ROW_SUM.finditer(code))
    rows = re.search(r"\bfloat logsum\[(\d+)\];", code)
    if not reduces or rows is None or len({m.group(2) for m in reduces}) != 1:
        return code
    reduce = (f"#pragma unroll\nfor (int pt_r = 0; pt_r < {rows.group(1)}; ++pt_r) {{ "
              f"logsum[pt_r] = {reduces[0].group(2)}::run(logsum[pt_r]); }}\n")
    normalizes = [m.start() for m in re.finditer(r"make_float2\(logsum\[", code)]
    if not normalizes or len(re.findall(r"\blogsum\[", code)) != 1 + 2 * len(normalizes):
        return code  # the running sum read elsewhere than its update and the normalizations: left as emitted
    code = _ROW_SUM.sub("", code)
    # the line opening the loop around each normalization (`#pragma unroll`), last first so indices hold
    for at in reversed([m.start() for m in re.finditer(r"make_float2\(logsum\[", code)]):
        start = _line_start(code, code.rindex("#pragma unroll", 0, at))
        code = code[:start] + reduce + code[start:]
    return code


_TURN = "tl::__sync_thread_partial((tl::get_warp_group_idx()"
_WAIT_ONE, _WAIT_ALL = "tl::wait_wgmma<1>();", "tl::wait_wgmma<0>();"
_ONCE = "(int)(blockDim.x >= 32u)"  # 1 for every block of these kernels (128 threads or more); ptxas cannot fold it
VARIANTS = {"uniform warpgroup": uniform_warpgroup, "wait after softmax": wait_after_softmax,
            "data before turn": data_before_turn, "rescale before pv": rescale_before_pv,
            "row sum after loop": row_sum_after_loop,
            "row sum after loop, rescale before pv": lambda code, target: rescale_before_pv(
                row_sum_after_loop(code, target), target)}


def main(out_dir: str, names: tuple[str, ...] = tuple(VARIANTS), non_causal: bool = False, rounds: int = 7,
         extra: bool = False) -> None:
    t0 = time.time()
    vdev = hw.from_device()
    tmpl = templates.get("flash_attention")
    tl_env.disable_cache()  # the two compiles of one PrimFunc must not share a cache entry
    rows = []
    for cfg in (c for c in (EXTRA if extra else CONFIGS) if not (non_causal and c["causal"])):
        result, problem, _ = schedule_template("flash_attention", vdev, params=cfg)
        func = planned_func("flash_attention", problem, result.best, vdev)
        kernels = {}
        for name, post in (("as emitted", lambda code, target: code), *((n, VARIANTS[n]) for n in names)):
            register_cuda_postproc(post, override=True)
            kernels[name] = tmpl.compile(func, vdev.tvm_target())
        register_cuda_postproc(lambda code, target: code, override=True)
        shape = {k: v for k, v in problem.items() if k not in tmpl.tile}
        cudnn, _ = build_system("cudnn-sdpa", tmpl, shape, vdev)
        info = check_and_time({"cudnn-sdpa": cudnn, **kernels}, tmpl, shape, vdev, rounds=rounds)
        for name in names:
            info[name]["rewritten"] = kernels[name].get_kernel_source() != kernels["as emitted"].get_kernel_source()
        rows.append({"config": shape, "plan": result.best.note, "systems": info})
        base = info["as emitted"]["ms"]
        print(f"D{shape['dim']} S{shape['seq_len']} {'causal' if shape['causal'] else 'full'}: "
              + "  ".join(f"{n} {v['tflops']:.0f} TFLOP/s ({base / v['ms']:.3f}x)" for n, v in info.items())
              + f"  [{time.time() - t0:.0f} s]", flush=True)
        with open(os.path.join(out_dir, "cuda_variants.json"), "w") as f:
            json.dump({"header": header(" ".join(["python -m benchmarks.experiments.cuda_variants $OUT", *names]
                                                 + ["--non-causal"] * non_causal + ["--extra"] * extra
                                                 + [f"--rounds {rounds}"]),
                                        torch.cuda.get_device_name()), "rows": rows}, f, indent=1, default=str)


if __name__ == "__main__":
    parser = argparse.ArgumentParser(prog="python -m benchmarks.experiments.cuda_variants")
    parser.add_argument("out_dir")
    parser.add_argument("variants", nargs="*", metavar="VARIANT", help=f"any of {list(VARIANTS)}")
    parser.add_argument("--non-causal", action="store_true")
    parser.add_argument("--rounds", type=int, default=7)
    parser.add_argument("--extra", action="store_true")
    args = parser.parse_args()
    if unknown := [v for v in args.variants if v not in VARIANTS]:
        parser.error(f"unknown variant(s) {unknown}: choose from {list(VARIANTS)}")
    main(args.out_dir, tuple(args.variants) or tuple(VARIANTS), args.non_causal, args.rounds, args.extra)
