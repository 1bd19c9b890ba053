#pragma once
// The emulator's cuDNN: the legacy convolution API generated code calls (kCudnnRuntime in
// codegen/printer_runtimes.cpp), as NCHW loops accumulating in double, and the fused
// cudnnConvolutionBiasActivationForward with cuDNN's documented limits (ReLU or the identity,
// the identity only with IMPLICIT_PRECOMP_GEMM). Its heuristics offer two algorithms, with no
// workspace. Each call costs the emulator's clock one tick (a launch two; eqf_cuda_emulator.h),
// so that the run-time choice prefers the fused form where it applies.
#include "eqf_cuda_emulator.h"
#include "eqf_elements.h"

#include <new>

enum cudnnStatus_t {
  CUDNN_STATUS_SUCCESS = 0,
  CUDNN_STATUS_BAD_PARAM = 3,
  CUDNN_STATUS_NOT_SUPPORTED = 9
};
enum cudnnDataType_t { CUDNN_DATA_FLOAT = 0, CUDNN_DATA_HALF = 2, CUDNN_DATA_BFLOAT16 = 9 };
enum cudnnTensorFormat_t { CUDNN_TENSOR_NCHW = 0 };
enum cudnnConvolutionMode_t { CUDNN_CONVOLUTION = 0, CUDNN_CROSS_CORRELATION = 1 };
enum cudnnMathType_t { CUDNN_DEFAULT_MATH = 0, CUDNN_TENSOR_OP_MATH = 1, CUDNN_FMA_MATH = 3 };
enum cudnnConvolutionFwdAlgo_t {
  CUDNN_CONVOLUTION_FWD_ALGO_IMPLICIT_GEMM = 0,
  CUDNN_CONVOLUTION_FWD_ALGO_IMPLICIT_PRECOMP_GEMM = 1
};
enum cudnnActivationMode_t { CUDNN_ACTIVATION_RELU = 1, CUDNN_ACTIVATION_IDENTITY = 5 };
enum cudnnNanPropagation_t { CUDNN_NOT_PROPAGATE_NAN = 0, CUDNN_PROPAGATE_NAN = 1 };

struct eqf_cudnn_tensor {
  cudnnDataType_t type;
  int n, c, h, w;
};
struct eqf_cudnn_conv {
  int pad[2], stride[2], dilation[2], groups = 1;
  cudnnMathType_t math = CUDNN_DEFAULT_MATH;
};
typedef struct eqf_cudnn_handle* cudnnHandle_t;
typedef eqf_cudnn_tensor* cudnnTensorDescriptor_t;
typedef eqf_cudnn_tensor* cudnnFilterDescriptor_t;
typedef eqf_cudnn_conv* cudnnConvolutionDescriptor_t;
struct eqf_cudnn_activation {
  cudnnActivationMode_t mode = CUDNN_ACTIVATION_RELU;
};
typedef eqf_cudnn_activation* cudnnActivationDescriptor_t;
struct cudnnConvolutionFwdAlgoPerf_t {
  cudnnConvolutionFwdAlgo_t algo;
  cudnnStatus_t status;
  float time;
  size_t memory;
  int determinism;
  cudnnMathType_t mathType;
};

inline cudnnStatus_t cudnnCreate(cudnnHandle_t* h) {
  static int handle;
  *h = reinterpret_cast<cudnnHandle_t>(&handle);
  return CUDNN_STATUS_SUCCESS;
}
inline cudnnStatus_t cudnnSetStream(cudnnHandle_t, cudaStream_t) {
  return CUDNN_STATUS_SUCCESS;
}
// Descriptors live in the emulator's heap: generated code keeps them as long as the process.
inline cudnnStatus_t cudnnCreateTensorDescriptor(cudnnTensorDescriptor_t* d) {
  *d = new (eqf_emu::heap.allocate(sizeof(eqf_cudnn_tensor), 16)) eqf_cudnn_tensor();
  return CUDNN_STATUS_SUCCESS;
}
inline cudnnStatus_t cudnnCreateFilterDescriptor(cudnnFilterDescriptor_t* d) {
  return cudnnCreateTensorDescriptor(d);
}
inline cudnnStatus_t cudnnCreateConvolutionDescriptor(cudnnConvolutionDescriptor_t* d) {
  *d = new (eqf_emu::heap.allocate(sizeof(eqf_cudnn_conv), 16)) eqf_cudnn_conv();
  return CUDNN_STATUS_SUCCESS;
}
inline cudnnStatus_t cudnnDestroyTensorDescriptor(cudnnTensorDescriptor_t d) {
  eqf_emu::heap.release(d);
  return CUDNN_STATUS_SUCCESS;
}
inline cudnnStatus_t cudnnDestroyFilterDescriptor(cudnnFilterDescriptor_t d) {
  eqf_emu::heap.release(d);
  return CUDNN_STATUS_SUCCESS;
}
inline cudnnStatus_t cudnnDestroyConvolutionDescriptor(cudnnConvolutionDescriptor_t d) {
  eqf_emu::heap.release(d);
  return CUDNN_STATUS_SUCCESS;
}
inline cudnnStatus_t cudnnCreateActivationDescriptor(cudnnActivationDescriptor_t* d) {
  *d = new (eqf_emu::heap.allocate(sizeof(eqf_cudnn_activation), 16)) eqf_cudnn_activation();
  return CUDNN_STATUS_SUCCESS;
}
inline cudnnStatus_t cudnnDestroyActivationDescriptor(cudnnActivationDescriptor_t d) {
  eqf_emu::heap.release(d);
  return CUDNN_STATUS_SUCCESS;
}
inline cudnnStatus_t cudnnSetActivationDescriptor(cudnnActivationDescriptor_t d,
                                                  cudnnActivationMode_t mode, cudnnNanPropagation_t,
                                                  double) {
  if (mode != CUDNN_ACTIVATION_RELU && mode != CUDNN_ACTIVATION_IDENTITY)
    return CUDNN_STATUS_BAD_PARAM;
  d->mode = mode;
  return CUDNN_STATUS_SUCCESS;
}
inline cudnnStatus_t cudnnSetTensor4dDescriptor(cudnnTensorDescriptor_t d, cudnnTensorFormat_t,
                                                cudnnDataType_t t, int n, int c, int h, int w) {
  *d = {t, n, c, h, w};
  return CUDNN_STATUS_SUCCESS;
}
inline cudnnStatus_t cudnnSetFilter4dDescriptor(cudnnFilterDescriptor_t d, cudnnDataType_t t,
                                                cudnnTensorFormat_t, int k, int c, int h, int w) {
  *d = {t, k, c, h, w};
  return CUDNN_STATUS_SUCCESS;
}
inline cudnnStatus_t cudnnSetConvolution2dDescriptor(cudnnConvolutionDescriptor_t d, int pad_h,
                                                     int pad_w, int u, int v, int dil_h, int dil_w,
                                                     cudnnConvolutionMode_t mode, cudnnDataType_t) {
  if (mode != CUDNN_CROSS_CORRELATION) return CUDNN_STATUS_BAD_PARAM;
  d->pad[0] = pad_h, d->pad[1] = pad_w, d->stride[0] = u, d->stride[1] = v;
  d->dilation[0] = dil_h, d->dilation[1] = dil_w;
  return CUDNN_STATUS_SUCCESS;
}
inline cudnnStatus_t cudnnSetConvolutionGroupCount(cudnnConvolutionDescriptor_t d, int groups) {
  d->groups = groups;
  return CUDNN_STATUS_SUCCESS;
}
inline cudnnStatus_t cudnnSetConvolutionMathType(cudnnConvolutionDescriptor_t d,
                                                 cudnnMathType_t math) {
  d->math = math;
  return CUDNN_STATUS_SUCCESS;
}
inline cudnnStatus_t cudnnGetConvolutionForwardAlgorithm_v7(cudnnHandle_t, cudnnTensorDescriptor_t,
                                                            cudnnFilterDescriptor_t,
                                                            cudnnConvolutionDescriptor_t conv,
                                                            cudnnTensorDescriptor_t, int requested,
                                                            int* returned,
                                                            cudnnConvolutionFwdAlgoPerf_t* perf) {
  *returned = requested < 2 ? requested : 2;
  for (int k = 0; k < *returned; ++k)
    perf[k] = {cudnnConvolutionFwdAlgo_t(k), CUDNN_STATUS_SUCCESS, 1.0f, 0, 1, conv->math};
  return CUDNN_STATUS_SUCCESS;
}

namespace eqf_emu {
inline Element element(cudnnDataType_t t) {
  return t == CUDNN_DATA_FLOAT ? Element::f32 : t == CUDNN_DATA_HALF ? Element::f16 : Element::bf16;
}
}  // namespace eqf_emu

namespace eqf_emu {
// Whether the descriptors make a convolution this emulator computes.
inline bool conv_shapes(cudnnTensorDescriptor_t xd, cudnnFilterDescriptor_t wd,
                        cudnnConvolutionDescriptor_t cd, cudnnTensorDescriptor_t yd) {
  return wd->c == xd->c / cd->groups && yd->c == wd->n && yd->n == xd->n && xd->type == wd->type &&
         yd->type == xd->type;
}
// Calls f(element index of y, conv(x, w) there): NCHW, cross-correlation with groups.
template <typename F>
void convolve(cudnnTensorDescriptor_t xd, const void* x, cudnnFilterDescriptor_t wd, const void* w,
              cudnnConvolutionDescriptor_t cd, cudnnTensorDescriptor_t yd, F f) {
  ++ticks;
  const int groups = cd->groups, cg = xd->c / groups, kg = wd->n / groups;
  const Element type = element(xd->type);
  for (int n = 0; n < yd->n; ++n)
    for (int k = 0; k < yd->c; ++k)
      for (int oh = 0; oh < yd->h; ++oh)
        for (int ow = 0; ow < yd->w; ++ow) {
          const int g = k / kg;
          double sum = 0;
          for (int c = 0; c < cg; ++c)
            for (int r = 0; r < wd->h; ++r)
              for (int s = 0; s < wd->w; ++s) {
                const int ih = oh * cd->stride[0] - cd->pad[0] + r * cd->dilation[0];
                const int iw = ow * cd->stride[1] - cd->pad[1] + s * cd->dilation[1];
                if (ih < 0 || ih >= xd->h || iw < 0 || iw >= xd->w) continue;
                const long long xi =
                    ((long long)(n * xd->c + g * cg + c) * xd->h + ih) * xd->w + iw;
                const long long wi = ((long long)(k * cg + c) * wd->h + r) * wd->w + s;
                sum += double(load(x, type, xi)) * double(load(w, type, wi));
              }
          f(((long long)(n * yd->c + k) * yd->h + oh) * yd->w + ow, k, sum);
        }
}
}  // namespace eqf_emu

// y = alpha conv(x, w) + beta y.
inline cudnnStatus_t cudnnConvolutionForward(cudnnHandle_t, const void* alpha,
                                             cudnnTensorDescriptor_t xd, const void* x,
                                             cudnnFilterDescriptor_t wd, const void* w,
                                             cudnnConvolutionDescriptor_t cd,
                                             cudnnConvolutionFwdAlgo_t, void*, size_t,
                                             const void* beta, cudnnTensorDescriptor_t yd,
                                             void* y) {
  if (!eqf_emu::conv_shapes(xd, wd, cd, yd)) return CUDNN_STATUS_BAD_PARAM;
  const float a = *static_cast<const float*>(alpha), b = *static_cast<const float*>(beta);
  const eqf_emu::Element type = eqf_emu::element(yd->type);
  eqf_emu::convolve(xd, x, wd, w, cd, yd, [&](long long yi, int, double sum) {
    const float old = b == 0 ? 0.0f : eqf_emu::load(y, type, yi);
    eqf_emu::store(y, type, yi, float(a * sum + b * old));
  });
  return CUDNN_STATUS_SUCCESS;
}

// y = act(alpha1 conv(x, w) + alpha2 z + bias), bias one per output channel in y's type.
inline cudnnStatus_t cudnnConvolutionBiasActivationForward(
    cudnnHandle_t, const void* alpha1, cudnnTensorDescriptor_t xd, const void* x,
    cudnnFilterDescriptor_t wd, const void* w, cudnnConvolutionDescriptor_t cd,
    cudnnConvolutionFwdAlgo_t algo, void*, size_t, const void* alpha2, cudnnTensorDescriptor_t zd,
    const void* z, cudnnTensorDescriptor_t bd, const void* bias, cudnnActivationDescriptor_t act,
    cudnnTensorDescriptor_t yd, void* y) {
  if (!eqf_emu::conv_shapes(xd, wd, cd, yd) || zd->type != yd->type || zd->n != yd->n ||
      zd->c != yd->c || zd->h != yd->h || zd->w != yd->w || bd->type != yd->type || bd->n != 1 ||
      bd->c != yd->c || bd->h != 1 || bd->w != 1)
    return CUDNN_STATUS_BAD_PARAM;
  if (act->mode == CUDNN_ACTIVATION_IDENTITY &&
      algo != CUDNN_CONVOLUTION_FWD_ALGO_IMPLICIT_PRECOMP_GEMM)
    return CUDNN_STATUS_NOT_SUPPORTED;
  const float a1 = *static_cast<const float*>(alpha1), a2 = *static_cast<const float*>(alpha2);
  const eqf_emu::Element type = eqf_emu::element(yd->type);
  eqf_emu::convolve(xd, x, wd, w, cd, yd, [&](long long yi, int k, double sum) {
    double v = a1 * sum + double(eqf_emu::load(bias, type, k));
    if (a2 != 0) v += a2 * double(eqf_emu::load(z, type, yi));
    if (act->mode == CUDNN_ACTIVATION_RELU && v < 0) v = 0;
    eqf_emu::store(y, type, yi, float(v));
  });
  return CUDNN_STATUS_SUCCESS;
}
