// The reference the bandwidth columns divide by: a device-to-device copy of `bytes`, counting
// bytes read plus bytes written, median of 20 timed copies (CUDA events). Prints one JSON line.
//   copy_bandwidth [BYTES]   (default 1 GiB)
#include <cuda_runtime.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <vector>

int main(int argc, char** argv) {
  size_t bytes = argc > 1 ? std::strtoull(argv[1], nullptr, 10) : (size_t(1) << 30);
  void *a = nullptr, *b = nullptr;
  if (cudaMalloc(&a, bytes) != cudaSuccess || cudaMalloc(&b, bytes) != cudaSuccess) {
    std::fprintf(stderr, "copy_bandwidth: cudaMalloc failed\n");
    return 1;
  }
  cudaMemset(a, 1, bytes);
  cudaEvent_t e0, e1;
  cudaEventCreate(&e0);
  cudaEventCreate(&e1);
  for (int w = 0; w < 3; ++w) cudaMemcpy(b, a, bytes, cudaMemcpyDeviceToDevice);
  std::vector<float> ms;
  for (int r = 0; r < 20; ++r) {
    cudaEventRecord(e0);
    cudaMemcpy(b, a, bytes, cudaMemcpyDeviceToDevice);
    cudaEventRecord(e1);
    cudaEventSynchronize(e1);
    float t = 0;
    cudaEventElapsedTime(&t, e0, e1);
    ms.push_back(t);
  }
  std::sort(ms.begin(), ms.end());
  double median = ms[ms.size() / 2];
  std::printf("{\"bytes\": %zu, \"median_ms\": %.4f, \"gbps\": %.1f}\n", bytes, median,
              2.0 * double(bytes) / (median * 1e-3) / 1e9);
  return cudaGetLastError() == cudaSuccess ? 0 : 1;
}
