"""Fuzzing the inputs a user hands pt-tvm: chip files, template parameters and benchmark baselines.

A few hundred seeded cases, mutated from valid inputs, through the API and the command lines. Each must end
in success or in one line naming the problem (exit status 2 on the command line), never a traceback, never
a regression gate that says OK on a broken baseline, never a negative or non-finite prediction.
"""
import copy
import json
import math
import random
import re

import pytest

from benchmarks import cli as bench_cli
from pt_tvm import cli, compiler, hw, templates
from pt_tvm.cost import estimate
from pt_tvm.errors import PtTvmError
from pt_tvm.verify import violations

SEED = 18
BAD_NUMBERS = [-1, 0, -2.5, "132", None, float("nan"), float("inf"), [], {}, True, "", -1e30]


def _one_line(text: str) -> bool:
    return bool(text.strip()) and "\n" not in text.strip() and "Traceback" not in text


# ---------------------------------------------------------------- chips
def _numeric_paths(spec: dict) -> list[tuple]:
    """Paths to every numeric field of a chip description (top level, its EU, each sEU)."""
    paths = [(k,) for k, v in spec.items() if isinstance(v, (int, float)) and not isinstance(v, bool)]
    paths += [("eu", k) for k, v in spec["eu"].items() if isinstance(v, (int, float)) and not isinstance(v, bool)]
    for i, seu in enumerate(spec["eu"]["seus"]):
        paths += [("eu", "seus", i, k) for k, v in seu.items() if isinstance(v, (int, float))
                  and not isinstance(v, bool)]
    return paths


_DELETE = object()  # a mutation that removes the field


def _set(spec: dict, path: tuple, value) -> None:
    node = spec
    for key in path[:-1]:
        node = node[key]
    if value is _DELETE:
        del node[path[-1]]
    else:
        node[path[-1]] = value


def _chip_mutations(rng: random.Random, n: int) -> list[tuple[str, dict]]:
    """(what was done, mutated h100 description): one field per case, numeric fields mostly."""
    base = hw.get("h100").to_dict()
    paths = _numeric_paths(base)
    out = []
    for _ in range(n):
        spec = copy.deepcopy(base)
        roll = rng.random()
        if roll < 0.7:
            path = rng.choice(paths)
            value = rng.choice(BAD_NUMBERS + [_DELETE, 10 ** rng.randint(-3, 15)])
        elif roll < 0.8:
            path = (rng.choice(["features", "target", "name", "eu"]),)
            value = rng.choice([_DELETE, None, [], ["warp_specialization", "no_such_feature"], 7, "x"])
        elif roll < 0.9:
            path = ("eu", "seus", rng.randrange(len(base["eu"]["seus"])), rng.choice(["kind", "is_async", "name"]))
            value = rng.choice(["quantum_core", None, 3, "", _DELETE])
        else:
            path = ("target",)
            value = rng.choice([{"kind": "cuda", "arch": "sm_75"}, {"kind": "metal"}, {"kind": "hip"},
                                {"kind": "cuda", "arch": "sm_80"}])
        _set(spec, path, value)
        out.append((f"{'/'.join(map(str, path))} := {'<deleted>' if value is _DELETE else repr(value)}", spec))
    return out


@pytest.fixture(scope="module")
def gemm_plans():
    """The best few H100 GEMM plans with their graphs: priced again on every mutated chip that loads."""
    result, _, _ = compiler.schedule_template("gemm", "h100", params={"M": 2048, "N": 2048, "K": 2048})
    return [(c.plan, c.graph) for c in result.ranked[:3]]


def test_mutated_chip_files_load_with_sane_prices_or_name_the_field(tmp_path, gemm_plans):
    rng = random.Random(SEED)
    loaded = 0
    for k, (what, spec) in enumerate(_chip_mutations(rng, 220)):
        path = tmp_path / f"chip{k}.json"
        path.write_text(json.dumps(spec))
        try:
            vdev = hw.load(str(path))
        except PtTvmError as e:
            assert _one_line(str(e)), f"{what}: {e!r}"
            continue
        loaded += 1
        for plan, graph in gemm_plans:
            try:
                broken = violations(plan, graph, vdev)
            except PtTvmError as e:
                assert _one_line(str(e)), f"{what}: {e!r}"
                continue
            assert all(v.message.strip() for v in broken), f"{what}: a violation without a reason: {broken}"
            if not broken:
                est = estimate(plan, graph, vdev)
                assert math.isfinite(est.seconds) and est.seconds > 0, f"{what}: predicted {est.seconds} s"
    assert 10 < loaded < 220  # both outcomes were exercised


def test_mutated_chip_files_through_the_command_line(tmp_path, capsys):
    """pt-tvm schedule with a mutated chip: exit 0 with a positive finite prediction, or 2 with one line."""
    rng = random.Random(SEED + 1)
    seen = set()
    for k, (what, spec) in enumerate(_chip_mutations(rng, 40)):
        path = tmp_path / f"chip{k}.json"
        path.write_text(json.dumps(spec))
        try:
            hw.load(str(path))
            outcome = "loads"
        except PtTvmError:
            outcome = "refused"
        if outcome in seen and len(seen) == 2 and k > 4:
            continue  # a few of each kind: a full schedule costs seconds
        code = cli.main(["schedule", "gemm", "--target", str(path), "--out", str(tmp_path / f"out{k}"),
                         "--param", "M=1024", "--param", "N=1024", "--param", "K=1024", "--top", "0"])
        out, err = capsys.readouterr()
        if code == 0:
            predicted = re.search(r"predicted: ([-\d.e+]+|nan|inf) us", out)
            assert predicted and 0 < float(predicted.group(1)) < math.inf, f"{what}: {out[-400:]}"
        else:
            assert code == 2 and _one_line(err), f"{what}: exit {code}: {err[-400:]}"
        seen.add(outcome)
    assert seen == {"loads", "refused"}


# ---------------------------------------------------------------- template parameters
BAD_VALUES = ["-1", "0", "abc", "1e9", "3.5", "", "true", "2048", "99999999", "7", "float64", "int8"]


def test_random_template_parameters_resolve_or_name_the_parameter():
    rng = random.Random(SEED)
    ok = refused = 0
    for _ in range(300):
        t = templates.get(rng.choice(templates.names()))
        keys = [*t.problem, *t.tile, "bogus", "block_Q"]
        overrides = {}
        for _ in range(rng.randint(1, 3)):
            key = rng.choice(keys)
            default = {**t.problem, **t.tile}.get(key, 64)
            good = [str(default), str(default * 2) if isinstance(default, int) else str(default)]
            overrides[key] = rng.choice(BAD_VALUES + good * 4 + [str(rng.randint(1, 20000))])
        try:
            problem, tile = t.resolve(**overrides)
            t.tile_candidates(problem, hw.get("h100").features)
            ok += 1
        except PtTvmError as e:
            assert _one_line(str(e)), f"{t.name} {overrides}: {e!r}"
            assert any(k in str(e) for k in overrides) or "dtype" in str(e), f"{t.name} {overrides}: {e}"
            refused += 1
    assert ok > 20 and refused > 20


def test_random_parameters_through_the_command_line(tmp_path, capsys):
    """pt-tvm graph with random parameters: exit 0, or 2 with one line on stderr."""
    rng = random.Random(SEED + 2)
    for k in range(12):
        name = rng.choice(templates.names())
        t = templates.get(name)
        key = rng.choice([*t.problem, *t.tile, "bogus"])
        value = rng.choice(BAD_VALUES)
        code = cli.main(["graph", name, "--target", "h100", "--param", f"{key}={value}",
                         "--out", str(tmp_path / f"g{k}")])
        _, err = capsys.readouterr()
        assert code in (0, 2), f"{name} {key}={value}: exit {code}"
        assert code == 0 or _one_line(err), f"{name} {key}={value}: {err[-400:]}"


# ---------------------------------------------------------------- baselines
def _run(rng: random.Random) -> dict:
    rows = []
    for kernel in ("gemm_float16", "flash_attention_float16_d128_causal"):
        for n in (1024, 2048):
            for system in ("pt-tvm", "cuBLAS", "cuDNN"):
                ms = round(rng.uniform(0.05, 5.0), 4)
                rows.append({"kernel": kernel, "system": system, "config": {"n": n}, "ms": ms,
                             "tflops": round(1.0 / ms, 3), "valid": True})
    return {"header": {"device": "NVIDIA H100", "command": "synthetic"}, "rows": rows}


def _mutate_baseline(rng: random.Random, base: dict) -> tuple[str, str, bool]:
    """(what was done, the file's text, whether it is still a usable baseline)."""
    run = copy.deepcopy(base)
    row = rng.choice(run["rows"])
    roll = rng.random()
    if roll < 0.45:
        key = rng.choice(["ms", "tflops", "valid", "queued"])
        value = rng.choice(BAD_NUMBERS + ["fast", {"ms": -1}, {"ms": 2.0}, 1e308, 0.5, False] + [0.25, 3.0, None] * 3)
        row[key] = value
        if key == "valid":
            usable = value in (True, False, None)
        elif key == "queued":
            usable = value is None or value == {"ms": 2.0}
        else:
            low_ok = (lambda v: v > 0) if key == "ms" else (lambda v: v >= 0)
            usable = value is None or (isinstance(value, (int, float)) and not isinstance(value, bool)
                                       and math.isfinite(value) and low_ok(value))
        what = f"row {key} := {value!r}"
    elif roll < 0.6:
        key = rng.choice(["system", "kernel", "config"])
        del row[key]
        what, usable = f"row without {key}", False
    elif roll < 0.7:
        run["rows"] = rng.choice([[], {}, None, "rows"])
        what, usable = f"rows := {run['rows']!r}", False
    elif roll < 0.8:
        run = rng.choice([[], "run", 3, None])
        what, usable = f"run := {run!r}", False
    else:
        text = json.dumps(run)
        cut = rng.randrange(1, len(text) - 1)
        return f"truncated at {cut} of {len(text)}", text[:cut], False
    return what, json.dumps(run), usable


def test_compare_refuses_every_broken_baseline(tmp_path, capsys):
    """`benchmarks compare RUN BASE`: exit 2 with one line for a broken baseline, 0 or 1 for a usable one."""
    rng = random.Random(SEED)
    base = _run(rng)
    run_path = tmp_path / "run.json"
    run_path.write_text(json.dumps(base))
    verdicts = {True: 0, False: 0}
    for k in range(220):
        what, text, usable = _mutate_baseline(rng, base)
        path = tmp_path / f"base{k}.json"
        path.write_text(text)
        code = bench_cli.main(["compare", str(run_path), str(path)])
        _, err = capsys.readouterr()
        if usable:
            assert code in (0, 1), f"{what}: exit {code}: {err}"
        else:
            assert code == 2 and _one_line(err), f"{what}: exit {code}: {err[-400:]}"
        verdicts[usable] += 1
    assert min(verdicts.values()) > 20
