"""benchmarks model-check: the cost model's first pick and rank correlation on recorded GPU measurements.

The bar of issue 15 is a first pick within 3% of the fastest measured plan (geometric mean per suite) and a
Spearman correlation >= 0.8 between price and measured time. The thresholds here are today's figures (with
a little room), so a change that makes the model rank the recorded plans worse fails."""
import json
import os

import pytest

from benchmarks import cli
from benchmarks.modelcheck import MIN_PLANS, check_rows, load_runs, offered, ranks, spearman, summarize
from pt_tvm import cost, hw

DATA = os.path.join(os.path.dirname(__file__), "data")
H100_GEMM = os.path.join(DATA, "h100-gemm-measured-plans.json.gz")
H100_CHUNK_STATE = os.path.join(DATA, "h100-chunk-state-measured-plans.json.gz")  # 2026-11-23-h100-core
H200 = os.path.join(DATA, "h200-measured-plans.json.gz")
H100_ONE_COMMIT = os.path.join(DATA, "h100-one-commit-measured-plans.json.gz")  # 2026-11-23-h100-one-commit
H100_SUITES = os.path.join(DATA, "h100-suites-measured-plans.json.gz")  # 2026-11-23-h100-suites (5dc838d)
H100_LAYER_GEMMS = os.path.join(DATA, "h100-layer-gemms-measured-plans.json.gz")  # 2026-11-24-h100-layer-gemms
H200_LAYER_GEMMS = os.path.join(DATA, "h200-layer-gemms-measured-plans.json.gz")  # 2026-11-26-h200-layer-gemms
H100_DEPTH = os.path.join(DATA, "h100-depth-measured-plans.json.gz")  # 2026-11-26-h100-depth
H100_DEPTH_ALIAS = os.path.join(DATA, "h100-depth-alias-measured-plans.json.gz")  # 2026-11-26-h100-depth-alias
H100_X4_SUITES = os.path.join(DATA, "h100-x4-suites-measured-plans.json.gz")  # 2026-11-27-x4-suites (cb5b2ef)
H200_X2_SUITES = os.path.join(DATA, "h200-x2-suites-measured-plans.json.gz")  # 2026-11-28-h200-x2-suites (cb5b2ef)
FRESH_GEMM = os.path.join(DATA, "fresh-gemm-measured-plans.json.gz")  # 2026-11-28-h200-x2-gemm, 2026-11-28-h100-gemm
H200_CARRIED = os.path.join(DATA, "h200-carried-measured-plans.json.gz")  # 2026-11-29-h200-gemm-carried (563d031)
H200_GEMM_SUITE = os.path.join(DATA, "h200-gemm-suite-measured-plans.json.gz")  # 2026-11-29-h200-x2-gemm (0762e86)
CAUSAL_WALKS = os.path.join(DATA, "h200-causal-walks-measured-plans.json.gz")  # 2026-11-28-h200-causal-order
QUERY_TILES = os.path.join(DATA, "h200-query-tiles-measured-plans.json.gz")  # 2026-12-01-h200-query-tiles
O_SHARED = os.path.join(DATA, "h200-o-shared-measured-plans.json.gz")  # 2026-12-02-h200-o-shared-confirm, -walk-tail


# ---------------------------------------------------------------- Spearman
def test_ranks_average_ties():
    assert list(ranks([3.0, 1.0, 3.0, 2.0])) == [3.5, 1.0, 3.5, 2.0]
    assert list(ranks([5.0, 5.0, 5.0])) == [2.0, 2.0, 2.0]


def test_spearman_perfect_reversed_and_monotone():
    assert spearman([1, 2, 3, 4], [10, 20, 30, 40]) == pytest.approx(1.0)
    assert spearman([1, 2, 3, 4], [4, 3, 2, 1]) == pytest.approx(-1.0)
    assert spearman([1, 2, 3, 4], [1, 8, 27, 1000]) == pytest.approx(1.0)  # ranks, not values


def test_spearman_with_ties():
    # ranks (1, 2.5, 2.5, 4) against (1, 2, 3, 4): 4.5 / sqrt(4.5 * 5)
    assert spearman([1, 2, 2, 3], [1, 2, 3, 4]) == pytest.approx(4.5 / (4.5 * 5) ** 0.5)
    assert spearman([1, 1, 1], [1, 2, 3]) == 0.0  # a side without order agrees with nothing
    with pytest.raises(ValueError):
        spearman([1], [1])


# ---------------------------------------------------------------- the recorded runs
@pytest.fixture(scope="module")
def h100_gemm():
    [(_, run)] = load_runs(H100_GEMM)
    return summarize(check_rows(run["rows"], hw.get("h100")))


@pytest.fixture(scope="module")
def h200():
    checks = [c for _, run in load_runs(H200) for c in check_rows(run["rows"], hw.get("h200"))]
    return {s.kernel: s for s in summarize(checks)}


def test_h100_gemm_first_pick_and_ranks(h100_gemm):
    """32 GEMM and GEMM+row-sum configs of 2048-16384 rows (trans_B off), 4 measured plans each: first pick 2.7%
    behind the fastest in geometric mean (10.7% at worst); Spearman 0.45 in mean, -0.2 at worst. Before the TMA
    was priced at its measured L2 rate with a per-request cost (pt_tvm.hw, ``cost.TMA_REQUEST_CYCLES``): 0.8%
    (4.1%) and 0.67. Those plans measured block_K 32 ahead of 64 by up to 10%, which the request cost prices
    the other way; the layer GEMMs below (the layout ``linear`` runs) measured block_K 64 ahead everywhere.
    Since the wgmmas' extra operand reads stretch an L2-bound iteration (``cost._load_bound_stretch``, as the
    carried gemms measured): the same first picks, Spearman 0.17 (-0.4 at worst; 60% of the pairs more than 3%
    apart ordered right, 76% before). These kernels waited for their wgmmas and had no split by rows: their
    256x128x32 plans (m64n64 wgmmas) ran 1.02-1.08x their 128x256x32 twins (m64n128), faster at 8192^3 and
    16384^3, where the stretch prices them 1.10x slower."""
    every = h100_gemm[-1]
    assert every.kernel == "all" and every.configs == 32 and every.few_plans == 0
    assert every.gap_geomean < 1.03 and every.gap_worst < 1.11
    assert every.spearman_mean > 0.15 and every.spearman_worst > -0.45


@pytest.mark.parametrize("path, chip, geomean, worst, rho_mean", [
    (H100_LAYER_GEMMS, "h100", 1.02, 1.18, 0.6),
    (H200_LAYER_GEMMS, "h200", 1.04, 1.19, 0.55),
])
def test_layer_gemms_first_pick_and_ranks(path, chip, geomean, worst, rho_mean):
    """The layers' GEMMs at 512-4096 tokens (benchmarks.experiments.layer_gemms), their warp-specialized plans
    the current search offers: on one H100 (24 configs, 4-6 plans each) the first pick is 1.6% behind the
    fastest (17.7% worst), Spearman 0.66 (7.2% and -0.04 with the TMA at 128 B/clk and no request cost; 1.7%
    and 0.69 with L2's queueing, ``cost.TMA_QUEUE_CYCLES``); on one H200 (20 configs as ``linear`` calls them,
    512-4096 tokens, picked by this model) 3.9% (18.9%) and 0.59 (5.1% before; 3.5% and 0.64 with the
    queueing). With an L2-bound iteration stretched by its wgmmas' extra reads (``cost._load_bound_stretch``):
    1.9% (17.7%) and 0.61 on the H100, 3.3% (18.9%) and 0.63 on the H200 (2.5% and 0.66 without)."""
    checks = [c for _, run in load_runs(path) for c in check_rows(run["rows"], hw.get(chip), offered_only=True)]
    s = summarize(checks)[-1]
    assert s.gap_geomean < geomean and s.gap_worst < worst and s.spearman_mean > rho_mean


def test_h100_pipeline_depths_first_pick_and_ranks():
    """The LLaMA layer's GEMMs (8 configs, 512-4096 tokens) and fused SwiGLU (3) on one H100, each the model's
    pick, the same plan 2-6 deep and the best 128x128x64 plan 6 deep (benchmarks.experiments.depth). 4-6 deep
    ran 1.17-1.28x faster than 3 deep at 512 tokens, which an unloaded TMA latency prices alike: GEMM first pick
    9.2% behind the fastest (27.9% worst), Spearman 0.67. With L2's queueing priced for L2-bound loops
    (``cost.TMA_QUEUE_CYCLES``): 3.0% (21.6% worst: the plain gate/up GEMM at 512 tokens, 128x256 3 deep
    priced ahead of 128x128 6 deep, measured 1.22x slower), Spearman 0.72. With a load's least arrival time
    priced instead (``cost.TMA_LOADED_CYCLES``): 3.1% (21.6%), Spearman 0.84; on the plans the search still
    offers (no depth past 128 KB in flight), 0.1% (1.1%)."""
    checks = [c for _, run in load_runs(H100_DEPTH) for c in check_rows(run["rows"], hw.get("h100"))]
    by_kernel = {s.kernel: s for s in summarize(checks)}
    assert by_kernel["gemm"].configs == 8 and by_kernel["gemm_swiglu"].configs == 3
    assert by_kernel["gemm"].gap_geomean < 1.04 and by_kernel["gemm"].spearman_mean > 0.8
    assert by_kernel["gemm_swiglu"].gap_worst < 1.005
    offered = [c for _, run in load_runs(H100_DEPTH)
               for c in check_rows(run["rows"], hw.get("h100"), offered_only=True)]
    assert summarize(offered)[-1].gap_geomean < 1.005


def test_h100_epilogue_tile_over_the_stages_first_pick():
    """The same experiment after non-persistent plans laid the epilogue tile over the stages (10 GEMM configs,
    512-8192 tokens, 3 SwiGLU): 128x256 tiles 4 deep, the model's pick then, ran 0-8% slower than 3 deep, and
    every depth past 128 KB of loads in flight measured no faster than the best below it; the search no longer
    offers those depths (``SearchSpace.l2_bound_inflight``). On the plans it offers the first pick is the
    fastest measured on every GEMM config and 0.7% behind on SwiGLU (2.2% worst); on all measured plans,
    where the model prices 4 deep and 3 alike and breaks the tie toward the deeper, 3.9% and 5.0%."""
    vdev = hw.get("h100")
    rows = [r for _, run in load_runs(H100_DEPTH_ALIAS) for r in run["rows"]]
    wide = [{c["note"].split(":")[0]: c["ms"] for c in r["candidates"]} for r in rows
            if r["candidates"][0]["tile"]["block_N"] == 256 and r["candidates"][0]["plan"]["num_stages"] == 4]
    assert len(wide) >= 8 and all(r["pick"] >= r["d3"] * 0.99 for r in wide)
    offered = {s.kernel: s for s in summarize(check_rows(rows, vdev, offered_only=True))}
    assert offered["gemm"].configs == 10 and offered["gemm"].gap_worst < 1.005
    assert offered["gemm_swiglu"].gap_geomean < 1.01 and offered["gemm_swiglu"].gap_worst < 1.03
    every = {s.kernel: s for s in summarize(check_rows(rows, vdev))}
    assert every["gemm"].gap_geomean > offered["gemm"].gap_geomean


def test_h100_chunk_state_ranks():
    """The 5 chunk_state configs of the 2026-11-23 H100 run (7-8 measured plans each, their pt-tvm rows
    only). Software-pipelined plans of 2-8 steps and 2-4 blocks per SM: pricing co-resident blocks by
    their whole work, not their steady loop's busy share times the block's duration (which counted a
    short loop's fill and epilogue as busy), lifts the mean Spearman from 0.22 to 0.47 (worst -0.16 to
    0.09). The model prices the plans of one tile DRAM-bound at every depth, alike; among those ties the
    search takes the deepest (``rank_key``), which brings the first pick from 14.9% (25.7% worst) to 1.5%
    (3.5%) behind the fastest."""
    [(_, run)] = load_runs(H100_CHUNK_STATE)
    [s, _] = summarize(check_rows(run["rows"], hw.get("h100")))
    assert s.kernel == "chunk_state" and s.configs == 5
    assert s.spearman_mean > 0.42 and s.spearman_worst > 0.0
    assert s.gap_geomean < 1.02 and s.gap_worst < 1.04


def test_h100_suites_first_pick_and_ranks():
    """Every routine suite at 5dc838d on one H100, candidates timed from CUDA graphs (4-8 plans per config).
    chunk_state's first pick is the fastest plan on all 5 configs (15.9% behind, 27.7% worst, when ties
    went by note: the single-stage plan first); attention 1.0% (12.5%), GEMM 2.5% (7.3%), GEMM + row sum 6.3%
    (0.1%, 1.4% and 0.0% before the TMA's measured rate and request cost). chunk_scan stays 20.9% (41.5%)
    behind: the model prices its single-stage plans faster than the deeper ones that win."""
    checks = [c for _, run in load_runs(H100_SUITES) for c in check_rows(run["rows"], hw.get("h100"))]
    by_kernel = {s.kernel: s for s in summarize(checks)}
    assert by_kernel["chunk_state"].configs == 5 and by_kernel["chunk_state"].gap_worst < 1.005
    assert by_kernel["flash_attention"].configs == 26 and by_kernel["flash_attention"].gap_geomean < 1.01
    assert by_kernel["flash_attention"].spearman_mean > 0.85
    assert by_kernel["gemm"].gap_geomean < 1.03 and by_kernel["gemm_rowsum"].gap_geomean < 1.07
    assert by_kernel["chunk_scan"].gap_geomean < 1.22


def test_h100_x4_suites_first_pick_within_the_bar():
    """Every routine suite at cb5b2ef on four H100s (4 measured plans a config, the tuner settling each): the
    first pick is within issue 15's 3% of the fastest measured plan on every kernel (chunk_scan 0.0%,
    chunk_state 2.7%, attention 0.0%, GEMM 0.7%, GEMM + row sum 0.4%); Spearman 1.00 on chunk_scan and 0.86 on
    attention meet its 0.8, chunk_state's 0.51 does not, nor GEMM's 0.73 and GEMM + row sum's 0.53 (0.13 and 0.07
    before the shared-memory port, cost.shared_port_cycles, priced a Square split of 256-row tiles slower; GEMM
    2.0% and 0.62, GEMM + row sum 0.2% and 0.60 before an L2-bound iteration was stretched by its wgmmas' extra
    reads, cost._load_bound_stretch)."""
    checks = [c for _, run in load_runs(H100_X4_SUITES) for c in check_rows(run["rows"], hw.get("h100"))]
    by_kernel = {s.kernel: s for s in summarize(checks)}
    assert [by_kernel[k].configs for k in ("chunk_scan", "chunk_state", "flash_attention", "gemm", "gemm_rowsum")] \
        == [5, 5, 26, 9, 3]
    assert all(s.gap_geomean < 1.03 for s in by_kernel.values())
    assert by_kernel["flash_attention"].gap_worst < 1.02 and by_kernel["flash_attention"].spearman_mean > 0.8
    assert by_kernel["chunk_scan"].spearman_mean > 0.95 and by_kernel["chunk_state"].spearman_mean > 0.4
    assert by_kernel["gemm"].gap_geomean < 1.01 and by_kernel["gemm"].gap_worst < 1.03
    assert by_kernel["gemm"].spearman_mean > 0.7 and by_kernel["gemm_rowsum"].spearman_mean > 0.5


def test_h200_x2_suites_first_pick_and_ranks():
    """Every routine suite at the same commit on two H200s (the attention rows carry the graphs of the template they
    measured): first picks 0.0-1.4% behind the fastest; Spearman 1.00 on chunk_scan, 0.86 on attention and 0.80 on
    GEMM (0.47 without the shared-memory port), 0.77 on chunk_state and 0.47 on GEMM + row sum."""
    checks = [c for _, run in load_runs(H200_X2_SUITES) for c in check_rows(run["rows"], hw.get("h200"))]
    by_kernel = {s.kernel: s for s in summarize(checks)}
    assert [by_kernel[k].configs for k in ("chunk_scan", "chunk_state", "flash_attention", "gemm", "gemm_rowsum")] \
        == [5, 5, 26, 9, 3]
    assert all(s.gap_geomean < 1.02 and s.gap_worst < 1.04 for s in by_kernel.values())
    assert by_kernel["gemm"].spearman_mean > 0.79 and by_kernel["chunk_scan"].spearman_mean > 0.95
    assert by_kernel["flash_attention"].spearman_mean > 0.8 and by_kernel["flash_attention"].gap_worst < 1.02
    assert by_kernel["chunk_state"].spearman_mean > 0.7 and by_kernel["gemm_rowsum"].spearman_mean > 0.4


def test_gemm_runs_after_the_shared_memory_port():
    """gemm-core measured after the port was priced, on plans the model was not made from: on two H200s (a87f470)
    the first pick is 0.1% behind the fastest measured GEMM plan and Spearman 0.87 (GEMM), 0.67 (GEMM + row sum,
    whose plans all ran within 3% of each other); on one H100 (0a3eea8) 0.2% and 0.56 / 0.20. Before an L2-bound
    iteration was stretched by its wgmmas' extra reads (cost._load_bound_stretch): 0.7%, 0.84 and 0.80 on the
    H200s, 1.6% and 0.44 / 0.40 on the H100 (the Square splits under the L2 bound priced alike, NOTES-parity)."""
    by_run = {name.split("/")[0]: {s.kernel: s for s in summarize(check_rows(run["rows"],
                                                                             hw.get(run["header"]["target"])))}
              for name, run in load_runs(FRESH_GEMM)}
    h200, h100 = by_run["2026-11-28-h200-x2-gemm"], by_run["2026-11-28-h100-gemm"]
    assert h200["gemm"].configs == h100["gemm"].configs == 9
    assert h200["gemm"].gap_geomean < 1.005 and h200["gemm"].spearman_mean > 0.85
    assert h200["gemm_rowsum"].spearman_mean > 0.6
    assert h100["gemm"].gap_geomean < 1.005 and h100["gemm"].spearman_mean > 0.5


def test_carried_gemm_run_first_pick_and_ranks():
    """gemm-core with the search's GEMM plans carried into the next step, on one H200 (563d031): the measured
    times follow each plan's wgmma width (128x256 tiles as 2 x m64n128 a warpgroup 1.02-1.07x, 256x128 as
    m64n64 1.10-1.20x the time of m64n256 plans) where the loads, the model's bound, priced them alike. With the
    iteration stretched by the wgmmas' extra reads (``cost._load_bound_stretch``) the first pick is 0.4% behind
    the fastest measured plan (2.7% at worst, LLaMA-3-8B up, and 2.5% at 70B up: launched 256x160 plans priced
    ahead of the persistent 128x256), Spearman 0.96 on GEMM (0.80 at worst) and 1.00 on GEMM + row sum, every
    pair of plans more than 3% apart ordered right; without it 1.8% (6.0%), Spearman 0.84 (0.40) and 0.87. With
    the TMA's request cost at 25 cycles (was 55; test_whole_gemm_suite_first_pick_and_ranks): the first pick the
    fastest measured plan on every config, Spearman 0.98 on GEMM."""
    [(_, run)] = load_runs(H200_CARRIED)
    by_kernel = {s.kernel: s for s in summarize(check_rows(run["rows"], hw.get("h200")))}
    assert by_kernel["gemm"].configs == 9 and by_kernel["gemm_rowsum"].configs == 3
    every = by_kernel["all"]
    assert every.gap_geomean < 1.006 and every.gap_worst < 1.03 and every.pairs_right == 1.0
    assert by_kernel["gemm"].spearman_mean > 0.9 and by_kernel["gemm"].spearman_worst > 0.79
    assert by_kernel["gemm_rowsum"].spearman_mean > 0.95


def test_whole_gemm_suite_first_pick_and_ranks():
    """The whole gemm suite on two H200s (0762e86; 24 GEMM and 8 GEMM + row sum configs, 4 measured plans each,
    carried where persistent), on plans the model was not fitted to. Its block_K 32 plans measured level with
    their block_K 64 twins (1.005x over twelve like-for-like pairs), where a TMA request cost of 55 cycles
    (``cost.TMA_REQUEST_CYCLES``) priced them 1.056x: the first pick was 1.2% behind the fastest measured plan on
    GEMM, Spearman 0.64, 85% of the pairs more than 3% apart ordered right. At 25 cycles: 0.4% behind on GEMM (5.7%
    at worst: bf16 2048^3, less than a wave of tiles, its rows split over the warpgroups where the unsplit plan ran
    5% faster) and 0.3% on GEMM + row sum; Spearman 0.79 and 0.78; 97% of the pairs ordered right."""
    [(_, run)] = load_runs(H200_GEMM_SUITE)
    by_kernel = {s.kernel: s for s in summarize(check_rows(run["rows"], hw.get("h200")))}
    assert by_kernel["gemm"].configs == 24 and by_kernel["gemm_rowsum"].configs == 8
    assert by_kernel["gemm"].gap_geomean < 1.006 and by_kernel["gemm"].gap_worst < 1.06
    assert by_kernel["gemm_rowsum"].gap_geomean < 1.005 and by_kernel["gemm_rowsum"].gap_worst < 1.025
    every = by_kernel["all"]
    assert every.spearman_mean > 0.75 and every.pairs_right > 0.95


@pytest.fixture(scope="module")
def h100_one_commit():
    return [c for _, run in load_runs(H100_ONE_COMMIT) for c in check_rows(run["rows"], hw.get("h100"))]


def test_h100_one_commit_on_the_plans_the_search_offers(h100_one_commit):
    """The same run judged on the plans the current search still offers (``--offered``: since e952937 no
    software-pipelined plans at a tile's other thread counts). Mamba2 on all measured plans: first pick 45.9%
    (chunk_scan) and 36.5% (chunk_state) behind; on the offered ones 5.8% and 13.8%, Spearman 0.59 and 0.72.
    Since prices within ``search.PRICE_TIE`` of the fastest tie (the deepest DRAM-bound plan first): 5.8% and
    7.3% on all, 5.8% and 0.6% on the offered, whose ranks stay the better."""
    vdev = hw.get("h100")
    mamba = [r for _, run in load_runs(H100_ONE_COMMIT) for r in run["rows"] if r["kernel"].startswith("chunk_")]
    kept = [offered(r, vdev) for r in mamba]
    assert all(c["tile"]["threads"] == 128 for r in kept for c in r["candidates"])
    assert sum(len(r["candidates"]) for r in kept) < sum(len(r["candidates"]) for r in mamba)
    by_kernel = {s.kernel: s for s in summarize(check_rows(mamba, vdev, offered_only=True))}
    every = {s.kernel: s for s in summarize(h100_one_commit)}
    assert by_kernel["chunk_scan"].gap_geomean < 1.07 and every["chunk_scan"].gap_geomean < 1.07
    assert by_kernel["chunk_state"].gap_geomean < 1.02 < every["chunk_state"].gap_geomean < 1.10
    assert by_kernel["chunk_state"].spearman_mean > 0.68 > every["chunk_state"].spearman_mean


@pytest.mark.parametrize("kernel, configs, geomean, worst, rho_mean", [
    ("flash_attention", 117, 1.027, 1.15, 0.38),
    ("gemm", 11, 1.005, 1.005, 0.75),
    ("chunk_state", 9, 1.03, 1.24, 0.05),
    ("chunk_scan", 9, 1.005, 1.03, 0.43),
])
def test_h200_first_pick_and_ranks(h200, kernel, configs, geomean, worst, rho_mean):
    """The recorded H200 runs (tests/test_calibration.py reads them too). Today: first pick behind the
    fastest by 1.7% (13.1% worst) on attention, 0.0% on GEMM (1.3% and 15.2% before L2's queueing was priced,
    ``cost.TMA_QUEUE_CYCLES``), 2.6% (23.6%) on chunk_state, 0.3% (2.4%) on chunk_scan; mean Spearman 0.44,
    0.81, 0.06, 0.46 (chunk_state 2.3%, 20.7% and 0.23 before the TMA's measured rate and request cost)."""
    s = h200[kernel]
    assert s.configs == configs
    assert s.gap_geomean < geomean and s.gap_worst < worst
    assert s.spearman_mean > rho_mean


def test_configs_with_few_plans_are_counted_not_correlated():
    rows = [{"kernel": "gemm", "config": {"M": 1024, "N": 1024, "K": 1024}, "candidates": c}
            for c in (_gemm_candidates(2), _gemm_candidates(MIN_PLANS))]
    [two, three] = check_rows(rows, hw.get("h100"))
    assert two.spearman is None and three.spearman is not None
    assert summarize([two, three])[-1].few_plans == 1


def _gemm_candidates(n: int) -> list[dict]:
    """The first ``n`` measured candidates of the recorded H100 square-2048 GEMM row."""
    [(_, run)] = load_runs(H100_GEMM)
    return run["rows"][0]["candidates"][:n]


# ---------------------------------------------------------------- the command
def test_cli_prints_a_table_and_json(capsys):
    assert cli.main(["model-check", H100_GEMM]) == 0
    assert "| all | 32 |" in capsys.readouterr().out
    assert cli.main(["model-check", H100_GEMM, "--offered"]) == 0
    assert "| all | 32 |" in capsys.readouterr().out  # the GEMM run measured only tiles the search offers
    assert cli.main(["model-check", H100_GEMM, "--target", "h100", "--json"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert [s["kernel"] for s in out["summaries"]] == ["gemm", "gemm_rowsum", "all"]
    assert len(out["configs"]) == 32 and all(c["gap"] >= 1.0 for c in out["configs"])


def test_cli_refuses_bad_input_in_one_line(tmp_path, capsys):
    assert cli.main(["model-check", str(tmp_path / "missing.json")]) == 2
    (tmp_path / "run.json").write_text(json.dumps({"header": {"device": "NVIDIA H100"}, "rows": []}))
    assert cli.main(["model-check", str(tmp_path / "run.json")]) == 2
    assert cli.main(["model-check", str(tmp_path / "run.json"), "--target", "no-such-chip"]) == 2
    row = {"kernel": "gemm", "system": "pt-tvm", "config": {"M": 1024, "N": 1024, "K": 1024}}
    (tmp_path / "unknown.json").write_text(json.dumps({"header": {"device": "TPU"}, "rows": [row]}))
    assert cli.main(["model-check", str(tmp_path / "unknown.json")]) == 2
    (tmp_path / "broken.json").write_text(json.dumps({"header": {"device": "NVIDIA H100"}, "rows": [{}]}))
    assert cli.main(["model-check", str(tmp_path / "broken.json")]) == 2
    err = capsys.readouterr().err
    assert "no such file" in err and "no chip model" in err and "row 0: field 'kernel'" in err


def test_pairs_apart_count_only_plans_the_timing_tells_apart():
    """Pairs measured within APART of each other are left out; a pair the prices order as measured counts 1, a
    tie in price 1/2, the reverse 0."""
    from benchmarks.modelcheck import APART, pairs_apart

    measured = [1.0, 1.0 + APART / 2, 1.2, 1.5]
    assert pairs_apart([1, 2, 3, 4], measured) == (5.0, 5)  # all but the first pair, within the timing's spread
    assert pairs_apart([4, 3, 2, 1], measured) == (0.0, 5)
    assert pairs_apart([1, 1, 1, 1], measured) == (2.5, 5)
    assert pairs_apart([1, 2], [1.0, 1.01]) == (0.0, 0)


def test_causal_walks_first_pick_within_the_bar():
    """Causal FlashAttention's plans walked in launch order, in panels of heads walked forwards and in panels of
    block columns, measured on one H200 in three runs (10 configs each): the model's first pick among each config's
    walks is within issue 15's 3% of the fastest in geometric mean in every run (0.2%, 1.7%, 0.5%), 3.5% at worst.
    Spearman (0.49-0.61) is not the bar here: the walks of one plan measured 1-3% apart, one run's order of them
    another's within that spread."""
    for name, run in load_runs(CAUSAL_WALKS):
        (summary, _) = summarize(check_rows(run["rows"], hw.get("h200")))
        assert summary.configs == 10 and summary.gap_geomean < 1.02 and summary.gap_worst < 1.04, (name, summary)


def test_query_tiles_third_warpgroup_priced_as_measured(monkeypatch):
    """FlashAttention at head dim 64, the best plan at 64, 128 and 192 query rows (the last three consumer
    warpgroups), measured on one H200: nine configs of 197-16384 tokens, then LLaMA-3.2's GQA 32/8 (prefill and a
    KV cache, causal). With the three warpgroups' steady iteration stretched (``cost.THIRD_WARPGROUP_STRETCH``,
    fitted on the nine) the first pick is the fastest measured on all twelve, Spearman 1.00 on the nine and 0.83 on
    the three; unstretched the model put ViT-L/14's 577 tokens on 192 rows, 6.7% behind the 64-row plan."""
    runs = [run for _, run in load_runs(QUERY_TILES)]

    def checks():
        return [check_rows(run["rows"], hw.get("h200")) for run in runs]

    nine, gqa = (summarize(c)[0] for c in checks())
    assert (nine.configs, gqa.configs) == (9, 3)
    assert nine.gap_worst < 1.005 and nine.spearman_mean > 0.95 and gqa.gap_worst < 1.005
    monkeypatch.setattr(cost, "THIRD_WARPGROUP_STRETCH", 1.0)
    nine = summarize(checks()[0])[0]
    assert nine.gap_worst > 1.05 and nine.spearman_mean < 0.8


def test_persistent_walks_first_pick_as_measured_but_at_577_tokens():
    """FlashAttention without a mask, measured on one H200: the searched walk with the output tile of its own
    against the launched pick (seven configs), then at ViT-L/14's and ViT-B/16's token counts the walk of a key-tail
    tile, the same tile launched, a walk without the tail and the launched 64 x 64 tile. The first pick is the
    fastest measured on every config but ViT-L/14's 577 tokens, where the model prices the 64 x 64 software pipeline
    0.149 ms and it ran 0.134-0.136: its pick, the walk, 11% and 15% behind in the two runs (a known miss)."""
    checks = [c for _, run in load_runs(O_SHARED) for c in check_rows(run["rows"], hw.get("h200"))]
    assert len(checks) == 9
    assert {c.config["seq_len"] for c in checks if c.gap > 1.005} == {577}
    assert max(c.gap for c in checks) < 1.16
