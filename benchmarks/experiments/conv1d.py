"""GPU experiment (issue 14 item 4): Mamba's causal conv1d + SiLU at the Mamba2-1.3B layer's shapes.

The layers suite's Mamba2 mixer ran PyTorch's ``F.conv1d`` over the transpose of the in-projection's ``x B C``
columns in every system (cuDNN's ``conv1D_NCHW_general``: 4.47 ms of pt-tvm's 12.5 ms at 16 x 4096 on one H200,
benchmarks/results/2026-12-03-h200-layers-mamba2-cb-half). Per shape (the template's inputs: ``x B C`` 4352
columns of an 8512-column projection): ``pt_tvm.ops.causal_conv1d`` as the layer
calls it (the search's pick; then the search's best plan of each other kind, :func:`_kinds`, and the plan the
search picked at 244e808, before a float division counted as an SFU reciprocal), PyTorch as the layer calls it,
``torch.compile`` of the same function, a device-to-device copy of the same rows into a packed tensor (PyTorch's
copy kernel reading strided rows: 1.7-1.8 TB/s on an H200) and one of a packed tensor (the same bytes: the
copy peak); every output checked against float32, timed from CUDA graphs in alternating rounds.

Run from the project root on the GPU machine: ``python -m benchmarks.experiments.conv1d $OUT``; writes
``conv1d.json``.
"""
import sys
import time

import torch

from benchmarks.experiments.variants import before, graphed_if_right, save_rows
from benchmarks.layers.models import causal_conv1d_silu
from pt_tvm import hw, ops, templates
from pt_tvm.compiler import schedule_template
from pt_tvm.graph import OpKind
from pt_tvm.measure import capture, input_sets, time_samplers

CONFIGS = [dict(batch=b, seqlen=s) for b, s in ((1, 777), (1, 4096), (4, 2048), (16, 4096))]
LAYER = {"channels": 4352, "width": 4, "x_stride": 8512}  # x B C: 4352 columns of the in-projection's 8512
DEADLINE_S = 240  # no config starts timing after this
# The search's pick at 244e808 (block_L, block_D, block_S; warp-specialized, two consumer warpgroups, four deep,
# y stored from registers), before a float division counted as an SFU reciprocal (SiLU's: 2f41aa1)
PICK_244E808 = {(1, 777): (128, 64, 1024), (1, 4096): (128, 128, 2048), (4, 2048): (128, 64, 1024),
                (16, 4096): (128, 64, 512)}


def _tile(c) -> str:
    return " ".join(f"{k}={v}" for k, v in c.plan.tile.items()) + f", {c.note}"


def _kinds(result) -> dict:
    """The search's best-ranked plan of each kind: warp-specialized or one role, the sEU loading ``x``, and
    whether ``y`` is staged in shared memory (stored by TMA) or stored from registers."""
    kinds = {}
    for c in result.ranked:
        (load,) = [t for t in c.graph.loop_stasks if t.op == OpKind.COPY and t.reads[0].scope == "global"]
        kind = (f"{'ws' if len(c.plan.roles) > 1 else 'sp'} x@{c.plan.append_of(load.id).seu.value} "
                f"y {'shared' if c.plan.tile['stage_y'] else 'registers'}")
        kinds.setdefault(kind, c)
    return kinds


def _previous(result, cfg):
    """The best-ranked warp-specialized plan of the tile the search picked at 244e808 (that pick itself)."""
    block_L, block_D, block_S = PICK_244E808[cfg["batch"], cfg["seqlen"]]
    return next(c for c in result.ranked if len(c.plan.roles) > 1 and c.plan.tile["stage_y"] == 0
                and (c.plan.tile["block_L"], c.plan.tile["block_D"], c.plan.tile["block_S"]) == (block_L, block_D,
                                                                                             block_S))


def main(out_dir: str) -> None:
    t_start, vdev, tmpl = time.time(), hw.from_device(), templates.get("causal_conv1d")
    rows = []
    for cfg in before(CONFIGS, DEADLINE_S, t_start):
        result, problem, build = schedule_template("causal_conv1d", vdev, params={**cfg, **LAYER})
        kinds = _kinds(result)
        compiled = torch.compile(causal_conv1d_silu)
        systems = {
            "pt-tvm op": (lambda x, w, b: ops.causal_conv1d(x.transpose(1, 2), w, b, "silu").transpose(1, 2),
                          {"tile": _tile(result.best), "predicted_ms": result.best.seconds * 1e3}),
            "pytorch": (lambda x, w, b: causal_conv1d_silu(x, w[:, None], b), {}),
            "torch-compile": (lambda x, w, b: compiled(x, w[:, None], b), {}),
        }
        for name, c in {"244e808's pick": _previous(result, cfg), **kinds}.items():
            if c.plan != result.best.plan:
                kernel = tmpl.compile(build(c), vdev.tvm_target())
                systems[name] = (kernel, {"tile": _tile(c), "predicted_ms": c.seconds * 1e3})
        fns, info = {}, {}
        for name, (fn, entry) in systems.items():
            info[name] = dict(entry)
            sampler = graphed_if_right(tmpl, fn, problem, vdev, info[name])
            if sampler is not None:
                fns[name] = sampler
        moved = 2 * cfg["batch"] * cfg["seqlen"] * LAYER["channels"] * 2  # x read, y written
        rows_of = lambda seed: tmpl.make_inputs(problem, "cuda", torch.Generator("cuda").manual_seed(seed))[:1]  # noqa: E731
        sets = input_sets(rows_of, moved, vdev.l2_bytes, max_sets=4)
        assert torch.equal(sets[0][0].contiguous(), sets[0][0])  # the copy: the rows the conv reads, packed
        info["copy"] = {"rel_err": 0.0, "note": "the rows copied: the bytes the conv moves"}
        fns["copy"] = capture(lambda x: x.contiguous(), sets)
        info["copy packed"] = {"rel_err": 0.0, "note": "a packed tensor of y's size copied: the copy peak"}
        fns["copy packed"] = capture(lambda x: x.clone(), [(x.contiguous(),) for x, in sets])
        for name, t in time_samplers(fns, rounds=7, round_ms=150.0).items():
            info[name].update(ms=t.ms, p20_ms=t.p20, p80_ms=t.p80)
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
