"""GPU experiment (issue 14 item 4): Mamba's causal conv1d + SiLU at the Mamba2-1.3B layer's shapes.

The layers suite's Mamba2 mixer ran PyTorch's ``F.conv1d`` over the transpose of the in-projection's ``x B C``
columns in every system (cuDNN's ``conv1D_NCHW_general``: 4.47 ms of pt-tvm's 12.5 ms at 16 x 4096 on one H200,
benchmarks/results/2026-12-03-h200-layers-mamba2-cb-half). Per shape: ``pt_tvm.ops.causal_conv1d`` as the layer
calls it (the search's pick; then the search's next two tiles, compiled from the template), PyTorch as the layer
calls it, ``torch.compile`` of the same function, and a device-to-device copy of the same rows into a packed
tensor (the bytes the conv must move: its memory roofline); every output checked against float32, timed from CUDA
graphs in alternating rounds.

Run from the project root on the GPU machine: ``python -m benchmarks.experiments.conv1d $OUT``; writes
``conv1d.json``.
"""
import sys
import time

import torch

from benchmarks.experiments.variants import save_rows
from benchmarks.layers.models import causal_conv1d_silu
from pt_tvm import hw, ops, templates
from pt_tvm.compiler import schedule_template
from pt_tvm.measure import REL_TOL, as_outputs, capture, check_call, input_sets, time_samplers

WIDE, START, CHANNELS = 8512, 4096, 4352  # the in-projection's columns, where x B C start, their number
CONFIGS = [dict(batch=b, seqlen=s) for b, s in ((1, 777), (1, 4096), (4, 2048), (16, 4096))]
DEADLINE_S = 240  # no config starts timing after this


def _inputs(problem: dict, seed: int) -> tuple:
    """``x B C`` rows as a view of the projection's output, the conv's weight ``[channels, width]``, its bias."""
    g = torch.Generator("cuda").manual_seed(seed)
    wide = torch.randn(problem["batch"], problem["seqlen"], WIDE, generator=g, device="cuda").half()
    weight = ((torch.rand(CHANNELS, 4, generator=g, device="cuda") * 2 - 1) * 0.5).half()
    bias = ((torch.rand(CHANNELS, generator=g, device="cuda") * 2 - 1) * 0.5).half()
    return wide[..., START:START + CHANNELS], weight, bias


def _tile(c) -> str:
    return " ".join(f"{k}={v}" for k, v in c.plan.tile.items()) + f", {c.note}"


def main(out_dir: str) -> None:
    t_start, vdev, tmpl = time.time(), hw.from_device(), templates.get("causal_conv1d")
    rows = []
    for cfg in CONFIGS:
        if time.time() - t_start > DEADLINE_S:
            print(f"{cfg}: not timed, past {DEADLINE_S} s", flush=True)
            continue
        params = {**cfg, "channels": CHANNELS, "width": 4, "x_stride": WIDE}
        result, problem, build = schedule_template("causal_conv1d", vdev, params=params)
        tiles, seen = [], set()
        for c in result.ranked:
            key = tuple(c.plan.tile.items())
            if key not in seen and len(tiles) < 3:
                seen.add(key)
                tiles.append(c)
        sets = input_sets(lambda s: _inputs(problem, s), 2 * cfg["batch"] * cfg["seqlen"] * CHANNELS * 2,
                          vdev.l2_bytes, max_sets=4)
        check = _inputs(problem, 1_000)
        refs = as_outputs(tmpl.reference(*check, **problem))
        compiled = torch.compile(causal_conv1d_silu)
        systems = {
            "pt-tvm op": (lambda x, w, b: ops.causal_conv1d(x.transpose(1, 2), w, b, "silu").transpose(1, 2),
                          {"tile": _tile(result.best), "predicted_ms": result.best.seconds * 1e3}),
            "pytorch": (lambda x, w, b: causal_conv1d_silu(x, w[:, None], b), {}),
            "torch-compile": (lambda x, w, b: compiled(x, w[:, None], b), {}),
            "copy": (lambda x, w, b: x.contiguous(), {"note": "the rows copied: the bytes the conv moves"}),
        }
        for i, c in enumerate(tiles[1:], 2):
            kernel = tmpl.compile(build(c), vdev.tvm_target())
            systems[f"search #{i}"] = (kernel, {"tile": _tile(c), "predicted_ms": c.seconds * 1e3})
        fns, info = {}, {}
        for name, (fn, entry) in systems.items():
            info[name] = dict(entry)
            (chk,) = check_call(fn, check, refs if name != "copy" else (check[0].float(),))
            info[name].update(rel_err=chk.rel_err, prefill=chk.prefill)
            if chk.rel_err < REL_TOL["float16"] and chk.prefill == "nan":
                fns[name] = capture(fn, sets)
            else:
                info[name]["error"] = f"wrong result: rel err {chk.rel_err:.2e} ({chk.prefill} prefill)"
        del refs
        for name, t in time_samplers(fns, rounds=7, round_ms=150.0).items():
            info[name].update(ms=t.ms, p20_ms=t.p20, p80_ms=t.p80)
        moved = 2 * cfg["batch"] * cfg["seqlen"] * CHANNELS * 2
        for v in info.values():
            if "ms" in v:
                v["GB_per_s"] = moved / v["ms"] / 1e6
        rows.append({"config": cfg, "bytes": moved, "systems": info})
        save_rows(out_dir, "conv1d", rows)
        base = info["pytorch"].get("ms")
        print(f"b{cfg['batch']} s{cfg['seqlen']}: " + "  ".join(
            f"{n} {v['ms'] * 1e3:.1f} us ({base / v['ms']:.2f}x, {v['GB_per_s']:.0f} GB/s, err {v['rel_err']:.1e})"
            if "ms" in v else f"{n} ERR" for n, v in info.items()), flush=True)
        torch.cuda.empty_cache()
    print(f"(speed over PyTorch's conv as the layer calls it; {time.time() - t_start:.0f} s)")


if __name__ == "__main__":
    main(sys.argv[1])
