# Produced 2026-11-22-h200-last.json on one H200 (from the project root, TileLang bundle on
# PYTHONPATH): the final state of the search (shared-operand gemms may stay in flight) on the
# headline shapes, against TileLang's schedule, cuDNN, FA2 and cuBLAS.
import os, torch
from benchmarks.suite import Config, header, run_configs, write_run
from pt_tvm import hw
fa = lambda **k: dict(dict(batch=8, heads=16, kv_heads=16, seq_len=4096, dim=128, causal=False, dtype="float16"), **k)
att = ("pt-tvm", "pt-tvm-model", "tilelang-auto", "cudnn-sdpa", "fa2-sdpa")
cfgs = [Config("attention", "flash_attention", p, att) for p in
        (fa(), fa(batch=4, heads=32, kv_heads=32, dim=64), fa(batch=4, dim=256))]
cfgs.append(Config("gemm", "gemm", dict(M=8192, N=8192, K=8192, dtype="float16"),
                   ("pt-tvm", "pt-tvm-model", "tilelang-auto", "cublas")))
if __name__ == "__main__":
    rows = run_configs(cfgs, hw.from_device(), system_options={"tune_top_k": 6})
    write_run(os.environ["OUT"] + "/last.json", header("benchmarks/results/2026-11-22-h200-last.py",
                                                       torch.cuda.get_device_name()), rows)
