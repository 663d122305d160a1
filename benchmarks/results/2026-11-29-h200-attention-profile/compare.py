"""pt-tvm's FlashAttention kernel beside flash-attn-4's, per config, from the Nsight Compute raw page (run.sh):
time and clock, tensor-pipe activity, instructions issued (by pipe where ncu counts them), and the warp stall
samples as shares. ``python compare.py raw.csv.gz``."""
import csv
import gzip
import sys

CONFIGS = ["D128 S4096 full", "D64 S4096 causal", "D256 S4096 causal"]  # attention_profile.CONFIGS' order
METRICS = [  # (label, metric): each shown in the unit ncu reports it in
    ("duration", "gpu__time_duration.sum"),
    ("SM clock", "smsp__cycles_elapsed.avg.per_second"),
    ("SM cycles elapsed", "sm__cycles_elapsed.avg"),
    ("tensor pipe active", "sm__pipe_tensor_cycles_active.avg.pct_of_peak_sustained_active"),
    ("issue active", "sm__inst_issued.avg.pct_of_peak_sustained_active"),
    ("warp instructions", "smsp__inst_executed.sum"),
    ("ALU pipe", "sm__inst_executed_pipe_alu.sum.pct_of_peak_sustained_active"),
    ("FMA pipe", "sm__inst_executed_pipe_fma.sum.pct_of_peak_sustained_active"),
    ("XU (MUFU) pipe", "sm__inst_executed_pipe_xu.sum.pct_of_peak_sustained_active"),
    ("uniform pipe", "sm__inst_executed_pipe_uniform.sum.pct_of_peak_sustained_active"),
    ("LSU pipe", "sm__inst_executed_pipe_lsu.sum.pct_of_peak_sustained_active"),
    ("shared wavefronts", "l1tex__data_pipe_lsu_wavefronts_mem_shared.sum"),
    ("shared bank conflicts", "l1tex__data_bank_conflicts_pipe_lsu_mem_shared.sum"),
    ("registers a thread", "launch__registers_per_thread"),
    ("dynamic shared memory a block", "launch__shared_mem_per_block_dynamic"),
    ("DRAM read", "dram__bytes_read.sum"),
    ("warps active (occupancy)", "sm__warps_active.avg.pct_of_peak_sustained_active"),
]
STALL = "smsp__pcsamp_warps_issue_stalled_"


def number(text: str) -> float:
    try:
        return float(text.replace(",", ""))
    except ValueError:
        return float("nan")


def main(path: str) -> None:
    rows = list(csv.reader(gzip.open(path, "rt") if path.endswith(".gz") else open(path)))
    head, units, data = rows[0], rows[1], rows[2:]
    col = {name: i for i, name in enumerate(head)}
    for c, config in enumerate(CONFIGS):
        pair = data[2 * c: 2 * c + 2]  # pt-tvm, then flash-attn-4 (attention_profile calls them in this order)
        print(f"\n## {config}\n\n| metric | unit | pt-tvm | flash-attn-4 | ratio |\n|---|---|---|---|---|")
        for label, metric in METRICS:
            if metric not in col:
                continue
            a, b = (number(r[col[metric]]) for r in pair)
            print(f"| {label} | {units[col[metric]]} | {a:,.4g} | {b:,.4g} | {a / b if b else float('nan'):.3f} |")
        stalls = [n for n in head if n.startswith(STALL) and not n.endswith("_not_issued")]
        totals = [sum(number(r[col[n]]) for n in stalls) for r in pair]
        shares = sorted(((number(pair[0][col[n]]) / totals[0], number(pair[1][col[n]]) / totals[1],
                          n[len(STALL):]) for n in stalls), reverse=True)
        print("\n| warp state (share of samples) | pt-tvm | flash-attn-4 |\n|---|---|---|")
        for a, b, name in shares:
            if max(a, b) >= 0.01:
                print(f"| {name} | {a:.1%} | {b:.1%} |")


if __name__ == "__main__":
    main(sys.argv[1])
