#pragma once
// The emulator's cuBLASLt: the matrix products with an epilogue that generated code calls, as
// cublasLt.h documents them (column-major D = epilogue(alpha op(A) op(B) + beta C), the bias
// vector one element per row of D, broadcast over its columns and added before the ReLU; strided
// batches; C either D itself or a matrix laid out as D). It refuses what the documentation does
// not allow (layouts that disagree with the operation, a bias epilogue without a bias pointer,
// pointers less aligned than the preference promised), so that a misuse fails the tests.
// EQF_EMULATOR_CUBLASLT_NONE=1 makes the heuristic find no algorithm and
// EQF_EMULATOR_CUBLASLT_FAIL=1 makes cublasLtMatmul fail, so the tests also run the callers'
// other form.
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <deque>

#include "cublas_v2.h"

typedef struct eqf_cublaslt* cublasLtHandle_t;
typedef enum {
  CUBLASLT_EPILOGUE_DEFAULT = 1,
  CUBLASLT_EPILOGUE_RELU = 2,
  CUBLASLT_EPILOGUE_BIAS = 4,
  CUBLASLT_EPILOGUE_RELU_BIAS = 6,
} cublasLtEpilogue_t;
typedef enum {
  CUBLASLT_MATMUL_DESC_TRANSA = 3,
  CUBLASLT_MATMUL_DESC_TRANSB = 4,
  CUBLASLT_MATMUL_DESC_EPILOGUE = 7,
  CUBLASLT_MATMUL_DESC_BIAS_POINTER = 8,
} cublasLtMatmulDescAttributes_t;
typedef enum {
  CUBLASLT_MATRIX_LAYOUT_BATCH_COUNT = 5,
  CUBLASLT_MATRIX_LAYOUT_STRIDED_BATCH_OFFSET = 6,
} cublasLtMatrixLayoutAttribute_t;
typedef enum {
  CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES = 1,
  CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_A_BYTES = 5,
  CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_B_BYTES = 6,
  CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_C_BYTES = 7,
  CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_D_BYTES = 8,
} cublasLtMatmulPreferenceAttributes_t;

struct eqf_lt_desc {
  cublasComputeType_t compute;
  cudaDataType scale;
  int32_t trans_a = CUBLAS_OP_N, trans_b = CUBLAS_OP_N;
  uint32_t epilogue = CUBLASLT_EPILOGUE_DEFAULT;
  const void* bias = nullptr;
};
struct eqf_lt_layout {
  cudaDataType type;
  uint64_t rows, cols;
  int64_t ld;
  int32_t batch = 1;
  int64_t stride = 0;
};
struct eqf_lt_preference {
  uint64_t workspace = 0;
  uint32_t alignment[4] = {256, 256, 256, 256};  // A, B, C, D: cuBLASLt's default
};
typedef eqf_lt_desc* cublasLtMatmulDesc_t;
typedef eqf_lt_layout* cublasLtMatrixLayout_t;
typedef eqf_lt_preference* cublasLtMatmulPreference_t;
typedef struct {
  uint64_t data[8];
} cublasLtMatmulAlgo_t;
typedef struct {
  cublasLtMatmulAlgo_t algo;
  size_t workspaceSize;
  cublasStatus_t state;
  float wavesCount;
  int reserved[4];
} cublasLtMatmulHeuristicResult_t;

inline cublasStatus_t cublasLtCreate(cublasLtHandle_t* h) {
  *h = reinterpret_cast<cublasLtHandle_t>(uintptr_t(1));
  return CUBLAS_STATUS_SUCCESS;
}
namespace eqf_emu {
// Descriptors live as long as the emulated library (generated code keeps its cuBLASLt choices for
// the whole process, as a real process would): freed when the test unloads it.
template <typename T>
T* keep(T value) {
  static std::deque<T> kept;
  kept.push_back(value);
  return &kept.back();
}
}  // namespace eqf_emu

inline cublasStatus_t cublasLtMatmulDescCreate(cublasLtMatmulDesc_t* d, cublasComputeType_t c,
                                               cudaDataType scale) {
  *d = eqf_emu::keep(eqf_lt_desc{c, scale});
  return CUBLAS_STATUS_SUCCESS;
}
inline cublasStatus_t cublasLtMatmulDescDestroy(cublasLtMatmulDesc_t) {
  return CUBLAS_STATUS_SUCCESS;
}
inline cublasStatus_t cublasLtMatmulDescSetAttribute(cublasLtMatmulDesc_t d,
                                                     cublasLtMatmulDescAttributes_t a,
                                                     const void* buf, size_t size) {
  switch (a) {
    case CUBLASLT_MATMUL_DESC_TRANSA:
    case CUBLASLT_MATMUL_DESC_TRANSB:
      if (size != sizeof(int32_t)) return CUBLAS_STATUS_INVALID_VALUE;
      std::memcpy(a == CUBLASLT_MATMUL_DESC_TRANSA ? &d->trans_a : &d->trans_b, buf, size);
      return CUBLAS_STATUS_SUCCESS;
    case CUBLASLT_MATMUL_DESC_EPILOGUE:
      if (size != sizeof(uint32_t)) return CUBLAS_STATUS_INVALID_VALUE;
      std::memcpy(&d->epilogue, buf, size);
      return CUBLAS_STATUS_SUCCESS;
    case CUBLASLT_MATMUL_DESC_BIAS_POINTER:
      if (size != sizeof(void*)) return CUBLAS_STATUS_INVALID_VALUE;
      std::memcpy(&d->bias, buf, size);
      return CUBLAS_STATUS_SUCCESS;
  }
  return CUBLAS_STATUS_INVALID_VALUE;
}
inline cublasStatus_t cublasLtMatrixLayoutCreate(cublasLtMatrixLayout_t* l, cudaDataType t,
                                                 uint64_t rows, uint64_t cols, int64_t ld) {
  if (ld < int64_t(rows) || ld < 1) return CUBLAS_STATUS_INVALID_VALUE;
  *l = eqf_emu::keep(eqf_lt_layout{t, rows, cols, ld});
  return CUBLAS_STATUS_SUCCESS;
}
inline cublasStatus_t cublasLtMatrixLayoutDestroy(cublasLtMatrixLayout_t) {
  return CUBLAS_STATUS_SUCCESS;
}
inline cublasStatus_t cublasLtMatrixLayoutSetAttribute(cublasLtMatrixLayout_t l,
                                                       cublasLtMatrixLayoutAttribute_t a,
                                                       const void* buf, size_t size) {
  if (a == CUBLASLT_MATRIX_LAYOUT_BATCH_COUNT && size == sizeof(int32_t)) {
    std::memcpy(&l->batch, buf, size);
    return CUBLAS_STATUS_SUCCESS;
  }
  if (a == CUBLASLT_MATRIX_LAYOUT_STRIDED_BATCH_OFFSET && size == sizeof(int64_t)) {
    std::memcpy(&l->stride, buf, size);
    return CUBLAS_STATUS_SUCCESS;
  }
  return CUBLAS_STATUS_INVALID_VALUE;
}
inline cublasStatus_t cublasLtMatmulPreferenceCreate(cublasLtMatmulPreference_t* p) {
  *p = eqf_emu::keep(eqf_lt_preference{});
  return CUBLAS_STATUS_SUCCESS;
}
inline cublasStatus_t cublasLtMatmulPreferenceDestroy(cublasLtMatmulPreference_t) {
  return CUBLAS_STATUS_SUCCESS;
}
inline cublasStatus_t cublasLtMatmulPreferenceSetAttribute(cublasLtMatmulPreference_t p,
                                                           cublasLtMatmulPreferenceAttributes_t a,
                                                           const void* buf, size_t size) {
  if (a == CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES && size == sizeof(uint64_t)) {
    std::memcpy(&p->workspace, buf, size);
    return CUBLAS_STATUS_SUCCESS;
  }
  if (a >= CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_A_BYTES &&
      a <= CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_D_BYTES && size == sizeof(uint32_t)) {
    std::memcpy(&p->alignment[a - CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_A_BYTES], buf, size);
    return CUBLAS_STATUS_SUCCESS;
  }
  return CUBLAS_STATUS_INVALID_VALUE;
}

namespace eqf_emu {
// Whether the layouts agree with the operation: op(A) m x k, op(B) k x n, C and D m x n, every
// batch count the same, and a bias pointer where the epilogue adds one.
inline bool lt_valid(cublasLtMatmulDesc_t op, cublasLtMatrixLayout_t a, cublasLtMatrixLayout_t b,
                     cublasLtMatrixLayout_t c, cublasLtMatrixLayout_t d) {
  const uint64_t m = d->rows, n = d->cols;
  const uint64_t k = op->trans_a == CUBLAS_OP_N ? a->cols : a->rows;
  const bool ok_a = (op->trans_a == CUBLAS_OP_N ? a->rows : a->cols) == m;
  const bool ok_b =
      op->trans_b == CUBLAS_OP_N ? b->rows == k && b->cols == n : b->cols == k && b->rows == n;
  const bool ok_c = c->rows == m && c->cols == n && c->batch == d->batch;
  const bool bias =
      op->epilogue == CUBLASLT_EPILOGUE_BIAS || op->epilogue == CUBLASLT_EPILOGUE_RELU_BIAS;
  const bool ok_epilogue =
      op->epilogue == CUBLASLT_EPILOGUE_DEFAULT || op->epilogue == CUBLASLT_EPILOGUE_RELU || bias;
  return ok_a && ok_b && ok_c && a->batch == d->batch && b->batch == d->batch && ok_epilogue &&
         op->compute == CUBLAS_COMPUTE_32F && op->scale == CUDA_R_32F;
}
}  // namespace eqf_emu

inline cublasStatus_t cublasLtMatmulAlgoGetHeuristic(
    cublasLtHandle_t, cublasLtMatmulDesc_t op, cublasLtMatrixLayout_t a, cublasLtMatrixLayout_t b,
    cublasLtMatrixLayout_t c, cublasLtMatrixLayout_t d, cublasLtMatmulPreference_t pref,
    int requested, cublasLtMatmulHeuristicResult_t* results, int* returned) {
  *returned = 0;
  const char* none = std::getenv("EQF_EMULATOR_CUBLASLT_NONE");
  if (!eqf_emu::lt_valid(op, a, b, c, d)) return CUBLAS_STATUS_INVALID_VALUE;
  if ((none && none[0] == '1') || requested < 1) return CUBLAS_STATUS_SUCCESS;
  std::memset(&results[0], 0, sizeof results[0]);
  // The algorithm needs the alignments the preference promised (a real one may fault or fail
  // on pointers less aligned), which cublasLtMatmul checks.
  results[0].algo.data[0] = 1;
  for (int q = 0; q < 4; ++q) results[0].algo.data[1 + q] = pref ? pref->alignment[q] : 256;
  *returned = 1;
  return CUBLAS_STATUS_SUCCESS;
}

inline cublasStatus_t cublasLtMatmul(cublasLtHandle_t, cublasLtMatmulDesc_t op, const void* alpha,
                                     const void* a, cublasLtMatrixLayout_t ad, const void* b,
                                     cublasLtMatrixLayout_t bd, const void* beta, const void* c,
                                     cublasLtMatrixLayout_t cd, void* d, cublasLtMatrixLayout_t dd,
                                     const cublasLtMatmulAlgo_t* algo, void*, size_t,
                                     cudaStream_t) {
  if (!eqf_emu::lt_valid(op, ad, bd, cd, dd) || !algo || algo->data[0] != 1)
    return CUBLAS_STATUS_INVALID_VALUE;
  const void* operands[4] = {a, b, c, d};
  for (int q = 0; q < 4; ++q)
    if (uintptr_t(operands[q]) % algo->data[1 + q] != 0) return CUBLAS_STATUS_INVALID_VALUE;
  const char* fail = std::getenv("EQF_EMULATOR_CUBLASLT_FAIL");
  if (fail && fail[0] == '1') return CUBLAS_STATUS_NOT_SUPPORTED;
  const bool bias =
      op->epilogue == CUBLASLT_EPILOGUE_BIAS || op->epilogue == CUBLASLT_EPILOGUE_RELU_BIAS;
  const bool relu =
      op->epilogue == CUBLASLT_EPILOGUE_RELU || op->epilogue == CUBLASLT_EPILOGUE_RELU_BIAS;
  // In place (C is D) only with D's layout; out of place C must have D's shape and order.
  if ((bias && !op->bias) || (c == d && cd != dd && cd->ld != dd->ld))
    return CUBLAS_STATUS_INVALID_VALUE;
  const float al = *static_cast<const float*>(alpha), be = *static_cast<const float*>(beta);
  const int64_t m = int64_t(dd->rows), n = int64_t(dd->cols);
  const int64_t k = int64_t(op->trans_a == CUBLAS_OP_N ? ad->cols : ad->rows);
  for (int e = 0; e < dd->batch; ++e)
    for (int64_t j = 0; j < n; ++j)
      for (int64_t i = 0; i < m; ++i) {
        double sum = 0;
        for (int64_t q = 0; q < k; ++q) {
          const int64_t ai = op->trans_a == CUBLAS_OP_N ? i + q * ad->ld : q + i * ad->ld;
          const int64_t bi = op->trans_b == CUBLAS_OP_N ? q + j * bd->ld : j + q * bd->ld;
          sum += double(eqf_emu::load(a, ad->type, e * ad->stride + ai)) *
                 double(eqf_emu::load(b, bd->type, e * bd->stride + bi));
        }
        double v = al * sum;
        if (be != 0) v += be * double(eqf_emu::load(c, cd->type, e * cd->stride + i + j * cd->ld));
        if (bias) v += double(eqf_emu::load(op->bias, dd->type, i));
        if (relu && v < 0) v = 0;
        eqf_emu::store(d, dd->type, e * dd->stride + i + j * dd->ld, float(v));
      }
  return CUBLAS_STATUS_SUCCESS;
}
