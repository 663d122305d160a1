// Probe: TMA boxes that start off 16-byte boundaries in the inner dimension,
// over a [R/8, 8N] view of a [R, N] fp16 tensor with N odd (rows 2N bytes apart).
#include <cuda.h>
#include <cudaTypedefs.h>
#include <cuda_runtime.h>
#include <cstdio>
#include <cstdint>
#include <vector>
#include <cstdlib>

__device__ __forceinline__ uint32_t smem_addr(const void* p) {
  return static_cast<uint32_t>(__cvta_generic_to_shared(p));
}

template <int SW>
__device__ __forceinline__ int sidx(int r, int c) {  // element index in smem of box (r, c), inner 64 elems
  if (SW == 0) return r * 64 + c;
  int chunk = (c / 8) ^ (r % 8);
  return r * 64 + chunk * 8 + c % 8;
}

template <int SW>
__global__ void probe(const __grid_constant__ CUtensorMap lmap, const __grid_constant__ CUtensorMap smap,
                      int x0, int y0, uint16_t* loaded, int sx0, int sy0) {
  __shared__ alignas(1024) uint16_t buf[8 * 64];
  __shared__ alignas(8) uint64_t bar;
  int t = threadIdx.x;
  if (t == 0) {
    asm volatile("mbarrier.init.shared::cta.b64 [%0], 1;" ::"r"(smem_addr(&bar)));
    asm volatile("fence.mbarrier_init.release.cluster;");
  }
  __syncthreads();
  if (t == 0) {
    asm volatile("mbarrier.arrive.expect_tx.shared::cta.b64 _, [%0], %1;" ::"r"(smem_addr(&bar)), "r"(8 * 64 * 2));
    asm volatile(
        "cp.async.bulk.tensor.2d.shared::cluster.global.tile.mbarrier::complete_tx::bytes [%0], [%1, {%2, %3}], [%4];"
        ::"r"(smem_addr(buf)), "l"(&lmap), "r"(x0), "r"(y0), "r"(smem_addr(&bar)) : "memory");
  }
  asm volatile(
      "{\n .reg .pred p;\n WAIT:\n mbarrier.try_wait.parity.shared::cta.b64 p, [%0], 0;\n @!p bra WAIT;\n}\n"
      ::"r"(smem_addr(&bar)));
  for (int e = t; e < 8 * 64; e += blockDim.x) loaded[e] = buf[sidx<SW>(e / 64, e % 64)];
  __syncthreads();
  for (int e = t; e < 8 * 64; e += blockDim.x) buf[sidx<SW>(e / 64, e % 64)] = (uint16_t)(1 + e);
  asm volatile("fence.proxy.async.shared::cta;");
  __syncthreads();
  if (t == 0) {
    asm volatile("cp.async.bulk.tensor.2d.global.shared::cta.tile.bulk_group [%0, {%1, %2}], [%3];"
                 ::"l"(&smap), "r"(sx0), "r"(sy0), "r"(smem_addr(buf)) : "memory");
    asm volatile("cp.async.bulk.commit_group;");
    asm volatile("cp.async.bulk.wait_group 0;" ::: "memory");
  }
}

static PFN_cuTensorMapEncodeTiled_v12000 encode;

static CUtensorMap make_map(void* base, uint64_t inner, uint64_t outer, CUtensorMapSwizzle sw) {
  CUtensorMap m;
  cuuint64_t dims[2] = {inner, outer};
  cuuint64_t strides[1] = {inner * 2};
  cuuint32_t box[2] = {64, 8};
  cuuint32_t estr[2] = {1, 1};
  CUresult r = encode(&m, CU_TENSOR_MAP_DATA_TYPE_FLOAT16, 2, base, dims, strides, box, estr,
                      CU_TENSOR_MAP_INTERLEAVE_NONE, sw, CU_TENSOR_MAP_L2_PROMOTION_NONE,
                      CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE);
  if (r != CUDA_SUCCESS) { printf("encode failed: %d\n", (int)r); exit(1); }
  return m;
}

template <int SW>
static int run(int N, int q, int n0, int i0, const char* what) {
  const int R = 64;
  size_t n = (size_t)R * N;
  std::vector<uint16_t> h(n);
  for (size_t e = 0; e < n; ++e) h[e] = (uint16_t)(1 + e % 30011);
  uint16_t *a, *d, *ld;
  cudaMalloc(&a, n * 2); cudaMalloc(&d, n * 2); cudaMalloc(&ld, 8 * 64 * 2);
  cudaMemcpy(a, h.data(), n * 2, cudaMemcpyHostToDevice);
  cudaMemset(d, 0, n * 2);
  uint64_t inner = 8ull * N, outer = R / 8;
  CUtensorMapSwizzle sw = SW ? CU_TENSOR_MAP_SWIZZLE_128B : CU_TENSOR_MAP_SWIZZLE_NONE;
  CUtensorMap lm = make_map(a, inner, outer, sw), sm = make_map(d, inner, outer, sw);
  int x0 = q * N + n0;
  probe<SW><<<1, 128>>>(lm, sm, x0, i0, ld, x0, i0);
  cudaError_t err = cudaDeviceSynchronize();
  if (err != cudaSuccess) { printf("%s: CUDA error %s\n", what, cudaGetErrorString(err)); return 1; }
  std::vector<uint16_t> hl(8 * 64), hd(n);
  cudaMemcpy(hl.data(), ld, 8 * 64 * 2, cudaMemcpyDeviceToHost);
  cudaMemcpy(hd.data(), d, n * 2, cudaMemcpyDeviceToHost);
  int bad_load = 0, bad_store = 0, stored = 0;
  for (int i = 0; i < 8; ++i)
    for (int c = 0; c < 64; ++c) {
      uint64_t y = i0 + i, x = x0 + c;
      uint16_t want = (y < outer && x < inner) ? h[y * inner + x] : 0;
      if (hl[i * 64 + c] != want) ++bad_load;
    }
  for (size_t e = 0; e < n; ++e) {
    uint64_t y = e / inner, x = e % inner;
    bool in = y >= (uint64_t)i0 && y < (uint64_t)i0 + 8 && x >= (uint64_t)x0 && x < (uint64_t)x0 + 64;
    uint16_t want = in ? (uint16_t)(1 + (y - i0) * 64 + (x - x0)) : 0;
    if (in) ++stored;
    if (hd[e] != want) ++bad_store;
  }
  printf("%-40s N=%d swizzle=%d x0=%d (byte offset %% 16 = %d): load mismatches %d, store mismatches %d (%d stored)\n",
         what, N, SW, x0, (int)((2ull * x0) % 16), bad_load, bad_store, stored);
  cudaFree(a); cudaFree(d); cudaFree(ld);
  return bad_load || bad_store;
}

int main(int argc, char** argv) {
  cudaDriverEntryPointQueryResult q;
  cudaGetDriverEntryPoint("cuTensorMapEncodeTiled", (void**)&encode, cudaEnableDefault, &q);
  int c = atoi(argv[1]);
  switch (c) {
    case 0: return run<0>(1001, 0, 0, 0, "aligned start");
    case 1: return run<0>(1001, 3, 5, 1, "residue 3, column 5 (aligned byte)");
    case 2: return run<0>(1001, 3, 6, 1, "residue 3, column 6 (2 bytes off)");
    case 3: return run<0>(1001, 0, 4, 1, "residue 0, column 4 (8 bytes off)");
    case 4: return run<1>(1001, 3, 6, 1, "residue 3, column 6, 128B swizzle");
    case 5: return run<1>(50257, 0, 256, 2, "lm_head residue 0");
    case 6: return run<1>(50257, 5, 259, 2, "lm_head residue 5, column 259 (aligned byte)");
  }
  return 2;
}
