// C sources that generated units include where they use tensor cores, the hosted table,
// cuBLASLt or cuDNN (printer_writer.h).
#include "codegen/printer_writer.h"

namespace eqfuse::codegen::detail {

// Tensor cores for 16-bit attention (body_attention_mma): D += A·B for one warp, mma.sync's
// m16n8k16 shape with f32 accumulators; A (16 x 16) and B (16 x 8) hold two 16-bit elements per
// register, the lower index in the low half, laid out across the lanes as PTX's ISA states for
// that shape. The CPU emulator of the tests (EQF_CUDA_EMULATOR) computes the same product from
// those layouts.
const char* const kMmaHelpers = R"eqf(#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ < 800
#error "eqfuse: 16-bit attention and convolution tiles use mma.sync.m16n8k16 (sm_80 or newer): write the tree with eqfuse compile --arch for this GPU"
#endif
__device__ __forceinline__ uint32_t eqf_pack_bf16(float lo, float hi) {
  return (uint32_t)eqf_float_to_bf16(lo) | (uint32_t)eqf_float_to_bf16(hi) << 16;
}
__device__ __forceinline__ uint32_t eqf_pack_f16(float lo, float hi) {
  return (uint32_t)eqf_float_to_f16(lo) | (uint32_t)eqf_float_to_f16(hi) << 16;
}
#if defined(EQF_CUDA_EMULATOR)
#define eqf_mma_bf16(d, a, b) eqf_emu::mma_m16n8k16(d, a, b, false)
#define eqf_mma_f16(d, a, b) eqf_emu::mma_m16n8k16(d, a, b, true)
#else
__device__ __forceinline__ void eqf_mma_bf16(float* d, const uint32_t* a, const uint32_t* b) {
  asm volatile(
      "mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32 {%0, %1, %2, %3}, {%4, %5, %6, %7}, "
      "{%8, %9}, {%0, %1, %2, %3};\n"
      : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3])
      : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b[0]), "r"(b[1]));
}
__device__ __forceinline__ void eqf_mma_f16(float* d, const uint32_t* a, const uint32_t* b) {
  asm volatile(
      "mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32 {%0, %1, %2, %3}, {%4, %5, %6, %7}, "
      "{%8, %9}, {%0, %1, %2, %3};\n"
      : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3])
      : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b[0]), "r"(b[1]));
}
#endif

)eqf";

// The table through which hosted CUDA host code reaches the GPU: codegen::EqfHost
// (codegen/cuda_backend.h), which says what each entry does; the two must agree.
const char* const kHostTable = R"(
struct EqfHost {
  void* ctx;
  int (*launch)(void* ctx, const char* kernel, unsigned grid, unsigned block, void** args);
  int (*gemm)(void* ctx, int trans_a, int trans_b, int64_t m, int64_t n, int64_t k, float alpha,
              const void* a, int a_type, int64_t lda, int64_t stride_a, const void* b,
              int b_type, int64_t ldb, int64_t stride_b, void* c, int c_type, int64_t ldc,
              int64_t stride_c, int64_t batch);
  void (*record)(void* ctx, int stage);
};

)";

// Host code of the products with an epilogue in cuBLASLt (Writer::cublaslt_call): one handle and
// workspace per process, as the cuBLAS handle is (one run at a time); each call site keeps its
// descriptors and the heuristic's first algorithm for up to 4 shapes. f32 products compute in
// f32 (CUBLAS_COMPUTE_32F: no TF32, as everywhere in eqfuse), 16-bit ones accumulate in f32.
// EQFUSE_CUBLASLT=0 (read once per process) leaves every product to cuBLAS and the kernels.
const char* const kCublasLtRuntime = R"(#include <cublasLt.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

struct EqfLtChoice {
  int64_t shape[8];  // m, n, k, batch, and the alignments of A, B, C and D in bytes
  int state;         // 0 none yet, 1 ready, 2 cuBLASLt took no algorithm or failed
  cublasLtMatmulDesc_t op;
  cublasLtMatrixLayout_t a, b, d;
  cublasLtMatmulAlgo_t algo;
  size_t workspace;
};
struct EqfLtChoices {
  EqfLtChoice at[4];
  int next;
};
static const size_t kEqfLtWorkspace = (size_t)32 << 20;

static cublasLtHandle_t eqf_cublaslt(void) {
  static cublasLtHandle_t h = 0;
  if (!h) {
    cublasLtHandle_t made = 0;
    if (cublasLtCreate(&made) == CUBLAS_STATUS_SUCCESS) h = made;
  }
  return h;
}
static void* eqf_lt_workspace(void) {
  static void* w = 0;
  if (!w && cudaMalloc(&w, kEqfLtWorkspace) != cudaSuccess) w = 0;
  return w;
}
// EQFUSE_CUBLASLT: 0 off, 1 (the default) on, "strict" on and a product cuBLASLt does not run
// fails the run (the tests use it to know that cuBLASLt ran).
static int eqf_lt_mode(void) {
  static int mode = -1;
  if (mode < 0) {
    const char* v = getenv("EQFUSE_CUBLASLT");
    mode = v && strcmp(v, "0") == 0 ? 0 : v && strcmp(v, "strict") == 0 ? 2 : 1;
  }
  return mode;
}
static int eqf_lt_layout(cublasLtMatrixLayout_t* l, cudaDataType t, int64_t rows, int64_t cols,
                         int64_t ld, int64_t batch, long long stride) {
  const int32_t count = (int32_t)batch;
  const int64_t offset = (int64_t)stride;
  *l = 0;
  return cublasLtMatrixLayoutCreate(l, t, (uint64_t)rows, (uint64_t)cols, ld) !=
             CUBLAS_STATUS_SUCCESS ||
         cublasLtMatrixLayoutSetAttribute(*l, CUBLASLT_MATRIX_LAYOUT_BATCH_COUNT, &count,
                                          sizeof count) != CUBLAS_STATUS_SUCCESS ||
         cublasLtMatrixLayoutSetAttribute(*l, CUBLASLT_MATRIX_LAYOUT_STRIDED_BATCH_OFFSET, &offset,
                                          sizeof offset) != CUBLAS_STATUS_SUCCESS;
}
static void eqf_lt_release(EqfLtChoice* c) {
  if (c->op) cublasLtMatmulDescDestroy(c->op);
  if (c->a) cublasLtMatrixLayoutDestroy(c->a);
  if (c->b) cublasLtMatrixLayoutDestroy(c->b);
  if (c->d) cublasLtMatrixLayoutDestroy(c->d);
  memset(c, 0, sizeof *c);
}
// The descriptors and algorithm of one shape; state 2 where cuBLASLt has none.
// The alignment of `p` in bytes, up to 256 (cuBLASLt's default assumption, which generated
// buffers need not meet: arena slots and weights are 64-byte aligned, inputs and outputs 16).
static uint32_t eqf_lt_alignment(const void* p) {
  uint32_t a = 256;
  while (a > 1 && ((uintptr_t)p & (a - 1))) a >>= 1;
  return a;
}
// The algorithm the heuristic ranks first for these layouts, for pointers of the given
// alignments.
static void eqf_lt_prepare(EqfLtChoice* c, int ta, int tb, int64_t m, int64_t n, int64_t k,
                           cudaDataType ab, int64_t lda, long long sa, int64_t ldb, long long sb,
                           cudaDataType dt, int64_t batch, const void* bias, int epilogue) {
  c->state = 2;
  const int32_t op_a = ta ? CUBLAS_OP_T : CUBLAS_OP_N, op_b = tb ? CUBLAS_OP_T : CUBLAS_OP_N;
  const uint32_t ep = (uint32_t)epilogue;
  cublasLtHandle_t h = eqf_cublaslt();
  if (!h || !eqf_lt_workspace() ||
      cublasLtMatmulDescCreate(&c->op, CUBLAS_COMPUTE_32F, CUDA_R_32F) != CUBLAS_STATUS_SUCCESS ||
      cublasLtMatmulDescSetAttribute(c->op, CUBLASLT_MATMUL_DESC_TRANSA, &op_a, sizeof op_a) !=
          CUBLAS_STATUS_SUCCESS ||
      cublasLtMatmulDescSetAttribute(c->op, CUBLASLT_MATMUL_DESC_TRANSB, &op_b, sizeof op_b) !=
          CUBLAS_STATUS_SUCCESS ||
      cublasLtMatmulDescSetAttribute(c->op, CUBLASLT_MATMUL_DESC_EPILOGUE, &ep, sizeof ep) !=
          CUBLAS_STATUS_SUCCESS ||
      (bias && cublasLtMatmulDescSetAttribute(c->op, CUBLASLT_MATMUL_DESC_BIAS_POINTER, &bias,
                                              sizeof bias) != CUBLAS_STATUS_SUCCESS) ||
      eqf_lt_layout(&c->a, ab, ta ? k : m, ta ? m : k, lda, batch, sa) ||
      eqf_lt_layout(&c->b, ab, tb ? n : k, tb ? k : n, ldb, batch, sb) ||
      eqf_lt_layout(&c->d, dt, m, n, m, batch, (long long)(m * n)))
    return;
  cublasLtMatmulPreference_t pref = 0;
  const uint64_t most = kEqfLtWorkspace;
  cublasLtMatmulHeuristicResult_t found;
  int count = 0;
  const uint32_t align[4] = {(uint32_t)c->shape[4], (uint32_t)c->shape[5], (uint32_t)c->shape[6],
                             (uint32_t)c->shape[7]};
  if (cublasLtMatmulPreferenceCreate(&pref) == CUBLAS_STATUS_SUCCESS &&
      cublasLtMatmulPreferenceSetAttribute(pref, CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES, &most,
                                           sizeof most) == CUBLAS_STATUS_SUCCESS &&
      cublasLtMatmulPreferenceSetAttribute(pref, CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_A_BYTES,
                                           &align[0], sizeof align[0]) == CUBLAS_STATUS_SUCCESS &&
      cublasLtMatmulPreferenceSetAttribute(pref, CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_B_BYTES,
                                           &align[1], sizeof align[1]) == CUBLAS_STATUS_SUCCESS &&
      cublasLtMatmulPreferenceSetAttribute(pref, CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_C_BYTES,
                                           &align[2], sizeof align[2]) == CUBLAS_STATUS_SUCCESS &&
      cublasLtMatmulPreferenceSetAttribute(pref, CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_D_BYTES,
                                           &align[3], sizeof align[3]) == CUBLAS_STATUS_SUCCESS &&
      cublasLtMatmulAlgoGetHeuristic(h, c->op, c->a, c->b, c->d, c->d, pref, 1, &found, &count) ==
          CUBLAS_STATUS_SUCCESS &&
      count > 0) {
    c->algo = found.algo;
    c->workspace = found.workspaceSize;
    c->state = 1;
  }
  if (pref) cublasLtMatmulPreferenceDestroy(pref);
}
// Column-major D = epilogue(alpha op(A) op(B) + beta C + bias), C (read where beta != 0) laid out
// as D, the bias one element per row of D, `epilogue` a cublasLtEpilogue_t. Returns 0 done, or 1
// where the caller runs its other form: cuBLASLt takes no algorithm for the shape, or failed
// (said once on stderr, and the shape keeps the other form), or a new shape arrives while the
// stream is being captured into a CUDA graph (nothing is chosen or allocated inside a graph);
// -1 instead of 1 under EQFUSE_CUBLASLT=strict.
static int eqf_lt_run(EqfLtChoices* cs, cudaStream_t st, int ta, int tb, int64_t m, int64_t n,
                       int64_t k, float alpha, const void* a, int64_t lda, long long sa,
                       const void* b, int64_t ldb, long long sb, cudaDataType ab, float beta,
                       const void* c, void* d, cudaDataType dt, int64_t batch, const void* bias,
                       int epilogue) {
  if (!eqf_lt_mode()) return 1;
  const int64_t shape[8] = {m,
                            n,
                            k,
                            batch,
                            eqf_lt_alignment(a),
                            eqf_lt_alignment(b),
                            eqf_lt_alignment(c ? c : d),
                            eqf_lt_alignment(d)};
  if (bias && eqf_lt_alignment(bias) < 16) return 1;
  EqfLtChoice* ch = 0;
  for (int q = 0; q < 4 && !ch; ++q)
    if (cs->at[q].state && memcmp(cs->at[q].shape, shape, sizeof shape) == 0) ch = &cs->at[q];
  if (!ch) {
    cudaStreamCaptureStatus capturing = cudaStreamCaptureStatusNone;
    if (cudaStreamIsCapturing(st, &capturing) != cudaSuccess ||
        capturing != cudaStreamCaptureStatusNone)
      return 1;
    ch = &cs->at[cs->next];
    cs->next = (cs->next + 1) % 4;
    eqf_lt_release(ch);
    memcpy(ch->shape, shape, sizeof shape);
    eqf_lt_prepare(ch, ta, tb, m, n, k, ab, lda, sa, ldb, sb, dt, batch, bias, epilogue);
  }
  if (ch->state != 1) return 1;
  int status = 0;
  if (bias)
    status = (int)cublasLtMatmulDescSetAttribute(ch->op, CUBLASLT_MATMUL_DESC_BIAS_POINTER, &bias,
                                                 sizeof bias);
  if (status == 0)
    status = (int)cublasLtMatmul(eqf_cublaslt(), ch->op, &alpha, a, ch->a, b, ch->b, &beta,
                                 c ? c : d, ch->d, d, ch->d, &ch->algo, eqf_lt_workspace(),
                                 ch->workspace, st);
  if (status == 0) return 0;
  fprintf(stderr,
          "eqfuse: cuBLASLt failed (status %d) on a %lld x %lld x %lld product; cuBLAS and "
          "the kernels run it instead\n",
          status, (long long)m, (long long)n, (long long)k);
  ch->state = 2;
  return 1;
}
static int eqf_lt_gemm(EqfLtChoices* cs, cudaStream_t st, int ta, int tb, int64_t m, int64_t n,
                       int64_t k, float alpha, const void* a, int64_t lda, long long sa,
                       const void* b, int64_t ldb, long long sb, cudaDataType ab, float beta,
                       const void* c, void* d, cudaDataType dt, int64_t batch, const void* bias,
                       int epilogue) {
  const int r = eqf_lt_run(cs, st, ta, tb, m, n, k, alpha, a, lda, sa, b, ldb, sb, ab, beta, c, d,
                           dt, batch, bias, epilogue);
  return r != 0 && eqf_lt_mode() == 2 ? -1 : r;
}

)";

// The host code of convolutions through cuDNN (printed where a stage may take it; compiled in
// builds with -DEQFUSE_CUDNN). At the first run of each binding of its shape (not while the
// stream captures a graph), a convolution stage times the (up to 3) algorithms cuDNN's
// heuristics rank best, each plus its finish kernel, against its generated kernels, on scratch
// memory, and keeps the fastest for that shape;
// EQFUSE_CONV=kernels or =cudnn (read once per process) forces one, EQFUSE_CONV_REPORT=1 prints
// each choice. f32 convolutions take only FMA algorithms (no TF32, as everywhere in eqfuse); f16
// and bf16 ones tensor cores, accumulating in f32. The cuDNN handle, its workspace and the scratch
// memory are the process's, as the cuBLAS handle is: one run at a time.
const char* const kCudnnRuntime = R"(#if defined(EQFUSE_CUDNN)
#include <cudnn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

// A convolution as cuDNN takes it: NCHW shapes of x, w and y, the window, groups, element type,
// and the stage's fused form: 0 none, 1 y = conv + z + bias, 2 y = relu(conv + z + bias).
struct EqfConv {
  int x[4], w[4], y[4], pad[2], stride[2], dilation[2], groups;
  cudnnDataType_t type;
  int fused;
};
// One binding's choice: 0 none yet, 1 the generated kernels, 2 cuDNN with `algo` and the finish
// kernel, 3 cuDNN's fused convolution with `algo`.
struct EqfConvChoice {
  EqfConv conv;
  int state;
  int fusable;  // conv.fused where cuDNN took the fused form's descriptors, else 0
  cudnnTensorDescriptor_t x, y, bias;
  cudnnFilterDescriptor_t w;
  cudnnConvolutionDescriptor_t desc;
  cudnnActivationDescriptor_t act;
  cudnnConvolutionFwdAlgo_t algo;
  size_t workspace;
};
// A stage's choices for up to 8 bindings (then the oldest is replaced).
struct EqfConvChoices {
  EqfConvChoice at[8];
  int next;
};

static cudnnHandle_t eqf_cudnn(cudaStream_t st) {
  static cudnnHandle_t h = 0;
  if (!h) {
    cudnnHandle_t made = 0;
    if (cudnnCreate(&made) != CUDNN_STATUS_SUCCESS) return 0;
    h = made;
  }
  return cudnnSetStream(h, st) == CUDNN_STATUS_SUCCESS ? h : 0;
}

// Device memory that only grows. An outgrown buffer stays allocated: a captured CUDA graph may
// still name it.
static void* eqf_grow(void** buffer, size_t* have, size_t bytes) {
  if (bytes > *have) {
    void* p = 0;
    if (cudaMalloc(&p, bytes) != cudaSuccess) return 0;
    *buffer = p;
    *have = bytes;
  }
  return *buffer;
}
// cuDNN's raw output, read by the finish kernels.
static void* eqf_conv_scratch(size_t bytes) {
  static void* buffer = 0;
  static size_t have = 0;
  return eqf_grow(&buffer, &have, bytes + 1);
}
static void* eqf_conv_workspace(size_t bytes) {
  static void* buffer = 0;
  static size_t have = 0;
  return eqf_grow(&buffer, &have, bytes + 1);
}

// EQFUSE_CONV: 0 time the forms (unset or "auto"), 1 "kernels", 2 "cudnn" (the fused form
// where the stage has one), 3 "cudnn-unfused" (cuDNN and the finish kernel).
static int eqf_conv_mode(void) {
  const char* m = getenv("EQFUSE_CONV");
  return !m                          ? 0
         : !strcmp(m, "kernels")       ? 1
         : !strcmp(m, "cudnn")         ? 2
         : !strcmp(m, "cudnn-unfused") ? 3
                                       : 0;
}

static void eqf_conv_forget(EqfConvChoice* c) {
  if (c->x) cudnnDestroyTensorDescriptor(c->x);
  if (c->y) cudnnDestroyTensorDescriptor(c->y);
  if (c->bias) cudnnDestroyTensorDescriptor(c->bias);
  if (c->act) cudnnDestroyActivationDescriptor(c->act);
  if (c->w) cudnnDestroyFilterDescriptor(c->w);
  if (c->desc) cudnnDestroyConvolutionDescriptor(c->desc);
  memset(c, 0, sizeof *c);
}

// cuDNN's descriptors of c->conv, and in `candidates` the algorithms its heuristics rank best
// (up to 3; f32: only those without tensor cores) that need at most 1 GiB of workspace; how
// many there are.
static int eqf_cudnn_prepare(EqfConvChoice* c, cudnnConvolutionFwdAlgoPerf_t* candidates,
                             cudaStream_t st) {
  const EqfConv* v = &c->conv;
  cudnnHandle_t h = eqf_cudnn(st);
  if (!h || cudnnCreateTensorDescriptor(&c->x) || cudnnCreateTensorDescriptor(&c->y) ||
      cudnnCreateFilterDescriptor(&c->w) || cudnnCreateConvolutionDescriptor(&c->desc))
    return 0;
  const int f32 = v->type == CUDNN_DATA_FLOAT;
  if (cudnnSetTensor4dDescriptor(c->x, CUDNN_TENSOR_NCHW, v->type, v->x[0], v->x[1], v->x[2],
                                 v->x[3]) ||
      cudnnSetTensor4dDescriptor(c->y, CUDNN_TENSOR_NCHW, v->type, v->y[0], v->y[1], v->y[2],
                                 v->y[3]) ||
      cudnnSetFilter4dDescriptor(c->w, v->type, CUDNN_TENSOR_NCHW, v->w[0], v->w[1], v->w[2],
                                 v->w[3]) ||
      cudnnSetConvolution2dDescriptor(c->desc, v->pad[0], v->pad[1], v->stride[0], v->stride[1],
                                      v->dilation[0], v->dilation[1], CUDNN_CROSS_CORRELATION,
                                      CUDNN_DATA_FLOAT) ||
      cudnnSetConvolutionGroupCount(c->desc, v->groups) ||
      cudnnSetConvolutionMathType(c->desc, f32 ? CUDNN_FMA_MATH : CUDNN_TENSOR_OP_MATH))
    return 0;
  // The fused form's bias (one per output channel, in y's type) and activation; without them
  // the other forms remain. The fused call takes only CUDNN_NOT_PROPAGATE_NAN (as TensorFlow's
  // and PyTorch's fused paths set it): there a NaN reaching the ReLU may come out as 0, where the
  // generated kernels keep it.
  c->fusable =
      v->fused && !cudnnCreateTensorDescriptor(&c->bias) &&
              !cudnnCreateActivationDescriptor(&c->act) &&
              !cudnnSetTensor4dDescriptor(c->bias, CUDNN_TENSOR_NCHW, v->type, 1, v->y[1], 1, 1) &&
              !cudnnSetActivationDescriptor(
                  c->act, v->fused == 2 ? CUDNN_ACTIVATION_RELU : CUDNN_ACTIVATION_IDENTITY,
                  CUDNN_NOT_PROPAGATE_NAN, 0.0)
          ? v->fused
          : 0;
  cudnnConvolutionFwdAlgoPerf_t perf[8];
  int found = 0, kept = 0;
  if (cudnnGetConvolutionForwardAlgorithm_v7(h, c->x, c->w, c->desc, c->y, 8, &found, perf))
    return 0;
  for (int k = 0; k < found && kept < 3; ++k) {
    if (perf[k].status != CUDNN_STATUS_SUCCESS || perf[k].memory > ((size_t)1 << 30)) continue;
    if (f32 && perf[k].mathType != CUDNN_FMA_MATH) continue;
    if (!eqf_conv_workspace(perf[k].memory)) continue;
    candidates[kept++] = perf[k];
  }
  return kept;
}

// Makes `perf`'s algorithm the one c runs.
static int eqf_cudnn_use(EqfConvChoice* c, const cudnnConvolutionFwdAlgoPerf_t* perf) {
  c->algo = perf->algo;
  c->workspace = perf->memory;
  return cudnnSetConvolutionMathType(c->desc, perf->mathType) != CUDNN_STATUS_SUCCESS;
}

static int eqf_cudnn_forward(const EqfConvChoice* c, const void* x, const void* w, void* y,
                             cudaStream_t st) {
  const float one = 1.0f, zero = 0.0f;
  cudnnHandle_t h = eqf_cudnn(st);
  return !h || cudnnConvolutionForward(h, &one, c->x, x, c->w, w, c->desc, c->algo,
                                       eqf_conv_workspace(c->workspace), c->workspace, &zero,
                                       c->y, y) != CUDNN_STATUS_SUCCESS;
}

// y = act(conv(x, w) + z + bias) in one call (z null: none). A model whose convolutions have
// no fused form (each stores where a layout copy puts it, say) does not call it.
[[maybe_unused]] static int eqf_cudnn_fused(const EqfConvChoice* c, const void* x, const void* w, const void* z,
                           const void* bias, void* y, cudaStream_t st) {
  const float one = 1.0f, z_scale = z ? 1.0f : 0.0f;
  cudnnHandle_t h = eqf_cudnn(st);
  return !h || cudnnConvolutionBiasActivationForward(
                   h, &one, c->x, x, c->w, w, c->desc, c->algo, eqf_conv_workspace(c->workspace),
                   c->workspace, &z_scale, c->y, z ? z : y, c->bias, bias, c->act, c->y,
                   y) != CUDNN_STATUS_SUCCESS;
}

// Whether the chosen cuDNN form agrees with the generated kernels, each run once into `trial`
// and copied back: max |a - b| at most 1e-3 (f32) or 1e-2 (16 bits) of max |a|. Where it does
// not, it says so and the stage keeps its kernels (EQFUSE_CONV_CHECK=fail: the run fails).
template <typename T, typename K, typename F>
static int eqf_conv_check(int stage, EqfConvChoice* c, T* trial, size_t bytes, K kernels, F form,
                          cudaStream_t st) {
  T* a = (T*)malloc(bytes + 1);
  T* b = (T*)malloc(bytes + 1);
  const int ran = a && b && !kernels(trial) && cudaStreamSynchronize(st) == cudaSuccess &&
                  cudaMemcpy(a, trial, bytes, cudaMemcpyDeviceToHost) == cudaSuccess &&
                  !form(trial) && cudaStreamSynchronize(st) == cudaSuccess &&
                  cudaMemcpy(b, trial, bytes, cudaMemcpyDeviceToHost) == cudaSuccess;
  float scale = 0, error = 0;
  for (size_t i = 0; ran && i < bytes / sizeof(T); ++i) {
    const float u = (float)a[i], v = (float)b[i], d = fabsf(u - v);
    if (u != u && v != v) continue;  // NaN in both
    scale = fmaxf(scale, fabsf(u));
    error = d != d ? INFINITY : fmaxf(error, d);
  }
  free(a);
  free(b);
  if (ran && error <= (c->conv.type == CUDNN_DATA_FLOAT ? 1e-3f : 1e-2f) * scale) return 0;
  fprintf(stderr,
          "eqfuse: stage %d: cuDNN's %s differs from the generated kernels (max error %g, largest "
          "value %g%s): the stage keeps its kernels\n",
          stage, c->state == 3 ? "fused convolution" : "convolution", error, scale,
          ran ? "" : ", a run failed");
  c->state = 1;
  const char* check = getenv("EQFUSE_CONV_CHECK");
  return check && !strcmp(check, "fail") ? -1 : 0;
}

// The least time of 3 runs of `run` after a first, in ms; negative where a run fails.
template <typename F>
static float eqf_conv_time(F run, cudaStream_t st) {
  cudaEvent_t a, b;
  cudaEventCreate(&a);
  cudaEventCreate(&b);
  float best = run() == 0 ? 1e30f : -1.0f;
  for (int r = 0; r < 3 && best >= 0; ++r) {
    cudaEventRecord(a, st);
    const int failed = run();
    cudaEventRecord(b, st);
    cudaEventSynchronize(b);
    float ms = 0;
    cudaEventElapsedTime(&ms, a, b);
    best = failed ? -1.0f : ms < best ? ms : best;
  }
  cudaEventDestroy(a);
  cudaEventDestroy(b);
  return best;
}

// Runs convolution stage `stage` in the form chosen for `conv`, choosing first where this
// binding has no choice yet: `kernels(out)`, `library(out, choice)` (cuDNN and the finish
// kernel) or `fused(out, choice)` (cuDNN's fused convolution, where conv.fused). A cuDNN form
// chosen by timing is checked against the kernels (eqf_conv_check); a forced one is not.
template <typename T, typename K, typename L, typename F>
static int eqf_conv_run(int stage, EqfConvChoices* cs, const EqfConv& conv, size_t out_bytes,
                        T* out, cudaStream_t st, K kernels, L library, F fused) {
  static const int mode = eqf_conv_mode();  // read once per process
  if (mode == 1) return kernels(out);
  EqfConvChoice* c = 0;
  for (int k = 0; k < 8 && !c; ++k)
    if (cs->at[k].state && !memcmp(&cs->at[k].conv, &conv, sizeof conv)) c = &cs->at[k];
  // The chosen cuDNN form.
  auto form = [&](T* o) { return c->state == 3 ? fused(o, c) : library(o, c); };
  if (!c) {
    cudaStreamCaptureStatus capturing = cudaStreamCaptureStatusNone;
    if (cudaStreamIsCapturing(st, &capturing) != cudaSuccess ||
        capturing != cudaStreamCaptureStatusNone)
      return kernels(out);  // no choosing inside a graph
    c = &cs->at[cs->next];
    cs->next = (cs->next + 1) % 8;
    eqf_conv_forget(c);
    c->conv = conv;
    c->state = 1;
    cudnnConvolutionFwdAlgoPerf_t candidates[3];
    const int count = eqf_cudnn_prepare(c, candidates, st);
    // The fused form takes ReLU with any algorithm, the identity only with PRECOMP_GEMM.
    auto fusable = [&](int k) {
      return c->fusable == 2 ||
             (c->fusable == 1 &&
              candidates[k].algo == CUDNN_CONVOLUTION_FWD_ALGO_IMPLICIT_PRECOMP_GEMM);
    };
    float ms_kernels = -1, ms_library = -1;
    int fastest = -1;  // cuDNN's fastest algorithm here
    T* trial = 0;
    if (count > 0 && mode >= 2) {
      int k = 0, state = 2;
      for (int j = 0; j < count && mode == 2 && state == 2; ++j)
        if (fusable(j)) k = j, state = 3;
      c->state = eqf_cudnn_use(c, &candidates[k]) ? 1 : state;
      fastest = (int)candidates[k].algo;
    } else if (count > 0 && cudaMalloc((void**)&trial, out_bytes + 1) == cudaSuccess) {
      ms_kernels = eqf_conv_time([&] { return kernels(trial); }, st);
      int best = -1, best_state = 1;
      for (int k = 0; k < count; ++k) {
        if (eqf_cudnn_use(c, &candidates[k])) continue;
        const float ms = eqf_conv_time([&] { return library(trial, c); }, st);
        if (ms >= 0 && (ms_library < 0 || ms < ms_library)) ms_library = ms, best = k, best_state = 2;
        if (!fusable(k)) continue;
        const float ms_fused = eqf_conv_time([&] { return fused(trial, c); }, st);
        if (ms_fused >= 0 && (ms_library < 0 || ms_fused < ms_library))
          ms_library = ms_fused, best = k, best_state = 3;
      }
      if (best >= 0) fastest = (int)candidates[best].algo;
      if (best >= 0 && (ms_kernels < 0 || ms_library < ms_kernels) &&
          !eqf_cudnn_use(c, &candidates[best])) {
        c->state = best_state;
        // (Kernels that failed to run leave nothing to check against.)
        if (ms_kernels >= 0 && eqf_conv_check(stage, c, trial, out_bytes, kernels, form, st)) {
          cudaFree(trial);
          return -1;
        }
      }
      cudaFree(trial);
    }
    const char* report = getenv("EQFUSE_CONV_REPORT");
    if (report && *report && strcmp(report, "0"))
      fprintf(stderr,
              "eqfuse: stage %d: conv x %dx%dx%dx%d w %dx%dx%dx%d: cuDNN algo %d %.4f ms, kernels "
              "%.4f ms -> %s\n",
              stage, conv.x[0], conv.x[1], conv.x[2], conv.x[3], conv.w[0], conv.w[1], conv.w[2],
              conv.w[3], fastest, ms_library, ms_kernels,
              c->state == 3 ? "cuDNN fused" : c->state == 2 ? "cuDNN" : "kernels");
  }
  if (c->state == 3) {
    if (!fused(out, c)) return 0;
    // E.g. cuDNN refuses the form where it was forced untried.
    fprintf(stderr,
            "eqfuse: stage %d: cuDNN's fused convolution failed: cuDNN and the finish kernel from "
            "now on\n",
            stage);
    c->state = 2;
  }
  return c->state == 1 ? kernels(out) : library(out, c);
}
#endif

)";

}  // namespace eqfuse::codegen::detail
