#!/bin/bash
# The layers suite's Mamba2-1.3B rows (batch 1: 512, 777, 2048, 2500, 4096 tokens; batched: 4 x 2048, 16 x 4096) on
# ONE H200 after ssd_chunk_scan passes chunk_scan its cb in the input dtype (11e5d7e, b56bfb7; ba49f5b). Two device
# calls carrying .gpu-bundle and .peers/packed (benchmarks/fetch_mamba_ssm.sh), STEP mamba2 then mamba2-batched:
#   bash benchmarks/results/2026-12-03-h200-layers-mamba2-cb-half/run.sh STEP COMMIT
# (their layers-STEP.json gzipped), then, on any machine, the whole grid over the last one:
#   python -m benchmarks merge ../2026-12-01-h200-layers-mamba2/layers.json.gz --rerun layers-mamba2.json.gz \
#       --rerun layers-mamba2-batched.json.gz --out layers.json
#   gzip -9 layers.json; python -m benchmarks report layers.json.gz --out-dir layers/
bash benchmarks/layers-gpu.sh "$1" "$2"
# What ran (2026-12-03, nineteenth session, da694e7, one call, 437 s): mamba2-batched only
# (layers-mamba2-batched.json.gz, .log); batch 1 not run (the device time went to the causal conv1d). Not merged.
