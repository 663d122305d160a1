# The fan-out in simulation (issue 17), on the 2-core CPU VM (no GPU), from the project root:
# a local tracker, N fake servers whose measurement sleeps, M jobs through pt_tvm.fanout.Fanout.
# scale-64x10000.json was made at commit d27f4d6, scale-8x400.json at 9635c30.
python -m benchmarks.fanout_scale --servers 64 --jobs 10000 --sleep 2.0 --out scale-64x10000.json
python -m benchmarks.fanout_scale --servers 8 --jobs 400 --sleep 0 --sleep 0.5 --out scale-8x400.json
