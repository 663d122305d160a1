"""GPU benchmarks of pt-tvm against its peers: ``python -m benchmarks run --suite attention|gemm|all``."""
