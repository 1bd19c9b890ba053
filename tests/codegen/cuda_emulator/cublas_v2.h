#pragma once
// The emulator's cuBLAS: the strided-batched GEMMs generated code calls, as column-major loops
// accumulating in double.
#include "eqf_cuda_emulator.h"
#include "eqf_elements.h"

typedef struct eqf_cublas* cublasHandle_t;
enum cublasStatus_t {
  CUBLAS_STATUS_SUCCESS = 0,
  CUBLAS_STATUS_INVALID_VALUE = 7,
  CUBLAS_STATUS_NOT_SUPPORTED = 15,
};
enum cublasOperation_t { CUBLAS_OP_N = 0, CUBLAS_OP_T = 1 };
enum cudaDataType { CUDA_R_32F = 0, CUDA_R_16F = 2, CUDA_R_16BF = 14 };
enum cublasComputeType_t { CUBLAS_COMPUTE_32F = 68 };
enum cublasGemmAlgo_t { CUBLAS_GEMM_DEFAULT = -1 };

inline cublasStatus_t cublasCreate(cublasHandle_t* h) {
  *h = nullptr;
  return CUBLAS_STATUS_SUCCESS;
}
inline cublasStatus_t cublasSetStream(cublasHandle_t, cudaStream_t) {
  return CUBLAS_STATUS_SUCCESS;
}

namespace eqf_emu {
inline Element element(cudaDataType t) {
  return t == CUDA_R_32F ? Element::f32 : t == CUDA_R_16F ? Element::f16 : Element::bf16;
}
inline float load(const void* p, cudaDataType t, long long i) {
  return load(p, element(t), i);
}
inline void store(void* p, cudaDataType t, long long i, float v) {
  store(p, element(t), i, v);
}
// C = alpha op(A) op(B) + beta C, column-major, `batch` times at the given strides.
inline cublasStatus_t gemm(cublasOperation_t ta, cublasOperation_t tb, int m, int n, int k,
                           float alpha, const void* a, cudaDataType at, int lda, long long sa,
                           const void* b, cudaDataType bt, int ldb, long long sb, float beta,
                           void* c, cudaDataType ct, int ldc, long long sc, int batch) {
  for (int e = 0; e < batch; ++e)
    for (int j = 0; j < n; ++j)
      for (int i = 0; i < m; ++i) {
        double sum = 0;
        for (int q = 0; q < k; ++q) {
          long long ai = ta == CUBLAS_OP_N ? i + (long long)q * lda : q + (long long)i * lda;
          long long bi = tb == CUBLAS_OP_N ? q + (long long)j * ldb : j + (long long)q * ldb;
          sum += double(load(a, at, e * sa + ai)) * double(load(b, bt, e * sb + bi));
        }
        const long long ci = e * sc + i + (long long)j * ldc;
        const float old = beta == 0 ? 0.0f : load(c, ct, ci);
        store(c, ct, ci, float(alpha * sum + beta * old));
      }
  return CUBLAS_STATUS_SUCCESS;
}
}  // namespace eqf_emu

inline cublasStatus_t cublasSgemmStridedBatched(cublasHandle_t, cublasOperation_t ta,
                                                cublasOperation_t tb, int m, int n, int k,
                                                const float* alpha, const float* a, int lda,
                                                long long sa, const float* b, int ldb, long long sb,
                                                const float* beta, float* c, int ldc, long long sc,
                                                int batch) {
  return eqf_emu::gemm(ta, tb, m, n, k, *alpha, a, CUDA_R_32F, lda, sa, b, CUDA_R_32F, ldb, sb,
                       *beta, c, CUDA_R_32F, ldc, sc, batch);
}
inline cublasStatus_t cublasGemmStridedBatchedEx(
    cublasHandle_t, cublasOperation_t ta, cublasOperation_t tb, int m, int n, int k,
    const void* alpha, const void* a, cudaDataType at, int lda, long long sa, const void* b,
    cudaDataType bt, int ldb, long long sb, const void* beta, void* c, cudaDataType ct, int ldc,
    long long sc, int batch, cublasComputeType_t, cublasGemmAlgo_t) {
  return eqf_emu::gemm(ta, tb, m, n, k, *static_cast<const float*>(alpha), a, at, lda, sa, b, bt,
                       ldb, sb, *static_cast<const float*>(beta), c, ct, ldc, sc, batch);
}
