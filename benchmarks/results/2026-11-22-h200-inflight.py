# Produced 2026-11-22-h200-inflight.json on one H200 (run from the project root with the TileLang
# bundle on PYTHONPATH): FlashAttention after the search learned to keep a wgmma in flight
# (the Wait primitive on the asynchronous tensor core), against cuDNN, FA2 and TileLang's schedule.
import os, torch
from benchmarks.suite import Config, header, run_configs, write_run
from pt_tvm import hw
fa = lambda **k: dict(dict(batch=8, heads=16, kv_heads=16, seq_len=4096, dim=128, causal=False, dtype="float16"), **k)
systems = ("pt-tvm", "pt-tvm-model", "tilelang-auto", "cudnn-sdpa", "fa2-sdpa")
cfgs = [Config("attention", "flash_attention", p, systems) for p in
        (fa(), fa(batch=4, dim=256), fa(batch=4, heads=32, kv_heads=32, dim=64), fa(batch=4, causal=True),
         fa(batch=4, dtype="bfloat16"), fa(batch=1, seq_len=16384))]
if __name__ == "__main__":
    rows = run_configs(cfgs, hw.from_device(), system_options={"tune_top_k": 6})
    write_run(os.environ["OUT"] + "/inflight.json", header("benchmarks/results/2026-11-22-h200-inflight.py",
                                                           torch.cuda.get_device_name()), rows)
