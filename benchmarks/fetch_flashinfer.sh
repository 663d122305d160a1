#!/usr/bin/env bash
# FlashInfer, the paged-decode peer of the decode suite (benchmarks/decode_peers.py), for a GPU machine that has no
# package registry. Run from the project root on a machine with PyPI access:
#
#   bash benchmarks/fetch_flashinfer.sh
#
# flashinfer-python is a JIT package (its CUDA sources compile with the GPU machine's nvcc and ninja on first
# use); `import flashinfer` imports cuda-python, cuda-tile, nccl4py, the cuDNN frontend and NVML bindings, so
# they travel too (nvidia-cutlass-dsl comes with the flash-attn-4 peers bundle): 615 MB unpacked, 40 MB with
# xz -6 on 2026-11-23. The packed set is written in parts of at most 60 MB, .gpu-flashinfer/0, 1, ... (ignored
# by git; one part at that size): send one part per device run, each run
# starting with `source .gpu-flashinfer/N/flashinfer.sh`; once every part is on the machine the set is unpacked
# into /tmp/gpu-flashinfer and put on PYTHONPATH (benchmarks/decode-gpu.sh sources it when present).
set -euo pipefail
VERSION="${FLASHINFER_VERSION:-0.7.2.post1}"
root=$(git rev-parse --show-toplevel)
out="$root/.gpu-flashinfer"
exclude=$(git rev-parse --git-path info/exclude)
grep -qx '/.gpu-flashinfer/' "$exclude" 2>/dev/null || { mkdir -p "$(dirname "$exclude")"; echo '/.gpu-flashinfer/' >> "$exclude"; }
tmp=$(mktemp -d); trap 'rm -rf "$tmp"' EXIT
plat=(--only-binary=:all: --python-version 3.12 --implementation cp --platform manylinux_2_28_x86_64
      --platform manylinux_2_27_x86_64 --platform manylinux_2_24_x86_64 --platform manylinux_2_17_x86_64
      --platform manylinux2014_x86_64)
python3 -m pip download -q --disable-pip-version-check --no-deps "${plat[@]}" -d "$tmp/whl" \
  "flashinfer-python==$VERSION" einops tabulate nvidia-ml-py ninja cuda-python cuda-bindings cuda-pathfinder \
  nvidia-cudnn-frontend cuda-tile nccl4py nccl-extensions click tqdm
python3 -m pip install -q --no-deps --no-compile "${plat[@]}" --target "$tmp/site" "$tmp"/whl/*.whl
rm -rf "$out"; mkdir -p "$out"
tar -C "$tmp/site" -cf - . | xz -T2 -9 > "$tmp/flashinfer.tar.xz"
split -b 60M -d -a 1 "$tmp/flashinfer.tar.xz" "$tmp/part."
parts=$(ls "$tmp"/part.* | wc -l)
for f in "$tmp"/part.*; do
  n=${f##*.}
  mkdir -p "$out/$n"
  mv "$f" "$out/$n/flashinfer.tar.xz.$n"
  cat > "$out/$n/flashinfer.sh" <<SH
# Sourced on the GPU machine from the project root (see benchmarks/fetch_flashinfer.sh): part $n of $parts.
mkdir -p /tmp/gpu-flashinfer-parts
cp .gpu-flashinfer/*/flashinfer.tar.xz.* /tmp/gpu-flashinfer-parts/ 2>/dev/null
if [ ! -d /tmp/gpu-flashinfer/flashinfer ] && [ "\$(ls /tmp/gpu-flashinfer-parts | wc -l)" = "$parts" ]; then
  mkdir -p /tmp/gpu-flashinfer
  cat /tmp/gpu-flashinfer-parts/flashinfer.tar.xz.* \\
    | python3 -c "import sys, tarfile; tarfile.open(fileobj=sys.stdin.buffer, mode='r|xz').extractall('/tmp/gpu-flashinfer')" || return 1
fi
if [ -d /tmp/gpu-flashinfer/flashinfer ]; then
  export PYTHONPATH=\${PYTHONPATH:+\$PYTHONPATH:}/tmp/gpu-flashinfer
  echo "flashinfer $VERSION ready (JIT: its kernels compile with nvcc on first use)"
else
  echo "flashinfer: \$(ls /tmp/gpu-flashinfer-parts | wc -l) of $parts parts stored; send the next one"
fi
SH
done
ls -la "$out"/*
