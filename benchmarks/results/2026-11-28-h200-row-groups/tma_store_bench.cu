// Throughput of storing 128 x 256 fp16 tiles from shared memory to C [M, N]:
// mode 0: aligned twin (N = 50304), one 2-D TMA box of 128 x 64 per 64-column chunk;
// mode 1: odd N (50257) through the [M/8, 8N] view, 8 boxes of 16 x 64 per chunk (rows grouped by residue);
// mode 2: odd N, element stores by the block's threads (what TileLang emits).
#include <cuda.h>
#include <cudaTypedefs.h>
#include <cuda_runtime.h>
#include <cstdio>
#include <cstdint>
#include <cstdlib>

__device__ __forceinline__ uint32_t smem_addr(const void* p) {
  return static_cast<uint32_t>(__cvta_generic_to_shared(p));
}

// rows G apart (view [M / G, G N]): a 128 x 256 tile of rows of one residue q, 4 boxes of 128 x 64 (G = 8, 16),
// or for G = 64 (32 rows a residue) 4 residues x 4 boxes of 32 x 64; each box starts at the residue's first
// column on a (2 G)-byte boundary
template <int G>
__global__ void grouped(const __grid_constant__ CUtensorMap map, int N) {
  extern __shared__ __align__(1024) uint16_t tile[];
  int t = threadIdx.x;
  for (int e = t; e < 128 * 256; e += blockDim.x) tile[e] = (uint16_t)(e & 0x3fff);
  asm volatile("fence.proxy.async.shared::cta;");
  __syncthreads();
  const int rows = G == 64 ? 32 : 128, per = 128 / rows;
  int n0 = blockIdx.x * 256;
  if (t == 0) {
    for (int p = 0; p < per; ++p) {
      int tq = blockIdx.y * per + p;            // (residue, row block) index
      int q = tq % G, g0 = (tq / G) * rows;
      int lead = (G - (int)(((long long)q * N) % G)) % G;
      for (int j = 0; j < 4; ++j)
        asm volatile("cp.async.bulk.tensor.2d.global.shared::cta.tile.bulk_group [%0, {%1, %2}], [%3];"
                     ::"l"(&map), "r"(q * N + lead + n0 + 64 * j), "r"(g0), "r"(smem_addr(tile + j * 8192 + p * rows * 64))
                     : "memory");
    }
    asm volatile("cp.async.bulk.commit_group;");
    asm volatile("cp.async.bulk.wait_group.read 0;" ::: "memory");
  }
  __syncthreads();
}

template <int MODE>
__global__ void store_tiles(const __grid_constant__ CUtensorMap map, uint16_t* C, int N) {
  extern __shared__ __align__(1024) uint16_t tile[];  // 4 chunks of [128][64]
  int t = threadIdx.x;
  for (int e = t; e < 128 * 256; e += blockDim.x) tile[e] = (uint16_t)(e & 0x3fff);
  asm volatile("fence.proxy.async.shared::cta;");
  __syncthreads();
  int m0 = blockIdx.y * 128, n0 = blockIdx.x * 256;
  if (MODE == 3 || MODE == 4) {
    // rows of residue q: columns [c_q, c_q + 248) by one TMA box of 16 x 248 (start 16-byte aligned),
    // the other 8 columns of each row by element stores
    if (MODE == 3) for (int e = t; e < 128 * 8; e += blockDim.x) {
      int r = e / 8, j = e % 8, q = r % 8;
      int cq = (8 - (int)(((long long)q * N) % 8)) % 8;
      int c = j < cq ? j : 248 + j;
      C[(size_t)(m0 + r) * N + n0 + c] = tile[e];
    }
    if (t == 0) {
      for (int q = 0; q < 8; ++q) {
        int cq = (8 - (int)(((long long)q * N) % 8)) % 8;
        asm volatile("cp.async.bulk.tensor.2d.global.shared::cta.tile.bulk_group [%0, {%1, %2}], [%3];"
                     ::"l"(&map), "r"(q * N + n0 + cq), "r"(m0 / 8), "r"(smem_addr(tile + q * 16 * 248)) : "memory");
      }
      asm volatile("cp.async.bulk.commit_group;");
      asm volatile("cp.async.bulk.wait_group.read 0;" ::: "memory");
    }
    __syncthreads();
    return;
  }
  if (MODE == 2) {
    for (int e = t; e < 128 * 256; e += blockDim.x) {
      int r = e / 256, c = e % 256;
      C[(size_t)(m0 + r) * N + n0 + c] = tile[(c / 64) * 8192 + r * 64 + c % 64];
    }
    return;
  }
  if (t == 0) {
    for (int j = 0; j < 4; ++j) {
      if (MODE == 0) {
        asm volatile("cp.async.bulk.tensor.2d.global.shared::cta.tile.bulk_group [%0, {%1, %2}], [%3];"
                     ::"l"(&map), "r"(n0 + 64 * j), "r"(m0), "r"(smem_addr(tile + j * 8192)) : "memory");
      } else {
        for (int q = 0; q < 8; ++q)
          asm volatile("cp.async.bulk.tensor.2d.global.shared::cta.tile.bulk_group [%0, {%1, %2}], [%3];"
                       ::"l"(&map), "r"(q * N + n0 + 64 * j), "r"(m0 / 8), "r"(smem_addr(tile + j * 8192 + q * 16 * 64))
                       : "memory");
      }
    }
    asm volatile("cp.async.bulk.commit_group;");
    asm volatile("cp.async.bulk.wait_group.read 0;" ::: "memory");
  }
  __syncthreads();
}

static PFN_cuTensorMapEncodeTiled_v12000 encode;

int main(int argc, char** argv) {
  cudaDriverEntryPointQueryResult qr;
  cudaGetDriverEntryPoint("cuTensorMapEncodeTiled", (void**)&encode, cudaEnableDefault, &qr);
  const int M = 2048, tiles_n = 196;
  uint16_t* C;
  cudaMalloc(&C, (size_t)M * 50304 * 2);
  dim3 grid(tiles_n, M / 128);
  cudaEvent_t a, b;
  cudaEventCreate(&a); cudaEventCreate(&b);
  const char* names[6] = {"TMA, aligned rows (N=50304)", "TMA, residue view (N=50257)", "element stores (N=50257)",
                          "TMA residue boxes 248 wide + 8 element cols",
                          "TMA residue boxes 248 wide, no element cols", "residue view, aligned N=50304 (64-wide)"};
  int mode = atoi(argv[1]);
  if (mode >= 6) {
    int G = mode == 6 ? 8 : mode == 7 ? 16 : 64, N = 50257;
    CUtensorMap map;
    cuuint64_t dims[2] = {(cuuint64_t)G * N, (cuuint64_t)M / G}, strides[1] = {2ull * G * N};
    cuuint32_t box[2] = {64, (cuuint32_t)(G == 64 ? 32 : 128)}, estr[2] = {1, 1};
    CUresult r = encode(&map, CU_TENSOR_MAP_DATA_TYPE_FLOAT16, 2, C, dims, strides, box, estr,
                        CU_TENSOR_MAP_INTERLEAVE_NONE, CU_TENSOR_MAP_SWIZZLE_NONE, CU_TENSOR_MAP_L2_PROMOTION_NONE,
                        CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE);
    if (r != CUDA_SUCCESS) { printf("encode failed %d\n", (int)r); return 1; }
    auto k = G == 8 ? grouped<8> : G == 16 ? grouped<16> : grouped<64>;
    cudaFuncSetAttribute(k, cudaFuncAttributeMaxDynamicSharedMemorySize, 65536);
    float best = 1e9;
    for (int rep = 0; rep < 30; ++rep) {
      cudaEventRecord(a);
      k<<<grid, 128, 65536>>>(map, N);
      cudaEventRecord(b);
      cudaEventSynchronize(b);
      float ms; cudaEventElapsedTime(&ms, a, b);
      if (rep >= 5 && ms < best) best = ms;
    }
    cudaError_t err = cudaGetLastError();
    double bytes = (double)M * tiles_n * 256 * 2;
    printf("rows %2d apart, boxes from a %3d-byte boundary %8.1f us  %6.2f TB/s  %s\n", G, 2 * G, best * 1e3,
           bytes / (best * 1e-3) / 1e12, err == cudaSuccess ? "ok" : cudaGetErrorString(err));
    return 0;
  }
  {
    int N = (mode == 0 || mode == 5) ? 50304 : 50257;
    CUtensorMap map;
    cuuint64_t dims[2], strides[1];
    cuuint32_t box[2], estr[2] = {1, 1};
    if (mode == 0) { dims[0] = N; dims[1] = M; strides[0] = (cuuint64_t)N * 2; box[0] = 64; box[1] = 128; }
    else { dims[0] = 8ull * N; dims[1] = M / 8; strides[0] = 16ull * N; box[0] = (mode == 3 || mode == 4) ? 248 : 64; box[1] = 16; }
    CUresult r = encode(&map, CU_TENSOR_MAP_DATA_TYPE_FLOAT16, 2, C, dims, strides, box, estr,
                        CU_TENSOR_MAP_INTERLEAVE_NONE, CU_TENSOR_MAP_SWIZZLE_NONE, CU_TENSOR_MAP_L2_PROMOTION_NONE,
                        CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE);
    if (r != CUDA_SUCCESS) { printf("encode failed %d\n", (int)r); return 1; }
    auto k = mode == 0 ? store_tiles<0> : mode == 1 ? store_tiles<1> : mode == 2 ? store_tiles<2> : mode == 3 ? store_tiles<3> : mode == 4 ? store_tiles<4> : store_tiles<1>;
    cudaFuncSetAttribute(k, cudaFuncAttributeMaxDynamicSharedMemorySize, 65536);
    float best = 1e9;
    for (int rep = 0; rep < 30; ++rep) {
      cudaEventRecord(a);
      k<<<grid, 128, 65536>>>(map, C, N);
      cudaEventRecord(b);
      cudaEventSynchronize(b);
      float ms; cudaEventElapsedTime(&ms, a, b);
      if (rep >= 5 && ms < best) best = ms;
    }
    cudaError_t err = cudaGetLastError();
    double bytes = (double)M * tiles_n * 256 * 2;
    printf("%-32s %8.1f us  %6.2f TB/s  %s\n", names[mode], best * 1e3, bytes / (best * 1e-3) / 1e12,
           err == cudaSuccess ? "ok" : cudaGetErrorString(err));
  }
  return 0;
}
