"""The README's Python snippet runs as written on a CPU machine, up to the line that says a GPU is needed."""
from __future__ import annotations

import os
import re

from pt_tvm.passes.ir import find_root_block

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
GPU_MARK = "# --- from here on: needs a GPU"


def _python_snippet() -> str:
    text = open(os.path.join(ROOT, "README.md")).read()
    section = text[text.index("## Python"):]
    return re.search(r"```python\n(.*?)```", section, re.S).group(1)


def test_readme_python_snippet_runs_on_cpu_up_to_the_gpu_mark():
    code = _python_snippet()
    assert GPU_MARK in code
    scope: dict = {}
    exec(compile(code[:code.index(GPU_MARK)], "README.md", "exec"), scope)
    assert "__global__" in scope["cuda"]
    assert "tl.ws_schedule" in find_root_block(scope["planned"]).annotations  # the pass wrote its plan in
    assert scope["result"].best.plan.tile
