"""GPU experiment (issue 14 item 1): what the SSD forward costs on the kernels of its length's bucket.

With ``ops.configure(dynamic_tokens=True)``, ``ops.ssd_chunk_scan`` runs ``chunk_state`` and ``chunk_scan``
kernels whose sequence length is a kernel argument, planned at the length's bucket (the next power of two), so a
model compiles one kernel pair per bucket instead of one per length. Per length, Mamba2-1.3B's SSD (64 heads of
64, d_state 128, one group, chunks of 256, float16 as the layers suite runs it, batch 1): the op with the exact
length's kernels, the op on the bucket's, and mamba-ssm's ``mamba_chunk_scan_combined`` (Triton, as its
``Mamba2`` module calls it; ``benchmarks/fetch_mamba_ssm.sh`` lays it out in ``.peers/mamba`` for PYTHONPATH),
each output checked against the float32 chunked forward on fresh random inputs (NaN-prefilled), CUDA-graph
replay in alternating rounds.

Run from the project root on the GPU machine: ``python -m benchmarks.experiments.dynamic_ssd $OUT``.
Writes ``dynamic_ssd.json``.
"""
import logging
import math
import os
import sys
import time

import torch

from benchmarks.experiments.variants import bucket_stores, compare_buckets, save_rows, store_kernels, through
from benchmarks.layers.models import Mamba2Shape, ssd_chunked
from benchmarks.layers.opsets import mamba_ssm
from pt_tvm import ops, templates

SEQLENS = (777, 2500)
SHAPE = Mamba2Shape()
DTYPE = "float16"


def _pt_tvm(x, dt, A, B, C, D, dt_bias):
    return ops.ssd_chunk_scan(x, dt, A, B, C, SHAPE.chunk, D=D, dt_bias=dt_bias, dt_softplus=True)


def _reference(x, dt, A, B, C, D, dt_bias):
    """The float32 chunked forward of the layers suite."""
    return ssd_chunked(x.float(), dt.float(), A, B.float(), C.float(), SHAPE.chunk, D, dt_bias)


def _flops(seqlen: int) -> float:
    """The two kernels' useful multiply-adds (the templates' own counts; the glue is not counted)."""
    problem = {"batch": 1, "seqlen": seqlen, "heads": SHAPE.nheads, "headdim": SHAPE.headdim,
               "dstate": SHAPE.d_state, "chunk": SHAPE.chunk, "groups": SHAPE.ngroups}
    return sum(templates.get(name).flops(problem) for name in ("chunk_state", "chunk_scan"))


def main(out_dir):
    logging.basicConfig(level=logging.INFO, format="%(name)s: %(message)s")  # the ops log each schedule choice
    t0 = time.time()
    peer = mamba_ssm().ssd
    stores = bucket_stores(out_dir)
    fns = {**{n: through(s, _pt_tvm) for n, s in stores.items()},
           "mamba-ssm": lambda x, dt, A, B, C, D, dt_bias: peer(x, dt, A, B, C, SHAPE.chunk, D, dt_bias)}
    h, p, n, g = SHAPE.nheads, SHAPE.headdim, SHAPE.d_state, SHAPE.ngroups
    rows = []
    for L in SEQLENS:
        def make(seed):
            gen = torch.Generator("cuda").manual_seed(seed)

            def randn(*shape, dtype=getattr(torch, DTYPE)):
                return torch.randn(shape, generator=gen, device="cuda").to(dtype)

            rand = torch.rand(3, h, generator=gen, device="cuda")
            dt = torch.exp(math.log(1e-3) + (math.log(0.1) - math.log(1e-3)) * rand[0])
            return (randn(1, L, h, p), randn(1, L, h, dtype=torch.float32), -(1.0 + 15.0 * rand[1]),
                    randn(1, L, g, n), randn(1, L, g, n), 1.0 + rand[2], dt + torch.log(-torch.expm1(-dt)))

        info = compare_buckets(f"L={L:<5}", fns, "mamba-ssm", make, _reference, L * (h * p + 2 * g * n) * 2 + L * h * 4,
                               _flops(L), DTYPE)
        rows.append({"seqlen": L, "heads": h, "headdim": p, "dstate": n, "groups": g, "chunk": SHAPE.chunk,
                     "kernels": store_kernels(stores), "systems": info})
        save_rows(out_dir, "dynamic_ssd", rows)
    print(f"total {time.time() - t0:.0f} s")


if __name__ == "__main__":
    main(sys.argv[1] if len(sys.argv) > 1 else os.environ["OUT"])
