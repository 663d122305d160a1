// How fast can ONE kernel read the 64 MiB of K and V of batch 1, kv 16k, 8 KV heads x 128, bf16 (the decode
// suite's batch-1 kv-16k config) on this GPU, timed as pt_tvm.measure times a call: a CUDA graph of calls back to
// back cycling two input sets (2 x 64 MiB defeats the 50 MB L2), replayed; the per-call time is the replay's over
// its calls. Beside it: the same read followed by a one-block kernel (a combine's launch), and the 2 GiB
// device-to-device copy whose rate the decode bar is measured against (bytes read plus written).
//   nvcc -O3 -arch=sm_90a -o read_ceiling read_ceiling.cu && ./read_ceiling
#include <cuda_runtime.h>
#include <algorithm>
#include <cstdio>
#include <cstdint>
#include <vector>

#define CHECK(x) do { cudaError_t e = (x); if (e != cudaSuccess) { \
  printf("%s:%d %s\n", __FILE__, __LINE__, cudaGetErrorString(e)); return 1; } } while (0)

// each block reads one contiguous share with 16-byte loads, U independent loads in flight per thread
template <int U>
__global__ void __launch_bounds__(256) ldg_read(const uint4* __restrict__ p, size_t per, unsigned* out) {
  const uint4* q = p + blockIdx.x * per;
  unsigned acc = 0;
  for (size_t i = threadIdx.x; i < per; i += (size_t)blockDim.x * U) {
    uint4 v[U];
#pragma unroll
    for (int u = 0; u < U; ++u) {
      size_t j = i + (size_t)u * blockDim.x;
      v[u] = j < per ? __ldg(q + j) : make_uint4(0, 0, 0, 0);
    }
#pragma unroll
    for (int u = 0; u < U; ++u) acc ^= v[u].x ^ v[u].y ^ v[u].z ^ v[u].w;
  }
  if (acc == 0x9e3779b9u) out[blockIdx.x] = acc;  // never true for random data; keeps the loads
}

// each block streams its share through shared memory by 1-D TMA bulk copies: S stages of C bytes, one mbarrier each
template <int S, int C>
__global__ void __launch_bounds__(128) bulk_read(const char* __restrict__ p, size_t per, unsigned* out) {
  extern __shared__ __align__(128) char buf[];
  __shared__ __align__(8) uint64_t bar[S];
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
  unsigned acc = 0;
  for (int k = 0; k < steps; ++k) {
    int s = k % S;
    unsigned b = (unsigned)__cvta_generic_to_shared(&bar[s]), phase = (k / S) & 1, done = 0;
    while (!done)
      asm volatile("{ .reg .pred p; mbarrier.try_wait.parity.shared::cta.b64 p, [%1], %2; selp.u32 %0, 1, 0, p; }"
                   : "=r"(done) : "r"(b), "r"(phase));
    acc ^= reinterpret_cast<const unsigned*>(buf + s * C)[threadIdx.x];
    __syncthreads();
    if (threadIdx.x == 0 && k + S < steps) issue(k + S);
  }
  if (acc == 0x9e3779b9u) out[blockIdx.x] = acc;
}

__global__ void tiny(unsigned* out) { out[threadIdx.x] += 1; }

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
  const size_t bytes = 16384ull * 8 * 128 * 2 * 2;  // K and V: 64 MiB
  char* kv[2]; unsigned* out;
  for (auto& p : kv) { CHECK(cudaMalloc(&p, bytes)); CHECK(cudaMemset(p, 0x5a, bytes)); }
  CHECK(cudaMalloc(&out, 1 << 20));
  int sms; cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, 0);
  cudaDeviceProp prop; cudaGetDeviceProperties(&prop, 0);

  // the copy peak, as benchmarks.decode.hbm_copy_tbps takes it: 2 GiB copied, bytes read plus written
  const size_t cbytes = 2ull << 30;
  char *src, *dst; CHECK(cudaMalloc(&src, cbytes)); CHECK(cudaMalloc(&dst, cbytes));
  CHECK(cudaMemset(src, 1, cbytes));
  float copy_us = per_call_us([&](cudaStream_t s, int) { cudaMemcpyAsync(dst, src, cbytes, cudaMemcpyDeviceToDevice, s); }, 4, 10);
  double peak = 2.0 * cbytes / (copy_us * 1e-6) / 1e12;
  CHECK(cudaFree(src)); CHECK(cudaFree(dst));
  printf("%s, %d SMs; 2 GiB copy %.1f us: %.3f TB/s read+written (the peak)\n", prop.name, sms, copy_us, peak);
  printf("85%% of it for 64 MiB read: %.1f us a call\n\n", bytes / (0.85 * peak * 1e12) * 1e6);
  printf("%-44s %9s %9s %8s\n", "one call (graph of 32, two 64 MiB sets)", "us/call", "TB/s", "of peak");
  auto row = [&](const char* name, float us) {
    double tb = bytes / (us * 1e-6) / 1e12;
    printf("%-44s %9.2f %9.3f %7.1f%%\n", name, us, tb, 100 * tb / peak);
  };
  char name[96];
  for (int blocks : {sms, 2 * sms, 4 * sms, 8 * sms, 16 * sms, 256, 512}) {
    size_t per = bytes / 16 / blocks;
    for (int u : {4, 8}) {
      float us = per_call_us([&](cudaStream_t s, int i) {
        if (u == 4) ldg_read<4><<<blocks, 256, 0, s>>>((const uint4*)kv[i], per, out);
        else ldg_read<8><<<blocks, 256, 0, s>>>((const uint4*)kv[i], per, out);
      });
      snprintf(name, sizeof name, "ldg 16 B, %4d blocks x 256, %d in flight", blocks, u);
      row(name, us * bytes / (per * blocks * 16));  // scaled to the whole 64 MiB where the share rounds down
    }
  }
  CHECK(cudaGetLastError());
  {
    const int S = 4, C = 32768;
    CHECK(cudaFuncSetAttribute(bulk_read<S, C>, cudaFuncAttributeMaxDynamicSharedMemorySize, S * C));
    for (int blocks : {sms, 2 * sms, 256}) {
      size_t per = bytes / blocks / C * C;
      float us = per_call_us([&](cudaStream_t s, int i) { bulk_read<S, C><<<blocks, 128, S * C, s>>>(kv[i], per, out); });
      snprintf(name, sizeof name, "TMA bulk 4 x 32 KB, %4d blocks (%.0f%% read)", blocks, 100.0 * per * blocks / bytes);
      row(name, us * bytes / (per * blocks));  // scaled to the whole 64 MiB where the share rounds down
    }
  }
  CHECK(cudaGetLastError());
  {
    size_t per = bytes / 16 / (2 * sms);
    float us = per_call_us([&](cudaStream_t s, int i) {
      ldg_read<8><<<2 * sms, 256, 0, s>>>((const uint4*)kv[i], per, out);
      tiny<<<1, 128, 0, s>>>(out);
    });
    row("ldg 2 x SMs blocks, then a 1-block kernel", us);
  }
  CHECK(cudaGetLastError());
  CHECK(cudaDeviceSynchronize());
  return 0;
}
