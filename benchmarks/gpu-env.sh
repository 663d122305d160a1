# Sourced by the dated run scripts on the GPU machine, from the project root: unpacks the bundles a call
# carries into /tmp (once per machine; later calls of the same warm machine reuse them) and defines
# `suite NAME TOP_K LIMIT_S [SHARD]`, one benchmarks suite (or shard) in one process, its JSON and log
# under $OUT, the summary lines printed.
env_setup() {
  [ -f .gpu-bundle/setup.sh ] && cp .gpu-bundle/setup.sh /tmp/gpu-setup.sh
  source /tmp/gpu-setup.sh || return 1
  for d in .gpu-peers/a .gpu-peers/b; do [ -f $d/peers.sh ] && cp $d/peers.sh /tmp/gpu-peers.sh; done
  [ -f /tmp/gpu-peers.sh ] && source /tmp/gpu-peers.sh
  if [ -d .peers/mamba ]; then rm -rf /tmp/mamba-peer; cp -r .peers/mamba /tmp/mamba-peer
  elif [ -f .peers/packed/mamba.tar.xz ]; then  # benchmarks/fetch_mamba_ssm.sh's archive of the same folder
    rm -rf /tmp/mamba-peer; mkdir -p /tmp/mamba-peer
    tar -C /tmp/mamba-peer --strip-components=1 -xJf .peers/packed/mamba.tar.xz
  fi
  export PYTHONPATH=$PYTHONPATH:/tmp/mamba-peer TORCHINDUCTOR_COMPILE_THREADS=1
}

suite() {  # NAME TOP_K LIMIT_S [SHARD]
  local tag=$1${4:+-${4%/*}}
  timeout $3 python -m benchmarks run --suite $1 ${4:+--shard $4} --tune-top-k $2 --rep-ms 200 \
    --out $OUT/$tag.json > $OUT/$tag.log 2>&1
  echo "$tag: rc=$? $(python -c "import json;h=json.load(open('$OUT/$tag.json'))['header'];print('wall_s',h['wall_s'],'partial',h.get('partial'))")"
  grep -h "geomean" $OUT/$tag.log | cut -c1-160
}
