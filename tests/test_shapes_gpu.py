"""GPU tests of any shape (issue 14 items 1-2): every template at ragged sizes, attention over a KV cache (causal
aligned bottom-right, queries that see no key), GQA/MQA, another softmax scale, packed variable-length batches,
and one kernel serving every length of a symbolic size. Each kernel is the plan pt-tvm's search picks for this
GPU (tiles pinned where the search over every tile would only cost time), compiled as the benchmarks compile it,
run on fresh random inputs (seed printed) and compared on every output, in NaN-prefilled memory, with the float32
PyTorch reference."""
from __future__ import annotations

import os

import pytest
import tilelang.language as T
import torch

import pt_tvm
from pt_tvm import hw
from pt_tvm.compiler import schedule_template
from pt_tvm.measure import REL_TOL, as_outputs, check_call, kernel_outputs
from pt_tvm.templates import get

pytestmark = pytest.mark.gpu

FA_TILE = {"block_M": 128, "block_N": 128, "threads": 256}


@pytest.fixture
def gen():
    seed = int.from_bytes(os.urandom(4), "little")
    print(f"SEED {seed}")
    return torch.Generator(device="cuda").manual_seed(seed)


def _searched(name: str, params: dict):
    """(template, compiled kernel of the search's pick, problem)."""
    vdev = hw.from_device()
    template = get(name)
    result, problem, build = schedule_template(name, vdev, params=params)
    print(f"PLAN {name} {params}: {result.best.note} {result.best.plan.tile}")
    return template, template.compile(build(), vdev.tvm_target()), problem


def _check(label: str, template, kernel, inputs: tuple, problem: dict) -> None:
    """Every output within REL_TOL of the reference, each allocated output NaN-prefilled."""
    refs = as_outputs(template.reference(*inputs, **problem))
    checks = check_call(kernel_outputs(template, kernel), inputs, refs, inout=template.inout_idx)
    print(f"REL_ERR {label} " + " ".join(f"{c.rel_err:.3e}({c.prefill})" for c in checks))
    assert all(c.rel_err < REL_TOL[problem["dtype"]] for c in checks), f"{label}: {checks}"
    assert [c.prefill for c in checks] == ["nan"] * len(template.out_idx) + ["zero"] * len(template.inout_idx)


RAGGED = [
    ("gemm", {"M": 1000, "N": 1000, "K": 1000}),
    ("gemm", {"M": 333, "N": 520, "K": 200, "dtype": "bfloat16"}),
    ("gemm", {"M": 250, "N": 300, "K": 100, "trans_B": True}),  # N, K rows not 16-byte aligned: no TMA for them
    # C's rows start off 16-byte boundaries: tiles of rows 8 apart, stored by TMA through C viewed [M / 8, 8 N]
    # (125 groups of rows: a partial tile of them), each residue's first columns and last tile an element a thread
    ("gemm", {"M": 1000, "N": 50257, "K": 256, "trans_B": True}),
    ("gemm", {"M": 512, "N": 1002, "K": 512, "trans_B": True, "lda": 520, "dtype": "bfloat16"}),
    # ... and where rows 8 apart cannot serve (M not whole groups of 8; B [K, N]): TileLang's element stores
    ("gemm", {"M": 777, "N": 1001, "K": 256, "trans_B": True}),
    ("gemm", {"M": 333, "N": 1001, "K": 200, "dtype": "bfloat16"}),
    ("gemm", {"M": 777, "N": 1000, "K": 1000, "trans_B": True, "swap_ab": 1, "block_M": 208}),  # tiles transposed
    ("gemm", {"M": 300, "N": 700, "K": 520, "trans_B": True, "swap_ab": 1, "block_M": 112, "dtype": "bfloat16"}),
    ("gemm", {"M": 1000, "N": 1000, "K": 520, "trans_B": True, "block_M": 256, "block_N": 160}),  # 160 a thread
    ("gemm", {"M": 777, "N": 1000, "K": 520, "trans_B": True, "swap_ab": 1, "block_M": 160, "block_N": 256}),
    ("gemm", {"M": 777, "N": 1000, "K": 1001, "lda": 1008}),  # A's rows 16 bytes apart: TMA, zero-filled past K
    # A's rows start off 16-byte boundaries (B [K, N]): tiles of rows 16 (8) apart loaded by TMA through A viewed
    # [M / g, g K], each residue's K tiles starting before its row, the neighbours' columns zeroed in shared memory
    ("gemm", {"M": 1024, "N": 512, "K": 1001}),
    ("gemm", {"M": 1000, "N": 520, "K": 1004, "dtype": "bfloat16"}),  # rows 8 apart, a partial last column tile
    ("gemm", {"M": 512, "N": 1000, "K": 1001, "lda": 1003}),
    ("gemm", {"M": 300, "N": 520, "K": 1001, "trans_B": True, "lda": 1024, "ldb": 1008}),
    ("gemm_rowsum", {"M": 1000, "N": 700, "K": 520}),
    # SwiGLU swapped: the tokens on the N side, the gate's and the up projection's rows on the M side
    ("gemm_swiglu", {"M": 777, "N": 1000, "K": 520, "swap_ab": 1, "block_M": 112, "block_N": 256}),
    ("gemm_swiglu", {"M": 300, "N": 700, "K": 200, "swap_ab": 1, "block_M": 160, "block_N": 128,
                     "dtype": "bfloat16"}),
    ("flash_attention", {"batch": 2, "heads": 8, "kv_heads": 8, "seq_len": 1000, **FA_TILE}),
    ("flash_attention", {"batch": 2, "heads": 8, "kv_heads": 2, "seq_len": 1000, "causal": True, **FA_TILE}),
    ("flash_attention", {"batch": 2, "heads": 8, "kv_heads": 2, "seq_len_q": 100, "seq_len_k": 1000, "causal": True,
                         **FA_TILE}),  # a KV cache: bottom-right causal
    ("flash_attention", {"batch": 2, "heads": 8, "kv_heads": 1, "seq_len_q": 1000, "seq_len_k": 300, "causal": True,
                         **FA_TILE}),  # more queries than keys: the first 700 see none and give 0; MQA
    ("flash_attention", {"batch": 1, "heads": 4, "kv_heads": 4, "seq_len_q": 777, "seq_len_k": 2500, "dim": 64,
                         "softmax_scale": 0.3, "dtype": "bfloat16", **FA_TILE}),
    ("flash_attention", {"batch": 1, "heads": 4, "kv_heads": 2, "seq_len": 555, "dim": 256, "causal": True,
                         "block_M": 64, "block_N": 64, "threads": 128}),
    # GQA packed: a block holds every query head of one key/value head
    ("flash_attention", {"batch": 2, "heads": 8, "kv_heads": 2, "seq_len_q": 777, "seq_len_k": 2500, "causal": True,
                         "pack_gqa": 1, **FA_TILE}),
    ("flash_attention", {"batch": 2, "heads": 8, "kv_heads": 1, "seq_len_q": 1000, "seq_len_k": 300, "causal": True,
                         "pack_gqa": 1, **FA_TILE}),
    ("flash_attention", {"batch": 1, "heads": 8, "kv_heads": 2, "seq_len": 555, "dim": 64, "dtype": "bfloat16",
                         "pack_gqa": 1, **FA_TILE}),
    ("flash_attention", {"batch": 1, "heads": 4, "kv_heads": 2, "seq_len": 555, "dim": 256, "causal": True,
                         "pack_gqa": 1, "block_M": 64, "block_N": 64, "threads": 128}),
    # FlashAttention 3's head-dim tiles: 192 query rows over three consumer warpgroups (48 a head packed), 80 keys
    ("flash_attention", {"batch": 2, "heads": 8, "kv_heads": 2, "seq_len": 1000, "dim": 64, "causal": True,
                         "block_M": 192, "block_N": 128, "threads": 128}),
    ("flash_attention", {"batch": 2, "heads": 8, "kv_heads": 2, "seq_len_q": 777, "seq_len_k": 2500, "dim": 64,
                         "causal": True, "pack_gqa": 1, "block_M": 192, "block_N": 128, "threads": 128}),
    ("flash_attention", {"batch": 1, "heads": 4, "kv_heads": 4, "seq_len": 1500, "dim": 64, "block_M": 192,
                         "block_N": 64, "threads": 128, "dtype": "bfloat16"}),
    ("flash_attention", {"batch": 1, "heads": 4, "kv_heads": 2, "seq_len": 555, "dim": 256, "causal": True,
                         "block_M": 128, "block_N": 80, "threads": 128}),
    ("flash_attention_qkv", {"batch": 2, "heads": 8, "kv_heads": 2, "seq_len": 777, "causal": True, "pack_gqa": 1,
                             **FA_TILE}),
    # the keys past the last whole key block as a step of their own after the loop (key_tail): 104 keys of 1000; one
    # key of 1025 (its step 16 wide, 15 masked) over a KV cache, GQA packed; ViT-B/16's 197 tokens in 64-key tiles;
    # head dim 256; the fused QKV layout
    ("flash_attention", {"batch": 2, "heads": 8, "kv_heads": 8, "seq_len": 1000, "key_tail": 1, **FA_TILE}),
    ("flash_attention", {"batch": 1, "heads": 8, "kv_heads": 2, "seq_len_q": 300, "seq_len_k": 1025, "dim": 64,
                         "pack_gqa": 1, "key_tail": 1, "dtype": "bfloat16", **FA_TILE}),
    ("flash_attention", {"batch": 4, "heads": 12, "kv_heads": 12, "seq_len": 197, "dim": 64, "key_tail": 1,
                         "block_M": 64, "block_N": 64, "threads": 128}),
    ("flash_attention", {"batch": 1, "heads": 4, "kv_heads": 2, "seq_len": 555, "dim": 256, "key_tail": 1,
                         "block_M": 64, "block_N": 64, "threads": 128}),
    ("flash_attention_qkv", {"batch": 2, "heads": 8, "kv_heads": 2, "seq_len": 777, "causal": False, "key_tail": 1,
                             **FA_TILE}),
    # head dims off 64, 128 and 256 (any multiple of 16 up to 256; no packing where a 64-column panel is partial)
    ("flash_attention", {"batch": 2, "heads": 8, "kv_heads": 2, "seq_len": 1000, "dim": 80, "causal": True}),
    ("flash_attention", {"batch": 1, "heads": 4, "kv_heads": 4, "seq_len_q": 300, "seq_len_k": 777, "dim": 96,
                         "causal": True, "dtype": "bfloat16"}),
    ("flash_attention", {"batch": 1, "heads": 4, "kv_heads": 1, "seq_len": 555, "dim": 160}),
    ("flash_attention", {"batch": 2, "heads": 4, "kv_heads": 4, "seq_len": 600, "dim": 32, "causal": True}),
    ("flash_attention", {"batch": 1, "heads": 8, "kv_heads": 2, "seq_len": 500, "dim": 192, "causal": True,
                         "pack_gqa": 1}),
    ("flash_attention_qkv", {"batch": 2, "heads": 8, "kv_heads": 2, "seq_len": 777, "dim": 80, "causal": True}),
    ("chunk_state", {"batch": 2, "seqlen": 1000, "heads": 8, "groups": 2}),
    ("chunk_state", {"batch": 1, "seqlen": 700, "heads": 4, "headdim": 80, "dstate": 96}),
    ("chunk_scan", {"batch": 2, "seqlen": 1000, "heads": 8, "groups": 2}),
    ("chunk_scan", {"batch": 1, "seqlen": 700, "heads": 4, "headdim": 80, "has_d": False, "dtype": "bfloat16"}),
]


@pytest.mark.parametrize("name, params", RAGGED, ids=[f"{n}-{i}" for i, (n, _) in enumerate(RAGGED)])
def test_ragged_shapes(gen, name, params):
    template, kernel, problem = _searched(name, params)
    _check(f"{name} {params}", template, kernel, template.make_inputs(problem, "cuda", gen), problem)


def test_row_groups_read_no_neighbours_values(gen):
    """A's rows of 1001 fp16 loaded in groups of rows 16 apart: a residue's first K tile starts in the row before
    and its last ends in the row after; those columns are zeroed before the gemm, so an inf at the start of row 3
    and at the end of row 10 reaches rows 3 and 10 of C only (B's rows there are TMA's zeros: inf x 0 would be
    NaN in rows 2 and 11)."""
    template, kernel, problem = _searched("gemm", {"M": 512, "N": 256, "K": 1001})
    a, b = template.make_inputs(problem, "cuda", gen)
    a[3, 0], a[10, -1] = float("inf"), float("-inf")
    out = kernel(a, b).float()
    ref = a.float() @ b.float()
    rows = [r for r in range(512) if r not in (3, 10)]
    assert not torch.isfinite(out[[3, 10]]).all() and torch.isfinite(out[rows]).all()
    err = ((out[rows] - ref[rows]).norm() / ref[rows].norm()).item()
    print(f"REL_ERR row groups beside inf rows {err:.3e}")
    assert err < REL_TOL["float16"]


def _packed(gen, lengths_q: list[int], lengths_k: list[int], problem: dict) -> tuple:
    """``(q, k, v, cu_seqlens_q, cu_seqlens_k)`` of the given lengths."""
    cu_q, cu_k = (torch.tensor([0, *torch.tensor(n).cumsum(0).tolist()], dtype=torch.int32, device="cuda")
                  for n in (lengths_q, lengths_k))
    dtype = getattr(torch, problem["dtype"])

    def randn(total: int, heads: int) -> torch.Tensor:
        return torch.randn((total, heads, problem["dim"]), generator=gen, device="cuda").to(dtype)

    return (randn(sum(lengths_q), problem["heads"]), randn(sum(lengths_k), problem["kv_heads"]),
            randn(sum(lengths_k), problem["kv_heads"]), cu_q, cu_k)


@pytest.mark.parametrize("causal, pack_gqa", [(False, 0), (True, 0), (False, 1), (True, 1)])
def test_varlen_attention_one_kernel_for_every_batch(gen, causal, pack_gqa):
    """One compiled kernel (packed totals symbolic) over batches of other lengths: ragged, a sequence with more
    queries than keys, one with no keys (its queries give 0), one of a single query; then fewer, longer ones.
    ``pack_gqa``: a block holds 32 queries of each of a key/value head's four query heads."""
    template, kernel, problem = _searched("flash_attention_varlen", {
        "batch": 4, "heads": 8, "kv_heads": 2, "max_seqlen_q": 1000, "max_seqlen_k": 1500, "causal": causal,
        "pack_gqa": pack_gqa, **FA_TILE})
    for lengths_q, lengths_k in (([1000, 300, 1, 200], [1500, 500, 64, 0]), ([700, 999, 1000, 5],
                                                                             [1500, 1499, 129, 128])):
        _check(f"varlen causal={causal} {lengths_q} {lengths_k}", template, kernel,
               _packed(gen, lengths_q, lengths_k, problem), problem)
    _check(f"varlen causal={causal} random", template, kernel, template.make_inputs(problem, "cuda", gen), problem)


def test_a_symbolic_size_one_kernel_for_every_length(gen):
    """TileLang 0.1.15 compiles a kernel of symbolic M once (pt-tvm prices it at a hint); it runs at any M."""
    M = T.dynamic("M")

    @T.prim_func
    def gemm(A: T.Tensor((M, 512), "float16"), B: T.Tensor((512, 256), "float16"), C: T.Tensor((M, 256), "float16")):
        with T.Kernel(2, T.ceildiv(M, 128), threads=256) as (bx, by):
            A_s = T.alloc_shared((128, 64), "float16")
            B_s = T.alloc_shared((64, 128), "float16")
            C_l = T.alloc_fragment((128, 128), "float32")
            T.clear(C_l)
            for k in T.Pipelined(8, num_stages=3):
                T.copy(A[by * 128, k * 64], A_s)
                T.copy(B[k * 64, bx * 128], B_s)
                T.gemm(A_s, B_s, C_l)
            T.copy(C_l, C[by * 128, bx * 128])

    kernel = pt_tvm.compile(gemm, hw.from_device(), out_idx=[2], hints={"M": 1024})
    for m in (1, 300, 1024, 5000):
        a = torch.randn((m, 512), generator=gen, device="cuda").half()
        b = torch.randn((512, 256), generator=gen, device="cuda").half()
        (check,) = check_call(kernel, (a, b), (a.float() @ b.float(),))
        print(f"REL_ERR symbolic M={m} {check.rel_err:.3e}({check.prefill})")
        assert check.rel_err < REL_TOL["float16"] and check.prefill == "nan", (m, check)
