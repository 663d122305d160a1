// Batch 1, kv 16k decoding reads its 64 MiB of K and V as 256-byte rows 2 KB apart: a token's row holds all 8 KV
// heads (8 x 128 bf16) and a split-kernel block (one split, one KV head) reads its head's 256 bytes of each of its
// 512 tokens, K and V. How fast can ONE kernel read the bytes that way, against reading them in contiguous shares,
// at the split kernel's 256 blocks? 16-byte loads, 8 in flight a thread, timed as pt_tvm.measure times a call (a
// CUDA graph of 32 calls over two 64 MiB sets, so L2 holds neither).
//   nvcc -O3 -arch=sm_90a -o layout_read layout_read.cu && ./layout_read
#include <cuda_runtime.h>
#include <algorithm>
#include <cstdio>
#include <cstdint>
#include <vector>

#define CHECK(x) do { cudaError_t e = (x); if (e != cudaSuccess) { \
  printf("%s:%d %s\n", __FILE__, __LINE__, cudaGetErrorString(e)); return 1; } } while (0)

constexpr int TOKENS = 16384, HEADS = 8, ROW = HEADS * 128 * 2;  // a token's row: 2048 bytes
constexpr size_t POOL = (size_t)TOKENS * ROW;                      // K (or V): 32 MiB

// mode 0: block b reads a contiguous 1/blocks share of K and of V; mode 1: block (split, head) reads its head's
// 256-byte slice of each of its tokens' rows, in K and V (the split kernel's bytes); mode 2: the same tokens, all
// 8 heads (block = split only, 8x the tokens' bytes, blocks / 8 of them: whole 2 KB rows).
template <int MODE>
__global__ void __launch_bounds__(256) read(const char* __restrict__ k, const char* __restrict__ v, int splits,
                                            unsigned* out) {
  unsigned acc = 0;
  for (int t = 0; t < 2; ++t) {
    const char* base = t ? v : k;
    if (MODE == 0) {
      size_t per = POOL / gridDim.x / 16;  // uint4 per block
      const uint4* q = reinterpret_cast<const uint4*>(base) + blockIdx.x * per;
      for (size_t i = threadIdx.x; i < per; i += 256 * 8) {
        uint4 x[8];
#pragma unroll
        for (int u = 0; u < 8; ++u) x[u] = i + u * 256 < per ? __ldg(q + i + u * 256) : make_uint4(0, 0, 0, 0);
#pragma unroll
        for (int u = 0; u < 8; ++u) acc ^= x[u].x ^ x[u].y ^ x[u].z ^ x[u].w;
      }
    } else {
      int per_tokens = TOKENS / splits, split = MODE == 1 ? blockIdx.x / HEADS : blockIdx.x;
      int chunks = MODE == 1 ? 16 : 16 * HEADS;  // uint4 a token
      const char* first = base + (size_t)split * per_tokens * ROW + (MODE == 1 ? (blockIdx.x % HEADS) * 256 : 0);
      int n = per_tokens * chunks;
      for (int i = threadIdx.x; i < n; i += 256 * 8) {
        uint4 x[8];
#pragma unroll
        for (int u = 0; u < 8; ++u) {
          int j = i + u * 256;
          x[u] = j < n ? __ldg(reinterpret_cast<const uint4*>(first + (size_t)(j / chunks) * ROW) + j % chunks)
                       : make_uint4(0, 0, 0, 0);
        }
#pragma unroll
        for (int u = 0; u < 8; ++u) acc ^= x[u].x ^ x[u].y ^ x[u].z ^ x[u].w;
      }
    }
  }
  if (acc == 0x9e3779b9u) out[blockIdx.x] = acc;  // never true for this data; keeps the loads
}

template <typename Launch>
static float per_call_us(Launch launch, int calls = 32, int reps = 30) {
  cudaStream_t s; cudaStreamCreate(&s);
  cudaGraph_t g; cudaGraphExec_t ge;
  for (int i = 0; i < 4; ++i) launch(s, i % 2);
  cudaStreamSynchronize(s);
  cudaStreamBeginCapture(s, cudaStreamCaptureModeGlobal);
  for (int i = 0; i < calls; ++i) launch(s, i % 2);
  cudaStreamEndCapture(s, &g);
  cudaGraphInstantiate(&ge, g, 0);
  cudaEvent_t a, b; cudaEventCreate(&a); cudaEventCreate(&b);
  std::vector<float> t;
  for (int r = 0; r < reps + 3; ++r) {
    cudaEventRecord(a, s);
    cudaGraphLaunch(ge, s);
    cudaEventRecord(b, s);
    cudaEventSynchronize(b);
    float ms; cudaEventElapsedTime(&ms, a, b);
    if (r >= 3) t.push_back(ms * 1e3f / calls);
  }
  std::sort(t.begin(), t.end());
  cudaGraphExecDestroy(ge); cudaGraphDestroy(g); cudaStreamDestroy(s);
  return t[t.size() / 2];
}

int main() {
  char *k[2], *v[2]; unsigned* out;
  for (int i = 0; i < 2; ++i) {
    CHECK(cudaMalloc(&k[i], POOL)); CHECK(cudaMemset(k[i], 0x5a, POOL));
    CHECK(cudaMalloc(&v[i], POOL)); CHECK(cudaMemset(v[i], 0x3c, POOL));
  }
  CHECK(cudaMalloc(&out, 1 << 20));
  cudaDeviceProp prop; cudaGetDeviceProperties(&prop, 0);
  printf("%s: 64 MiB of K and V (16384 tokens x 8 heads x 128, bf16), one call from graphs of 32\n", prop.name);
  printf("%-62s %8s %8s\n", "how", "us/call", "TB/s");
  auto row = [&](const char* name, float us) { printf("%-62s %8.2f %8.3f\n", name, us, 2 * POOL / (us * 1e-6) / 1e12); };
  char name[96];
  for (int blocks : {256, 512, 1024}) {
    int splits = blocks / HEADS;
    row((snprintf(name, sizeof name, "contiguous shares, %d blocks", blocks), name),
        per_call_us([&](cudaStream_t s, int i) { read<0><<<blocks, 256, 0, s>>>(k[i], v[i], splits, out); }));
    row((snprintf(name, sizeof name, "a head's 256 B of each token, %d splits x 8 heads", splits), name),
        per_call_us([&](cudaStream_t s, int i) { read<1><<<blocks, 256, 0, s>>>(k[i], v[i], splits, out); }));
    row((snprintf(name, sizeof name, "whole 2 KB token rows, %d splits (blocks)", blocks), name),
        per_call_us([&](cudaStream_t s, int i) { read<2><<<blocks, 256, 0, s>>>(k[i], v[i], blocks, out); }));
  }
  CHECK(cudaGetLastError());
  CHECK(cudaDeviceSynchronize());
  return 0;
}
