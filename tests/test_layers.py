"""The package's import graph: modules import only modules of earlier layers (the data flows one way, as
the module table of the design describes), at module top level, and each imports alone in a fresh
interpreter."""
from __future__ import annotations

import ast
import concurrent.futures
import os
import subprocess
import sys

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
_DIRS = {"pt_tvm": "pt_tvm", "pt_tvm.ops": "pt_tvm/ops", "pt_tvm.passes": "passes", "pt_tvm.templates": "templates"}

# Top to bottom: a module may import the modules of the layers above its own (and the same layer's, where
# a layer is a package with its package module last).
LAYERS: list[tuple[str, ...]] = [
    ("pt_tvm.errors",),
    ("pt_tvm.hw",),
    ("pt_tvm.graph",),
    ("pt_tvm.plan",),
    ("pt_tvm.stream_k",),
    ("pt_tvm.cache",),
    ("pt_tvm.tunedb",),
    ("pt_tvm.lowering",),
    ("pt_tvm.simulate",),
    ("pt_tvm.verify",),
    ("pt_tvm.emitted",),
    ("pt_tvm.cost",),
    ("pt_tvm.space",),
    ("pt_tvm.search",),
    ("pt_tvm.passes.ir", "pt_tvm.passes.deps", "pt_tvm.passes.extract", "pt_tvm.passes.materialize",
     "pt_tvm.passes.carry", "pt_tvm.passes.multicast", "pt_tvm.passes.apply", "pt_tvm.passes.pipethreader",
     "pt_tvm.passes"),
    ("pt_tvm.templates.base", "pt_tvm.templates.online_softmax", "pt_tvm.templates.gemm",
     "pt_tvm.templates.flash_attention", "pt_tvm.templates.decode_attention", "pt_tvm.templates.mamba2",
     "pt_tvm.templates.conv1d", "pt_tvm.templates"),
    ("pt_tvm.compiler",),
    ("pt_tvm.measure",),
    ("pt_tvm.tune",),
    ("pt_tvm.decode",),
    ("pt_tvm.worker",),
    ("pt_tvm.fanout",),
    ("pt_tvm.cluster",),
    ("pt_tvm.cluster_cli",),
    ("pt_tvm.ops.checks", "pt_tvm.ops.kernels", "pt_tvm.ops.attention", "pt_tvm.ops.conv", "pt_tvm.ops.decode",
     "pt_tvm.ops.gemm", "pt_tvm.ops.ssd", "pt_tvm.ops"),
    ("pt_tvm.timeline",),
    ("pt_tvm.cli",),
]
# The only imports inside functions: the package's lazily loaded flow functions, and an optional extra.
DEFERRED = {("pt_tvm", "pt_tvm.compiler"), ("pt_tvm.timeline", "matplotlib"), ("pt_tvm.timeline", "matplotlib.pyplot"),
            ("pt_tvm.cluster_cli", "tvm.rpc.tracker")}


def _path(module: str) -> str:
    for prefix in sorted(_DIRS, key=len, reverse=True):
        if module == prefix or module.startswith(prefix + "."):
            rest = module[len(prefix):].lstrip(".").replace(".", "/")
            base = os.path.join(ROOT, _DIRS[prefix], rest)
            return base + ".py" if rest else os.path.join(base, "__init__.py")
    raise KeyError(module)


def _modules() -> list[str]:
    out = ["pt_tvm"]
    for package, folder in _DIRS.items():
        for name in sorted(os.listdir(os.path.join(ROOT, folder))):
            if name.endswith(".py") and name != "__init__.py":
                out.append(f"{package}.{name[:-3]}")
            elif name == "__init__.py" and package != "pt_tvm":
                out.append(package)
    return out


def _imports(module: str) -> list[tuple[str, bool]]:
    """(imported module, at top level) for each import of ``module``, relative ones resolved
    (``from pt_tvm import hw`` imports ``pt_tvm.hw``)."""
    tree = ast.parse(open(_path(module)).read())
    package = module if _path(module).endswith("__init__.py") else module.rsplit(".", 1)[0]
    top = set(map(id, tree.body))
    known = set(_modules())
    out = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            out += [(a.name, id(node) in top) for a in node.names]
        elif isinstance(node, ast.ImportFrom):
            base = package.rsplit(".", node.level - 1)[0] if node.level > 1 else package
            name = (f"{base}.{node.module}" if node.module else base) if node.level else node.module
            out += [(f"{name}.{a.name}" if f"{name}.{a.name}" in known else name, id(node) in top)
                    for a in node.names]
    return out


def _layer(module: str) -> int:
    for i, layer in enumerate(LAYERS):
        if module in layer:
            return i
    raise AssertionError(f"{module} is in no layer of LAYERS: place it")


def test_every_module_has_a_layer():
    for m in _modules():
        if m != "pt_tvm":
            _layer(m)


def test_imports_flow_down_the_layers_at_top_level():
    bad = []
    for m in _modules():
        for target, at_top in _imports(m):
            if target != "pt_tvm" and not target.startswith("pt_tvm."):
                if not at_top and (m, target) not in DEFERRED and target.split(".")[0] != "__future__":
                    bad.append(f"{m}: imports {target} inside a function")
                continue
            if not at_top and (m, target) not in DEFERRED:
                bad.append(f"{m}: imports {target} inside a function")
            if m == "pt_tvm" or target == "pt_tvm":
                continue  # the package itself holds only the version and the lazy flow functions
            lm, lt = _layer(m), _layer(target)
            if lt > lm or (lt == lm and LAYERS[lm].index(target) > LAYERS[lm].index(m)):
                bad.append(f"{m} (layer {lm}) imports {target} (layer {lt}), which comes after it")
    assert not bad, "\n".join(bad)


def _import_alone(module: str) -> str:
    proc = subprocess.run([sys.executable, "-c", f"import {module}"], capture_output=True, text=True, cwd=ROOT,
                          timeout=300)
    return "" if proc.returncode == 0 else f"{module}: {proc.stderr.strip().splitlines()[-1]}"


@pytest.mark.parametrize("chunk", range(2))
def test_each_module_imports_alone_in_a_fresh_interpreter(chunk):
    mods = _modules()[chunk::2]
    with concurrent.futures.ThreadPoolExecutor(max(1, (os.cpu_count() or 2))) as pool:
        failed = [e for e in pool.map(_import_alone, mods) if e]
    assert not failed, "\n".join(failed)
