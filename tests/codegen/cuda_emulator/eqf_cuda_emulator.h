#pragma once
// A CPU emulation of the little of CUDA that eqfuse's generated kernels use, so that tests can
// run the CUDA printer's output on machines without a GPU (CI) and compare it with the
// interpreter. It is a test tool, not a simulator: it checks what the kernels compute, not how
// fast, nor every way a real GPU may interleave them.
//
// A launch runs one block of `block` threads (gridDim.x == 1; every generated kernel walks its
// items in grid-stride loops, so one block covers them all) as fibers on the calling thread.
// A fiber runs until it reaches __syncthreads(), a warp shuffle or a tensor-core product
// (mma_m16n8k16) and waits there until every thread of its block (of its warp) has arrived; a
// barrier that cannot complete (some threads finished, others wait) aborts with a message, as it
// would hang or misbehave on a GPU. Threads run between barriers in thread order, or in the
// reverse order under EQF_EMULATOR_ORDER=reverse (the tests run both and require the same bits).
// __shared__ arrays are statics: blocks run one after another. cuBLAS's strided-batched GEMMs
// are plain loops, and so are cuDNN's convolutions (cudnn.h); device memory is the host's. The
// test rewrites each `kernel<<<grid, block, 0, st>>>(args);` into
// `eqf_emu::launch(block, [&] { kernel(args); });` before compiling (C++ has no launch syntax).
#include <ucontext.h>

#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <vector>

// The generated prelude defines its warp reductions for CUDA only (after the system headers
// above, which must not see this); its tensor-core products call mma_m16n8k16 below.
#define __CUDACC__ 1
#define EQF_CUDA_EMULATOR 1
#define __global__
#define __device__
#define __host__
#define __forceinline__ inline
#define __shared__ static
#define __align__(n) __attribute__((aligned(n)))

struct dim3 {
  unsigned x = 1, y = 1, z = 1;
};
// Aligned as CUDA aligns them: the tests build the emulated source with
// -fsanitize=alignment, so that a vector access at a misaligned address fails here as on a GPU.
struct alignas(8) float2 {
  float x, y;
};
struct alignas(16) float4 {
  float x, y, z, w;
};

inline dim3 threadIdx, blockIdx, blockDim, gridDim;

namespace eqf_emu {

enum class State { Runnable, AtBlockBarrier, AtWarpBarrier, Done };

struct Fiber {
  ucontext_t context;
  std::vector<char> stack;
  State state = State::Runnable;
};

inline ucontext_t scheduler;
inline std::vector<Fiber> fibers;
inline int current = 0;
inline const std::function<void()>* body = nullptr;
inline double shuffle_slots[1024];
// The emulator's clock, which CUDA events read: a launch advances it 2 ticks, a cuDNN
// convolution 1 (cudnn.h), so that timing a library call against kernels is deterministic.
inline long long ticks = 0;

inline void run_fiber() {
  (*body)();
  fibers[size_t(current)].state = State::Done;
}

inline void wait(State at) {
  fibers[size_t(current)].state = at;
  swapcontext(&fibers[size_t(current)].context, &scheduler);
}

[[noreturn]] inline void deadlock(const char* what) {
  std::fprintf(stderr, "eqf_emu: %s cannot complete: some threads finished, others wait\n", what);
  std::abort();
}

// Releases every barrier that all its threads have reached; whether any was.
inline bool release_barriers(int threads) {
  bool released = false, any_waiting = false;
  bool block_ready = true;
  for (const Fiber& f : fibers) {
    if (f.state == State::AtBlockBarrier) any_waiting = true;
    if (f.state != State::AtBlockBarrier) block_ready = false;
  }
  if (any_waiting && block_ready) {
    for (Fiber& f : fibers) f.state = State::Runnable;
    return true;
  }
  for (int w = 0; w * 32 < threads; ++w) {
    bool ready = true, waiting = false;
    for (int t = w * 32; t < w * 32 + 32 && t < threads; ++t) {
      waiting = waiting || fibers[size_t(t)].state == State::AtWarpBarrier;
      ready = ready && fibers[size_t(t)].state == State::AtWarpBarrier;
    }
    if (waiting && ready) {
      for (int t = w * 32; t < w * 32 + 32 && t < threads; ++t)
        fibers[size_t(t)].state = State::Runnable;
      released = true;
    }
  }
  return released;
}

// Runs `kernel` as one block of `threads` threads.
inline void launch(unsigned threads, const std::function<void()>& kernel) {
  ticks += 2;
  body = &kernel;
  fibers.resize(threads);
  blockDim.x = threads;
  gridDim.x = 1;
  blockIdx.x = 0;
  for (unsigned t = 0; t < threads; ++t) {
    Fiber& f = fibers[t];
    f.stack.resize(256 * 1024);
    f.state = State::Runnable;
    getcontext(&f.context);
    f.context.uc_stack.ss_sp = f.stack.data();
    f.context.uc_stack.ss_size = f.stack.size();
    f.context.uc_link = &scheduler;
    makecontext(&f.context, run_fiber, 0);
  }
  // EQF_EMULATOR_ORDER=reverse runs the threads between barriers in the other order: a result
  // that changes with it depends on how threads interleave (a missing barrier).
  const char* order = std::getenv("EQF_EMULATOR_ORDER");
  const bool reverse = order && std::strcmp(order, "reverse") == 0;
  for (;;) {
    bool ran = false, all_done = true;
    for (unsigned q = 0; q < threads; ++q) {
      const unsigned t = reverse ? threads - 1 - q : q;
      if (fibers[t].state != State::Runnable) continue;
      current = int(t);
      threadIdx.x = t;
      swapcontext(&scheduler, &fibers[t].context);
      ran = true;
    }
    for (const Fiber& f : fibers) all_done = all_done && f.state == State::Done;
    if (all_done) return;
    if (!release_barriers(int(threads)) && !ran) deadlock("a barrier");
  }
}

template <typename T>
T shuffle(T v, int from_lane) {
  const int lane = current % 32, warp_base = current - lane;
  shuffle_slots[current] = double(v);
  wait(State::AtWarpBarrier);
  T r = T(shuffle_slots[warp_base + (from_lane & 31)]);
  wait(State::AtWarpBarrier);  // every lane has read before any writes again
  return r;
}

// A 16-bit float's value (the bits of a bf16, or of an IEEE half when `f16`).
inline float half_value(uint16_t h, bool f16) {
  uint32_t u;
  if (!f16) {
    u = uint32_t(h) << 16;
  } else {
    const int e = (h >> 10) & 0x1f, m = h & 0x3ff;
    const float v = e == 0    ? std::ldexp(float(m), -24)
                    : e == 31 ? (m ? NAN : INFINITY)
                              : std::ldexp(float(m | 0x400), e - 25);
    return (h & 0x8000) ? -v : v;
  }
  float f;
  std::memcpy(&f, &u, 4);
  return f;
}

// mma.sync.aligned.m16n8k16.row.col.f32.{bf16,f16}: D = A·B + C for a warp, each lane passing
// its fragments as PTX's ISA lays them out (groupID = lane / 4, threadID_in_group = lane % 4):
// A register r of lane L holds row L/4 + 8 (r & 1), columns 2 (L%4) + 8 (r >> 1) and one more;
// B register r holds rows (k) 2 (L%4) + 8 r and one more, column (n) L/4; C and D element i
// is row L/4 + 8 (i >> 1), column 2 (L%4) + (i & 1). Every lane of the warp must take part.
inline uint32_t mma_slots[1024][6];
inline void mma_m16n8k16(float* d, const uint32_t* a, const uint32_t* b, bool f16) {
  const int lane = current % 32, base = current - lane;
  for (int r = 0; r < 4; ++r) mma_slots[current][r] = a[r];
  mma_slots[current][4] = b[0];
  mma_slots[current][5] = b[1];
  wait(State::AtWarpBarrier);
  auto element = [&](int holder, int reg, int k) {
    return half_value(uint16_t(mma_slots[base + holder][reg] >> (16 * (k & 1))), f16);
  };
  auto a_at = [&](int row, int k) {
    return element((row % 8) * 4 + (k % 8) / 2, (row >= 8 ? 1 : 0) + (k >= 8 ? 2 : 0), k);
  };
  auto b_at = [&](int k, int col) { return element(col * 4 + (k % 8) / 2, 4 + (k >= 8), k); };
  float result[4];
  for (int i = 0; i < 4; ++i) {
    const int row = lane / 4 + 8 * (i >> 1), col = 2 * (lane % 4) + (i & 1);
    float sum = d[i];
    for (int k = 0; k < 16; ++k) sum += a_at(row, k) * b_at(k, col);
    result[i] = sum;
  }
  wait(State::AtWarpBarrier);  // every lane has read the fragments before any writes again
  for (int i = 0; i < 4; ++i) d[i] = result[i];
}

}  // namespace eqf_emu

inline void __syncthreads() {
  eqf_emu::wait(eqf_emu::State::AtBlockBarrier);
}
template <typename T>
T __shfl_xor_sync(unsigned, T v, int mask) {
  return eqf_emu::shuffle(v, (eqf_emu::current % 32) ^ mask);
}
template <typename T>
T __shfl_sync(unsigned, T v, int lane) {
  return eqf_emu::shuffle(v, lane);
}

// The runtime API the generated host code calls: memory is the host's, work is synchronous,
// events read the emulator's clock (a millisecond a tick).
typedef void* cudaStream_t;
struct eqf_event {
  long long ticks = 0;
};
typedef eqf_event* cudaEvent_t;
typedef int cudaError_t;
constexpr cudaError_t cudaSuccess = 0;
inline cudaError_t cudaGetLastError() {
  return cudaSuccess;
}
inline cudaError_t cudaEventRecord(cudaEvent_t e, cudaStream_t) {
  if (e) e->ticks = eqf_emu::ticks;
  return cudaSuccess;
}
inline cudaError_t cudaEventCreate(cudaEvent_t* e) {
  *e = new eqf_event();
  return cudaSuccess;
}
inline cudaError_t cudaEventSynchronize(cudaEvent_t) {
  return cudaSuccess;
}
inline cudaError_t cudaEventElapsedTime(float* ms, cudaEvent_t a, cudaEvent_t b) {
  *ms = a && b ? float(b->ticks - a->ticks) : 0.0f;
  return cudaSuccess;
}
inline cudaError_t cudaEventDestroy(cudaEvent_t e) {
  delete e;
  return cudaSuccess;
}
inline cudaError_t cudaStreamSynchronize(cudaStream_t) {
  return cudaSuccess;
}
enum cudaMemcpyKind { cudaMemcpyDeviceToHost = 2 };
inline cudaError_t cudaMemcpy(void* to, const void* from, size_t bytes, cudaMemcpyKind) {
  std::memcpy(to, from, bytes);
  return cudaSuccess;
}
namespace eqf_emu {
// Device memory (the host's): what generated code keeps for the process's lifetime (cuDNN's
// scratch and workspace) is freed when the emulated library is unloaded, so that leak checks
// report only real leaks.
struct Heap {
  std::vector<void*> blocks;
  void* allocate(size_t bytes, size_t alignment) {
    void* p = std::aligned_alloc(alignment, (bytes + alignment - 1) / alignment * alignment);
    if (p) blocks.push_back(p);
    return p;
  }
  void release(void* p) {
    for (size_t k = 0; k < blocks.size(); ++k)
      if (blocks[k] == p) blocks.erase(blocks.begin() + long(k)), std::free(p);
  }
  ~Heap() {
    for (void* p : blocks) std::free(p);
  }
};
inline Heap heap;
}  // namespace eqf_emu

inline cudaError_t cudaMalloc(void** p, size_t bytes) {
  *p = eqf_emu::heap.allocate(bytes, 256);
  return *p ? cudaSuccess : 2;
}
inline cudaError_t cudaFree(void* p) {
  eqf_emu::heap.release(p);
  return cudaSuccess;
}
enum cudaStreamCaptureStatus { cudaStreamCaptureStatusNone = 0, cudaStreamCaptureStatusActive = 1 };
inline cudaError_t cudaStreamIsCapturing(cudaStream_t, cudaStreamCaptureStatus* status) {
  *status = cudaStreamCaptureStatusNone;
  return cudaSuccess;
}
