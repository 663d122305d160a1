"""The row store: a staged tile into rows of a global tensor that start off 16-byte boundaries, 16 bytes a lane.

TMA cannot address such rows (a tensor map's strides are multiples of 16 bytes) and TileLang 0.1.15 stores them
an element a thread (GPT-2's lm_head: rows of 50257 halves). :data:`SOURCE` is a CUDA helper the templates call
once per lane and aligned 16-byte chunk of a staged row: each lane loads its chunk from shared memory (an aligned
16-byte load, right under TileLang's 16-byte swizzles), takes the next lane's with a shuffle and stores the 16
bytes that fall between two of the row's 16-byte boundaries in global memory. The extraction reads the call as a
store of the tensor it points into (:func:`written`).
"""
from __future__ import annotations

from tilelang import tvm  # noqa: F401  (TileLang's TVM, as the other passes import it)
from tvm import tirx

from .ir import op_name

__all__ = ["NAME", "SOURCE", "LANES", "written"]

NAME = "pt_tvm_store_rows"
LANES = (8, 16, 32)  # chunks a staged row may hold: the lanes of one row share a warp (the shuffle's width)
GROUP_THREADS = 256  # the threads a tile's rows are dealt over, in turns of a row each: calls of a role this size
                     # or smaller (a storer's 64 threads take four) each store block_M / groups rows

SOURCE = r"""
template <int K>
__device__ __forceinline__ unsigned pt_tvm_word(uint4 a, uint4 b) {  // word K of the 32 bytes a ++ b
  if constexpr (K == 0) return a.x; else if constexpr (K == 1) return a.y;
  else if constexpr (K == 2) return a.z; else if constexpr (K == 3) return a.w;
  else if constexpr (K == 4) return b.x; else if constexpr (K == 5) return b.y;
  else if constexpr (K == 6) return b.z; else return b.w;
}

template <int H>
__device__ __forceinline__ uint4 pt_tvm_shifted(uint4 a, uint4 b) {
  // the 16 bytes that start H 2-byte elements into the 32 bytes a ++ b
  constexpr int q = H / 2;
  if constexpr (H % 2 == 0) {
    return make_uint4(pt_tvm_word<q>(a, b), pt_tvm_word<q + 1>(a, b), pt_tvm_word<q + 2>(a, b),
                      pt_tvm_word<q + 3>(a, b));
  } else {
    return make_uint4(__funnelshift_r(pt_tvm_word<q>(a, b), pt_tvm_word<q + 1>(a, b), 16),
                      __funnelshift_r(pt_tvm_word<q + 1>(a, b), pt_tvm_word<q + 2>(a, b), 16),
                      __funnelshift_r(pt_tvm_word<q + 2>(a, b), pt_tvm_word<q + 3>(a, b), 16),
                      __funnelshift_r(pt_tvm_word<q + 3>(a, b), pt_tvm_word<q + 4>(a, b), 16));
  }
}

__device__ __forceinline__ unsigned short pt_tvm_half(uint4 v, int e) {  // 2-byte element e of v
  const unsigned w = e < 4 ? (e < 2 ? v.x : v.y) : (e < 6 ? v.z : v.w);
  return static_cast<unsigned short>((e & 1) ? w >> 16 : w & 0xffffu);
}

// One lane's share of a staged tile's rows: rows 0, step, 2 * step, ... (`rows` of them) of the tile, `row` the
// first one's first element in global memory (rows `ld` elements apart), `chunk` this lane's 16-byte-aligned chunk
// of it in shared memory (`lane` of the row's `width`; rows `sld` elements apart). `cols` of a row's elements
// exist, and `live` of the rows. Every lane of the warp calls it (shuffles, warp syncs), live rows or not.
// Each lane shifts its chunk by the row's offset from a 16-byte boundary (its own chunk and the next lane's) and
// writes it back in place; the row's first lane then stores the aligned run with one asynchronous bulk copy (the
// TMA unit's, as a TMA store goes: the threads do not wait on global memory) and the few elements before and
// after it an element at a time; before returning the lanes wait until the bulk copies have read shared memory.
template <typename T>
__device__ __forceinline__ void pt_tvm_store_rows(T* row, long long ld, T* chunk, int sld, int lane, int width,
                                                  int rows, int step, int cols, int live) {
  static_assert(sizeof(T) == 2, "pt_tvm_store_rows stores 2-byte elements");
  const int c = 8 * lane;
  bool issued = false;
  for (int k = 0; k < rows; ++k) {
    uint4* mine = reinterpret_cast<uint4*>(chunk + static_cast<long long>(k) * step * sld);
    const uint4 a = *mine;
    uint4 b;
    b.x = __shfl_down_sync(0xffffffffu, a.x, 1, width);
    b.y = __shfl_down_sync(0xffffffffu, a.y, 1, width);
    b.z = __shfl_down_sync(0xffffffffu, a.z, 1, width);
    b.w = __shfl_down_sync(0xffffffffu, a.w, 1, width);
    unsigned short* out = reinterpret_cast<unsigned short*>(row + static_cast<long long>(k) * step * ld);
    const int head = (8 - static_cast<int>((reinterpret_cast<unsigned long long>(out) >> 1) & 7)) & 7;
    const bool here = k * step < live;
    const int full = cols - head < 0 ? 0 : (cols - head) / 8 < width - (head > 0) ? (cols - head) / 8
                                                                                   : width - (head > 0);
    uint4 o = a;  // for a lane of the aligned run, its chunk `lane`: elements head + c .. head + c + 7
    switch (head) {
      case 1: o = pt_tvm_shifted<1>(a, b); break;
      case 2: o = pt_tvm_shifted<2>(a, b); break;
      case 3: o = pt_tvm_shifted<3>(a, b); break;
      case 4: o = pt_tvm_shifted<4>(a, b); break;
      case 5: o = pt_tvm_shifted<5>(a, b); break;
      case 6: o = pt_tvm_shifted<6>(a, b); break;
      case 7: o = pt_tvm_shifted<7>(a, b); break;
      default: break;
    }
    __syncwarp();  // every lane of the row has read its chunk
    if (lane < full) {
      *mine = o;
    } else if (here) {  // past the aligned run: this chunk's elements from head + c on, an element at a time
#pragma unroll
      for (int e = 0; e < 8; ++e)
        if (e >= head && c + e < cols) out[c + e] = pt_tvm_half(a, e);
      if (lane + 1 < width)
#pragma unroll
        for (int e = 0; e < 8; ++e)
          if (e < head && c + 8 + e < cols) out[c + 8 + e] = pt_tvm_half(b, e);
    }
    if (lane == 0 && here)  // the row's elements before its first 16-byte boundary
#pragma unroll
      for (int e = 0; e < 8; ++e)
        if (e < head && e < cols) out[e] = pt_tvm_half(a, e);
    asm volatile("fence.proxy.async.shared::cta;" ::: "memory");
    __syncwarp();
    if (lane == 0 && here && full > 0) {
      const unsigned src = static_cast<unsigned>(__cvta_generic_to_shared(mine));
      asm volatile("cp.async.bulk.global.shared::cta.bulk_group [%0], [%1], %2;"
                   :: "l"(out + head), "r"(src), "r"(16 * full) : "memory");
      issued = true;
    }
  }
  if (issued) {
    asm volatile("cp.async.bulk.commit_group;" ::: "memory");
    asm volatile("cp.async.bulk.wait_group.read 0;" ::: "memory");
  }
  __syncwarp();
}
"""


def written(call: tirx.Call) -> tirx.BufferLoad | None:
    """The element a row store's call points into (its first argument, ``T.address_of(C[r, c])``), or None for
    any other call."""
    args = call.args
    if op_name(call) != "tirx.call_extern" or len(args) < 2 or not isinstance(args[0], tirx.StringImm) \
            or args[0].value != NAME:
        return None
    target = args[1]
    return target.args[0] if isinstance(target, tirx.Call) and target.args \
        and isinstance(target.args[0], tirx.BufferLoad) else None
