"""The ``layers`` suite: whole layers as the PipeThreader paper measures them, pt-tvm's ops against PyTorch.

A LLaMA-3-8B decoder layer in prefill and a Mamba2-1.3B mixer (:mod:`.models`), written once as plain PyTorch
modules over a set of ops, run by every system: ``eager`` (PyTorch, SDPA, a plain chunked SSD),
``torch-compile`` (Inductor, default and ``max-autotune``), ``mamba-ssm`` (its Triton SSD scan and gated norm,
Mamba2 only), ``pt-tvm`` (the module over :mod:`pt_tvm.ops`) and ``pt-tvm+compile`` (that module under
``torch.compile``, the ops as custom ops in the graph). Grid, checks and timing: :mod:`.suite`; pt-tvm's
kernels compiled ahead: :mod:`.warm`; the report with the paper's ratios: :mod:`.report`. Run it as any suite:
``python -m benchmarks run --suite layers`` (``layers-full`` for the whole grid, ``--dry-run`` on a CPU).
"""
from .report import write_report
from .suite import LAYER_TOL, PAPER_OVER_INDUCTOR, SUITES, SYSTEMS, dry_run_configs, run_configs

__all__ = ["SUITES", "SYSTEMS", "LAYER_TOL", "PAPER_OVER_INDUCTOR", "run_configs", "dry_run_configs", "write_report"]
