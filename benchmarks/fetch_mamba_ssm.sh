#!/usr/bin/env bash
# Fetch mamba_ssm's Triton SSD kernels (the peer of the mamba2 templates) into .peers/mamba/.
#
# Run from the project root on a machine with PyPI access and torch installed:
#     bash benchmarks/fetch_mamba_ssm.sh
# then put the folder on the path: PYTHONPATH=.peers/mamba
#
# Only the pure-Python Triton ops and utils are kept (no CUDA extension is built:
# MAMBA_SKIP_CUDA_BUILD), with empty package __init__ files (the real ones import the CUDA
# extensions) and the einops and packaging wheels they import, so that
# `from mamba_ssm.ops.triton.ssd_chunk_state import _chunk_state_fwd` and
# `from mamba_ssm.ops.triton.ssd_chunk_scan import _chunk_scan_fwd` import without
# the rest of the package. .peers/ is git-ignored: never commit this code
# (mamba_ssm is Apache-2.0, Copyright Tri Dao and Albert Gu; its LICENSE is kept beside it).
set -euo pipefail

VERSION="${MAMBA_SSM_VERSION:-2.3.2.post1}"
DEST=".peers/mamba"

if [ ! -f pyproject.toml ] || [ ! -d templates ]; then
  echo "fetch_mamba_ssm.sh: run from the pt-tvm project root" >&2
  exit 1
fi

TMP="$(mktemp -d)"
trap 'rm -rf "$TMP"' EXIT

# setup.py imports torch, hence --no-build-isolation (torch must be installed);
# the two MAMBA_ variables skip the CUDA extension and the prebuilt-wheel download.
MAMBA_SKIP_CUDA_BUILD=TRUE MAMBA_FORCE_BUILD=TRUE \
  python -m pip download --no-deps --no-binary :all: --no-build-isolation \
  "mamba-ssm==${VERSION}" -d "$TMP/dl"

SDIST="$(ls "$TMP"/dl/mamba_ssm-*.tar.gz "$TMP"/dl/mamba-ssm-*.tar.gz 2>/dev/null | head -n 1 || true)"
if [ -z "$SDIST" ]; then
  echo "fetch_mamba_ssm.sh: no mamba_ssm sdist in $TMP/dl: $(ls "$TMP/dl")" >&2
  exit 1
fi
mkdir -p "$TMP/src"
tar -xzf "$SDIST" -C "$TMP/src"
ROOT="$(find "$TMP/src" -mindepth 1 -maxdepth 1 -type d | head -n 1)"
if [ ! -d "$ROOT/mamba_ssm/ops/triton" ] || [ ! -d "$ROOT/mamba_ssm/utils" ]; then
  echo "fetch_mamba_ssm.sh: unexpected sdist layout in $SDIST" >&2
  exit 1
fi

rm -rf "$DEST"
mkdir -p "$DEST/mamba_ssm/ops/triton" "$DEST/mamba_ssm/utils"
cp "$ROOT"/mamba_ssm/ops/triton/*.py "$DEST/mamba_ssm/ops/triton/"
cp "$ROOT"/mamba_ssm/utils/*.py "$DEST/mamba_ssm/utils/"
: > "$DEST/mamba_ssm/__init__.py"
: > "$DEST/mamba_ssm/ops/__init__.py"
[ -f "$DEST/mamba_ssm/ops/triton/__init__.py" ] || : > "$DEST/mamba_ssm/ops/triton/__init__.py"
[ -f "$DEST/mamba_ssm/utils/__init__.py" ] || : > "$DEST/mamba_ssm/utils/__init__.py"
if [ -f "$ROOT/LICENSE" ]; then cp "$ROOT/LICENSE" "$DEST/LICENSE"; fi

# The Triton ops import einops and packaging (pure Python); a GPU machine without network
# access may lack them, so their wheels are unpacked beside mamba_ssm. Triton comes with torch.
python -m pip download --no-deps --only-binary :all: "einops==${EINOPS_VERSION:-0.8.2}" "packaging==${PACKAGING_VERSION:-26.3}" -d "$TMP/whl"
python - "$TMP/whl" "$DEST" <<'PY'
import pathlib, sys, zipfile
whl_dir, dest = pathlib.Path(sys.argv[1]), pathlib.Path(sys.argv[2])
for whl in sorted(whl_dir.glob("*.whl")):
    top = whl.name.split("-")[0]
    with zipfile.ZipFile(whl) as z:
        z.extractall(dest, [n for n in z.namelist() if n.startswith(top + "/")])
    print(f"unpacked {top} from {whl.name}")
PY
# The tracked tree and the TileLang bundle fill most of what a device call carries (64 MiB): the folder travels
# packed (0.2 MB against 1.1), carried as .peers/packed and unpacked by benchmarks/gpu-env.sh's env_setup.
mkdir -p .peers/packed && tar -C "$(dirname "$DEST")" -cJf .peers/packed/mamba.tar.xz "$(basename "$DEST")"
echo "mamba_ssm ${VERSION} Triton ops and utils (with einops, packaging) in $DEST: use PYTHONPATH=$DEST" \
  "(packed for a device call: carry .peers/packed)"
