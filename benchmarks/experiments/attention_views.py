"""GPU experiment (issue 14, "PyTorch ops"): ``ops.attention`` on views read as they lie, against the same call on
contiguous copies made first (what the op asked of its callers before) and on tensors that lie packed already.

Per config (LLaMA-3-8B's attention, GQA 32/8, head dim 128, causal): queries of a ``[batch, heads, seqlen, dim]``
tensor transposed (as Hugging Face's layers hold them), keys and values the heads of one fused ``[batch, seqlen,
2 kv_heads, dim]`` projection output. Every output checked against a float32 reference on fresh random inputs, then
timed from CUDA graphs in alternating rounds, inputs rotated past the L2; the view kernel, the copies + packed
kernel, and the packed kernel alone (the copies' cost is their difference).

Run from the project root on the GPU machine: ``python -m benchmarks.experiments.attention_views $OUT``.
Writes ``attention_views.json``.
"""
import os
import sys

import torch

from benchmarks.experiments.variants import save_rows
from pt_tvm import hw, ops
from pt_tvm.measure import REL_TOL, check_call, input_sets, time_replayed
from pt_tvm.templates import get

CONFIGS = [dict(batch=b, seqlen=s, heads=32, kv_heads=8, dim=128) for b, s in ((1, 4096), (4, 2048))]


def _make(cfg, seed):
    """``(q, k, v)`` as views: ``q`` a transposed ``[b, h, s, d]`` tensor, ``k``/``v`` heads of one ``[b, s, 2 kv, d]``
    tensor."""
    g = torch.Generator("cuda").manual_seed(seed)
    b, s, h, kv, d = (cfg[k] for k in ("batch", "seqlen", "heads", "kv_heads", "dim"))
    q = torch.randn(b, h, s, d, generator=g, device="cuda").half().transpose(1, 2)
    both = torch.randn(b, s, 2 * kv, d, generator=g, device="cuda").half()
    return q, both[:, :, :kv], both[:, :, kv:]


def main(out_dir):
    vdev = hw.from_device()
    template = get("flash_attention")
    systems = {
        "views": lambda q, k, v: ops.attention(q, k, v, causal=True),
        "copies + packed": lambda q, k, v: ops.attention(q.contiguous(), k.contiguous(), v.contiguous(), causal=True),
    }
    rows = []
    for cfg in CONFIGS:
        check = _make(cfg, 1000)
        problem = {"batch": cfg["batch"], "heads": cfg["heads"], "kv_heads": cfg["kv_heads"], "seq_len": cfg["seqlen"],
                   "dim": cfg["dim"], "causal": True}
        ref = template.reference(*(t.contiguous() for t in check), **{**template.problem, **problem})
        sets = input_sets(lambda seed: _make(cfg, seed), sum(t.numel() * 2 for t in check), vdev.l2_bytes, 4)
        packed_sets = [tuple(t.contiguous() for t in s) for s in sets]
        info = {}
        for name, fn in systems.items():
            (chk,) = check_call(fn, check, (ref,))
            assert chk.rel_err < REL_TOL["float16"], (name, chk)
            info[name] = {"rel_err": chk.rel_err}
        (chk,) = check_call(systems["views"], tuple(t.contiguous() for t in check), (ref,))
        info["packed"] = {"rel_err": chk.rel_err}
        way, timed = time_replayed(systems, sets, rounds=5, round_ms=150.0, settle_ms=300.0)
        _, packed = time_replayed({"packed": systems["views"]}, packed_sets, rounds=5, round_ms=150.0,
                                  settle_ms=300.0)
        for name, t in {**timed, **packed}.items():
            info[name].update(ms=t.ms, p20_ms=t.p20, p80_ms=t.p80, timing=way)
        rows.append({"config": cfg, "systems": info})
        print(f"b{cfg['batch']} s{cfg['seqlen']}: " + "  ".join(f"{n} {v['ms'] * 1e3:.1f} us" for n, v in info.items())
              + f"  views / copies+packed {info['views']['ms'] / info['copies + packed']['ms']:.3f}", flush=True)
        save_rows(out_dir, "attention_views", rows)


if __name__ == "__main__":
    main(sys.argv[1] if len(sys.argv) > 1 else os.environ["OUT"])
