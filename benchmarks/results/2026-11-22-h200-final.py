# The script that produced 2026-11-22-h200-final.json on one H200 (run from the project root as
# `python3 final_run.py` with the TileLang bundle and .peers/mamba on PYTHONPATH): the smoke configs
# plus FlashAttention D64 and the Mamba2 kernels at batch 64, every system but fa3 (flash-attn-4 was
# not on that machine), pt-tvm measuring its 6 most diverse best-predicted plans.
import os, torch
from benchmarks.suite import Config, header, run_configs, write_run
from benchmarks.systems import PEERS_BY_SUITE as P
from pt_tvm import hw
fa = lambda **k: dict(dict(batch=8, heads=16, kv_heads=16, seq_len=4096, dim=128, causal=False, dtype="float16"), **k)
at = tuple(s for s in P["attention"] if s != "fa3")
cfgs = [Config("attention", "flash_attention", fa(), at),
        Config("attention", "flash_attention", fa(batch=4, dim=256), at),
        Config("attention", "flash_attention", fa(batch=4, heads=32, kv_heads=32, dim=64), at),
        Config("gemm", "gemm", dict(M=8192, N=8192, K=8192, dtype="float16"), P["gemm"]),
        Config("mamba", "chunk_state", dict(batch=64, seqlen=4096, dtype="float16"), P["mamba"]),
        Config("mamba", "chunk_scan", dict(batch=64, seqlen=4096, dtype="float16"), P["mamba"])]
if __name__ == "__main__":
    rows = run_configs(cfgs, hw.from_device(), system_options={"tune_top_k": 6})
    write_run(os.environ["OUT"] + "/final.json", header("final_run.py (smoke + d64 + mamba b64)", torch.cuda.get_device_name()), rows)
