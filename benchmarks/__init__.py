"""GPU benchmarks of pt-tvm against its peers: ``python -m benchmarks run --suite attention|gemm|all``.

See ``benchmarks/README.md`` and ``python -m benchmarks --help``.
"""
