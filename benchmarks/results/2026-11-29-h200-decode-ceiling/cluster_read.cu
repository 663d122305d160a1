// Can a split-KV decode of batch 1, kv 16k (8 KV heads, 64 MiB of K and V) combine its splits inside the kernel
// cheaply enough? 8 heads x S splits as clusters of S CTAs (one CTA an SM, its share streamed through a 4-stage ring
// of 32 KB TMA bulk copies), each CTA's 2 KB partial (4 query rows x 128 float32) reduced by the cluster's rank 0
// through distributed shared memory after a cluster barrier; beside it the same read writing partials to global
// memory only (what a split kernel does before its combine kernel). Timed from CUDA graphs of 32 calls, two sets.
//   nvcc -O3 -arch=sm_90a -o cluster_read cluster_read.cu && ./cluster_read
#include <cooperative_groups.h>
#include <cuda_runtime.h>
#include <algorithm>
#include <cstdio>
#include <cstdint>
#include <vector>
namespace cg = cooperative_groups;

#define CHECK(x) do { cudaError_t e = (x); if (e != cudaSuccess) { \
  printf("%s:%d %s\n", __FILE__, __LINE__, cudaGetErrorString(e)); return 1; } } while (0)

constexpr int S = 4, C = 32768, PART = 4 * 128;

template <bool CLUSTER>
__global__ void __launch_bounds__(128) split_read(const char* __restrict__ p, size_t per, float* partials, float* out) {
  extern __shared__ __align__(128) char buf[];
  __shared__ __align__(8) uint64_t bar[S];
  __shared__ float part[PART];
  const char* q = p + blockIdx.x * per;
  int steps = (int)(per / C);
  if (threadIdx.x == 0) {
    for (int s = 0; s < S; ++s)
      asm volatile("mbarrier.init.shared::cta.b64 [%0], 1;" ::"r"((unsigned)__cvta_generic_to_shared(&bar[s])));
    asm volatile("fence.mbarrier_init.release.cluster;");
  }
  __syncthreads();
  auto issue = [&](int step) {
    int s = step % S;
    unsigned b = (unsigned)__cvta_generic_to_shared(&bar[s]);
    asm volatile("mbarrier.arrive.expect_tx.shared::cta.b64 _, [%0], %1;" ::"r"(b), "r"(C));
    asm volatile("cp.async.bulk.shared::cluster.global.mbarrier::complete_tx::bytes [%0], [%1], %2, [%3];"
                 ::"r"((unsigned)__cvta_generic_to_shared(buf + s * C)), "l"(q + (size_t)step * C), "r"(C), "r"(b)
                 : "memory");
  };
  if (threadIdx.x == 0)
    for (int k = 0; k < S && k < steps; ++k) issue(k);
  float acc[4] = {0, 0, 0, 0};
  for (int k = 0; k < steps; ++k) {
    int s = k % S;
    unsigned b = (unsigned)__cvta_generic_to_shared(&bar[s]), phase = (k / S) & 1, done = 0;
    while (!done)
      asm volatile("{ .reg .pred p; mbarrier.try_wait.parity.shared::cta.b64 p, [%1], %2; selp.u32 %0, 1, 0, p; }"
                   : "=r"(done) : "r"(b), "r"(phase));
    const float* t = reinterpret_cast<const float*>(buf + s * C);
#pragma unroll
    for (int r = 0; r < 4; ++r) acc[r] += t[r * 128 + threadIdx.x];
    __syncthreads();
    if (threadIdx.x == 0 && k + S < steps) issue(k + S);
  }
  for (int r = 0; r < 4; ++r) part[r * 128 + threadIdx.x] = acc[r];
  if constexpr (CLUSTER) {
    cg::cluster_group cluster = cg::this_cluster();
    cluster.sync();
    if (cluster.block_rank() == 0) {
      int n = cluster.num_blocks();
      for (int r = 0; r < 4; ++r) {
        float v = 0;
        for (int j = 0; j < n; ++j) v += cluster.map_shared_rank(part, j)[r * 128 + threadIdx.x];
        out[(blockIdx.x / n) * PART + r * 128 + threadIdx.x] = v;
      }
    }
    cluster.sync();  // the other CTAs' shared memory stays alive until rank 0 has read it
  } else {
    for (int r = 0; r < 4; ++r) partials[blockIdx.x * PART + r * 128 + threadIdx.x] = part[r * 128 + threadIdx.x];
  }
}

// the combine kernel's shape: a block per head sums its splits' partials
__global__ void combine(const float* partials, int splits, float* out) {
  for (int r = 0; r < 4; ++r) {
    float v = 0;
    for (int j = 0; j < splits; ++j) v += partials[(blockIdx.x * splits + j) * PART + r * 128 + threadIdx.x];
    out[blockIdx.x * PART + r * 128 + threadIdx.x] = v;
  }
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
    cudaEventRecord(a, s); cudaGraphLaunch(ge, s); cudaEventRecord(b, s); cudaEventSynchronize(b);
    float ms; cudaEventElapsedTime(&ms, a, b);
    if (r >= 3) t.push_back(ms * 1e3f / calls);
  }
  std::sort(t.begin(), t.end());
  cudaGraphExecDestroy(ge); cudaGraphDestroy(g); cudaStreamDestroy(s);
  return t[t.size() / 2];
}

int main() {
  const size_t bytes = 16384ull * 8 * 128 * 2 * 2;
  const double peak = 4.26e12;  // the suite's copy peak on this H200 kind (benchmarks.decode.hbm_copy_tbps, same call)
  char* kv[2]; float *partials, *out;
  for (auto& p : kv) { CHECK(cudaMalloc(&p, bytes)); CHECK(cudaMemset(p, 0, bytes)); }
  CHECK(cudaMalloc(&partials, 256 * PART * 4)); CHECK(cudaMalloc(&out, 8 * PART * 4));
  CHECK(cudaFuncSetAttribute(split_read<true>, cudaFuncAttributeMaxDynamicSharedMemorySize, S * C));
  CHECK(cudaFuncSetAttribute(split_read<false>, cudaFuncAttributeMaxDynamicSharedMemorySize, S * C));
  CHECK(cudaFuncSetAttribute(split_read<true>, cudaFuncAttributeNonPortableClusterSizeAllowed, 1));
  auto row = [&](const char* name, float us) {
    printf("%-58s %8.2f us %6.3f TB/s %6.1f%% of 4.26\n", name, us, bytes / (us * 1e-6) / 1e12, 100 * bytes / (us * 1e-6) / peak);
  };
  char name[128];
  for (int splits : {8, 16}) {
    int blocks = 8 * splits;
    size_t per = bytes / blocks;
    cudaLaunchConfig_t cfg = {};
    cudaLaunchAttribute attr[1];
    attr[0].id = cudaLaunchAttributeClusterDimension;
    attr[0].val.clusterDim.x = splits; attr[0].val.clusterDim.y = 1; attr[0].val.clusterDim.z = 1;
    cfg.gridDim = dim3(blocks); cfg.blockDim = dim3(128); cfg.dynamicSmemBytes = S * C;
    cfg.attrs = attr; cfg.numAttrs = 1;
    int clusters = -1;
    cudaError_t e = cudaOccupancyMaxActiveClusters(&clusters, split_read<true>, &cfg);
    printf("clusters of %d CTAs (%zu KB smem each): at most %d active (%s); the grid has 8\n", splits,
           (size_t)(S * C) / 1024, clusters, cudaGetErrorString(e));
    float us = per_call_us([&](cudaStream_t s, int i) {
      cfg.stream = s;
      cudaLaunchKernelEx(&cfg, split_read<true>, (const char*)kv[i], per, partials, out);
    });
    CHECK(cudaGetLastError());
    snprintf(name, sizeof name, "%3d CTAs, clusters of %2d, combined through DSMEM", blocks, splits);
    row(name, us);
    us = per_call_us([&](cudaStream_t s, int i) {
      split_read<false><<<blocks, 128, S * C, s>>>(kv[i], per, partials, out);
    });
    snprintf(name, sizeof name, "%3d CTAs, partials to global, no combine", blocks);
    row(name, us);
    us = per_call_us([&](cudaStream_t s, int i) {
      split_read<false><<<blocks, 128, S * C, s>>>(kv[i], per, partials, out);
      combine<<<8, 128, 0, s>>>(partials, splits, out);
    });
    snprintf(name, sizeof name, "%3d CTAs, partials to global, then a combine kernel", blocks);
    row(name, us);
    CHECK(cudaGetLastError());
  }
  CHECK(cudaDeviceSynchronize());
  return 0;
}
