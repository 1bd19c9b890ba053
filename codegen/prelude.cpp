#include "codegen/prelude.h"

namespace eqfuse::codegen {

std::string prelude_text() {
  return R"eqf(#if defined(__CUDACC_RTC__)
typedef long long int64_t;
typedef int int32_t;
typedef signed char int8_t;
typedef unsigned char uint8_t;
typedef unsigned short uint16_t;
typedef unsigned int uint32_t;
typedef unsigned long long uint64_t;
#define INT64_C(c) c##LL
#define INFINITY __int_as_float(0x7f800000)
#define NAN __int_as_float(0x7fffffff)
#else
#include <math.h>
#include <stdint.h>
#include <string.h>
#endif
#if !defined(__CUDACC__) && defined(__cplusplus) && defined(__GNUC__) && !defined(__clang__) && \
    defined(__x86_64__) && defined(_OPENMP) && defined(__GLIBC__)
// glibc's vector math (libmvec, which libm links): a loop over elements calls these 4, 8 or 16
// lanes at a time (within 4 ulp). math.h declares them so only under -ffast-math; the twin is
// built with -fno-math-errno instead, which vectorizing them needs.
extern "C" {
#define EQF_SIMD _Pragma("omp declare simd notinbranch")
EQF_SIMD float expf(float) noexcept;
EQF_SIMD float logf(float) noexcept;
EQF_SIMD float sinf(float) noexcept;
EQF_SIMD float cosf(float) noexcept;
EQF_SIMD float powf(float, float) noexcept;
#if __GLIBC_PREREQ(2, 35)
EQF_SIMD float tanhf(float) noexcept;
EQF_SIMD float erff(float) noexcept;
EQF_SIMD float tanf(float) noexcept;
EQF_SIMD float asinf(float) noexcept;
EQF_SIMD float acosf(float) noexcept;
EQF_SIMD float atanf(float) noexcept;
EQF_SIMD float sinhf(float) noexcept;
EQF_SIMD float coshf(float) noexcept;
EQF_SIMD float asinhf(float) noexcept;
EQF_SIMD float acoshf(float) noexcept;
EQF_SIMD float atanhf(float) noexcept;
#endif
#undef EQF_SIMD
}
#endif
#if defined(__CUDACC__)
#define EQF_FN __host__ __device__ __forceinline__
#elif defined(__GNUC__)
#define EQF_FN static inline __attribute__((unused))  // a tree uses some of these
#else
#define EQF_FN static inline
#endif
#if defined(__CUDACC__)
#define EQF_MEMBER __host__ __device__ __forceinline__
#else
#define EQF_MEMBER inline
#endif
// A register tile's operand, loaded once and kept in a register for every multiply-add that uses
// it. Without this GCC folds the load into each of those multiply-adds (a memory operand per
// use), and the loads, not the multiply-adds, then bound the C++ twin's matrix and convolution
// tiles.
#if !defined(__CUDACC__) && defined(__GNUC__) && (defined(__x86_64__) || defined(__i386__))
#define EQF_IN_REGISTER(x) __asm__("" : "+v"(x))
#elif !defined(__CUDACC__) && defined(__GNUC__) && defined(__aarch64__)
#define EQF_IN_REGISTER(x) __asm__("" : "+w"(x))
#else
#define EQF_IN_REGISTER(x) (void)0
#endif
#if !defined(__CUDACC__) && defined(__cplusplus) && defined(__GNUC__)
// The vectors of floats a register tile of the C++ twin holds (vector_variants).
typedef float eqf_f32x4 __attribute__((vector_size(16)));
typedef float eqf_f32x8 __attribute__((vector_size(32)));
typedef float eqf_f32x16 __attribute__((vector_size(64)));
// Lanes of vectors a and b (same type) picked by constant indices, 0 to 2 x lanes - 1: `mask` is
// an integer vector type as wide as theirs (GCC's __builtin_shuffle takes one; Clang's
// __builtin_shufflevector takes the indices alone).
#if defined(__clang__)
#define EQF_LANES(a, b, mask, ...) ((void)sizeof(mask), __builtin_shufflevector(a, b, __VA_ARGS__))
#else
#define EQF_LANES(a, b, mask, ...) __builtin_shuffle(a, b, (mask){__VA_ARGS__})
#endif
// The even (odd) lanes of a then b: the elements of a stride-2 row from two contiguous loads.
#define EQF_EVEN_LANES 1
#if defined(__clang__)
#define EQF_SHUFFLE(a, b, lanes, ...) __builtin_shufflevector(a, b, __VA_ARGS__)
#else
#define EQF_SHUFFLE(a, b, lanes, ...) \
  __builtin_shuffle(a, b, (int32_t __attribute__((vector_size(lanes * 4)))){__VA_ARGS__})
#endif
EQF_FN eqf_f32x4 eqf_even_lanes(eqf_f32x4 a, eqf_f32x4 b) {
  return EQF_SHUFFLE(a, b, 4, 0, 2, 4, 6);
}
EQF_FN eqf_f32x4 eqf_odd_lanes(eqf_f32x4 a, eqf_f32x4 b) {
  return EQF_SHUFFLE(a, b, 4, 1, 3, 5, 7);
}
#if defined(__AVX__)  // wider vectors only where the target's registers hold them (ABI)
EQF_FN eqf_f32x8 eqf_even_lanes(eqf_f32x8 a, eqf_f32x8 b) {
  return EQF_SHUFFLE(a, b, 8, 0, 2, 4, 6, 8, 10, 12, 14);
}
EQF_FN eqf_f32x8 eqf_odd_lanes(eqf_f32x8 a, eqf_f32x8 b) {
  return EQF_SHUFFLE(a, b, 8, 1, 3, 5, 7, 9, 11, 13, 15);
}
#endif
#if defined(__AVX512F__)
EQF_FN eqf_f32x16 eqf_even_lanes(eqf_f32x16 a, eqf_f32x16 b) {
  return EQF_SHUFFLE(a, b, 16, 0, 2, 4, 6, 8, 10, 12, 14, 16, 18, 20, 22, 24, 26, 28, 30);
}
EQF_FN eqf_f32x16 eqf_odd_lanes(eqf_f32x16 a, eqf_f32x16 b) {
  return EQF_SHUFFLE(a, b, 16, 1, 3, 5, 7, 9, 11, 13, 15, 17, 19, 21, 23, 25, 27, 29, 31);
}
#endif
#undef EQF_SHUFFLE
#endif
// A register tile's vector from a row of n floats: lane u is row[start + u] where
// 0 <= start + u < n and u < limit, else 0, and no other address is read (the masked loads of
// AVX-512 and AVX). A convolution's edge tile loads so where EQF_MASKED_LOADS is defined, and
// element by element elsewhere.
#if !defined(__CUDACC__) && defined(__cplusplus) && \
    (defined(__AVX512F__) && defined(__AVX512VL__) || defined(__AVX__) && !defined(__AVX512F__))
#include <immintrin.h>
#define EQF_MASKED_LOADS 1
// The lanes [lo, hi) a load of `lanes` from `start` keeps (empty where hi <= lo).
EQF_FN void eqf_lane_range(int64_t lanes, int64_t start, int64_t n, int64_t limit, int64_t* lo,
                           int64_t* hi) {
  *lo = start < 0 ? -start : 0;
  *hi = lanes;
  if (n - start < *hi) *hi = n - start;
  if (limit < *hi) *hi = limit;
}
EQF_FN const float* eqf_lane_address(const float* row, int64_t start) {
  return (const float*)((uintptr_t)row + (uintptr_t)start * sizeof(float));
}
#if defined(__AVX512F__)
EQF_FN __mmask16 eqf_lane_mask(int64_t lanes, int64_t start, int64_t n, int64_t limit) {
  int64_t lo, hi;
  eqf_lane_range(lanes, start, n, limit, &lo, &hi);
  return hi > lo ? (__mmask16)(((1u << hi) - 1u) & ~((1u << lo) - 1u)) : (__mmask16)0;
}
EQF_FN void eqf_load_lanes(eqf_f32x16& x, const float* row, int64_t start, int64_t n,
                           int64_t limit) {
  x = (eqf_f32x16)_mm512_maskz_loadu_ps(eqf_lane_mask(16, start, n, limit),
                                        eqf_lane_address(row, start));
}
EQF_FN void eqf_load_lanes(eqf_f32x8& x, const float* row, int64_t start, int64_t n,
                           int64_t limit) {
  x = (eqf_f32x8)_mm256_maskz_loadu_ps((__mmask8)eqf_lane_mask(8, start, n, limit),
                                       eqf_lane_address(row, start));
}
#else
EQF_FN void eqf_load_lanes(eqf_f32x8& x, const float* row, int64_t start, int64_t n,
                           int64_t limit) {
  typedef int32_t i32x8 __attribute__((vector_size(32)));
  int64_t lo, hi;
  eqf_lane_range(8, start, n, limit, &lo, &hi);
  const i32x8 lane = {0, 1, 2, 3, 4, 5, 6, 7};
  const i32x8 keep = (lane >= (int32_t)(lo < 8 ? lo : 8)) & (lane < (int32_t)(hi > 0 ? hi : 0));
  x = (eqf_f32x8)_mm256_maskload_ps(eqf_lane_address(row, start), (__m256i)keep);
}
#endif
#endif

// f16 and bf16 in memory: 16 bits, converted to float on load and rounded to nearest even on
// store (the interpreter's conversions, ir/dtype.h, bit for bit); arithmetic is in float.
EQF_FN uint32_t eqf_float_bits(float f) {
#if defined(__CUDA_ARCH__)
  return __float_as_uint(f);
#else
  uint32_t u;
  memcpy(&u, &f, 4);
  return u;
#endif
}
EQF_FN float eqf_bits_float(uint32_t u) {
#if defined(__CUDA_ARCH__)
  return __uint_as_float(u);
#else
  float f;
  memcpy(&f, &u, 4);
  return f;
#endif
}
EQF_FN uint16_t eqf_float_to_bf16(float f) {
  uint32_t u = eqf_float_bits(f);
  if ((u & 0x7fffffffu) > 0x7f800000u) return (uint16_t)((u >> 16) | 0x40u);
  u += 0x7fffu + ((u >> 16) & 1u);
  return (uint16_t)(u >> 16);
}
EQF_FN float eqf_f16_to_float(uint16_t h) {
  const uint32_t sign = (uint32_t)(h & 0x8000u) << 16, e = (h >> 10) & 0x1fu, m = h & 0x3ffu;
  if (e == 0) {
    const float v = (float)m * 5.9604644775390625e-8f;  // m * 2^-24, exact
    return sign ? -v : v;
  }
  if (e == 31) return eqf_bits_float(sign | 0x7f800000u | (m << 13));
  return eqf_bits_float(sign | ((e + 112u) << 23) | (m << 13));
}
EQF_FN uint16_t eqf_float_to_f16(float f) {
  const uint32_t u = eqf_float_bits(f);
  const uint16_t sign = (uint16_t)((u >> 16) & 0x8000u);
  uint32_t a = u & 0x7fffffffu;
  if (a >= 0x7f800000u) return (uint16_t)(sign | 0x7c00u | (a > 0x7f800000u ? 0x200u : 0u));
  if (a >= 0x477ff000u) return (uint16_t)(sign | 0x7c00u);  // overflows to infinity
  if (a < 0x38800000u)  // a subnormal half or zero: round a * 2^24 to nearest even
    return (uint16_t)(sign | (uint16_t)rintf(eqf_bits_float(a) * 16777216.0f));
  a += ((a >> 13) & 1u) + 0xfffu;
  return (uint16_t)(sign | ((a - 0x38000000u) >> 13));
}
struct eqf_bf16 {
  uint16_t bits;
  eqf_bf16() = default;
  EQF_MEMBER eqf_bf16(float f) : bits(eqf_float_to_bf16(f)) {}
  EQF_MEMBER operator float() const { return eqf_bits_float((uint32_t)bits << 16); }
};
struct eqf_f16 {
  uint16_t bits;
  eqf_f16() = default;
  EQF_MEMBER eqf_f16(float f) : bits(eqf_float_to_f16(f)) {}
  EQF_MEMBER operator float() const { return eqf_f16_to_float(bits); }
};
#if defined(__CUDACC__)
// Four 16-bit elements, which a CUDA pointwise group loads or stores in one 8-byte access.
struct __align__(8) eqf_bf16x4 {
  eqf_bf16 v[4];
};
struct __align__(8) eqf_f16x4 {
  eqf_f16 v[4];
};
#endif

// Index arithmetic: r % d, and r becomes r / d (r >= 0, d > 0), as an element's linear index
// splits into its coordinates. In 32 bits wherever both fit, as they do in every tensor under
// 2^32 elements: a 64-bit division, even by a constant, costs a GPU several times a 32-bit one,
// and a build with a run-time batch cannot prove an index that small as one specialized can.
EQF_FN int64_t eqf_divmod(int64_t* r, int64_t d) {
  if ((((uint64_t)*r | (uint64_t)d) >> 32) == 0) {
    const uint32_t x = (uint32_t)*r, y = (uint32_t)d, q = x / y;
    *r = (int64_t)q;
    return (int64_t)(x - q * y);
  }
  const int64_t q = *r / d, m = *r - q * d;
  *r = q;
  return m;
}

// Scalar ops (ir/scalar_expr.h), for float, double and int64_t.
#define EQF_UNARY(name, f32, f64)                                       \
  EQF_FN float eqf_##name(float x) { return f32(x); }                   \
  EQF_FN double eqf_##name(double x) { return f64(x); }                 \
  EQF_FN int64_t eqf_##name(int64_t x) { return (int64_t)f64((double)x); }
EQF_UNARY(exp, expf, exp)
EQF_UNARY(log, logf, log)
EQF_UNARY(sqrt, sqrtf, sqrt)
EQF_UNARY(tanh, tanhf, tanh)
EQF_UNARY(erf, erff, erf)
EQF_UNARY(sin, sinf, sin)
EQF_UNARY(cos, cosf, cos)
EQF_UNARY(tan, tanf, tan)
EQF_UNARY(asin, asinf, asin)
EQF_UNARY(acos, acosf, acos)
EQF_UNARY(atan, atanf, atan)
EQF_UNARY(sinh, sinhf, sinh)
EQF_UNARY(cosh, coshf, cosh)
EQF_UNARY(asinh, asinhf, asinh)
EQF_UNARY(acosh, acoshf, acosh)
EQF_UNARY(atanh, atanhf, atanh)
EQF_UNARY(floor, floorf, floor)
EQF_UNARY(ceil, ceilf, ceil)
EQF_UNARY(round, rintf, rint)
#undef EQF_UNARY
template <typename T> EQF_FN T eqf_neg(T x) { return -x; }
template <typename T> EQF_FN T eqf_abs(T x) { return x < T(0) ? -x : x; }
template <typename T> EQF_FN T eqf_recip(T x) { return T(1) / x; }
template <typename T> EQF_FN T eqf_sign(T x) { return T((x > T(0)) - (x < T(0))); }
template <typename T> EQF_FN T eqf_not(T x) { return T(x == T(0)); }
template <typename T> EQF_FN T eqf_isnan(T x) { return T(x != x); }
template <typename T> EQF_FN T eqf_isinf(T x) { return T(x - x != x - x && x == x); }
// ArgMax/ArgMin: whether element v at index a takes the place of `best` at index `at` (at < 0:
// none yet). The extreme wins, a NaN over any number (numpy's rule, ONNX's reference); between
// equal values or two NaNs, the first index, or the last with select_last_index.
template <typename T>
EQF_FN bool eqf_arg_wins(T v, int64_t a, T best, int64_t at, bool is_max, bool last) {
  if (a < 0) return false;
  if (at < 0) return true;
  const bool v_nan = v != v, best_nan = best != best;
  if (v_nan != best_nan) return v_nan;
  if (v_nan || v == best) return last ? a > at : a < at;
  return is_max ? v > best : v < best;
}
// Resize: the input coordinate of output coordinate x along an axis under coordinate
// transformation `mode` (0 half_pixel, 1 half_pixel_symmetric, 2 pytorch_half_pixel,
// 3 align_corners, 4 asymmetric, 5 tf_half_pixel_for_nn, 6 tf_crop_and_resize:
// ir::source_coordinate's formulas), and its nearest input under `round` (0 round_prefer_floor,
// 1 round_prefer_ceil, 2 floor, 3 ceil).
EQF_FN double eqf_resize_source(int mode, double x, double scale, int64_t in, int64_t out,
                                double roi_start, double roi_end) {
  const double length = scale * (double)in;
  switch (mode) {
    case 0: return (x + 0.5) / scale - 0.5;
    case 1: return (double)in / 2 * (1 - (double)out / length) + (x + 0.5) / scale - 0.5;
    case 2: return length > 1 ? (x + 0.5) / scale - 0.5 : 0.0;
    case 3: return length == 1 ? 0.0 : x * (double)(in - 1) / (length - 1);
    case 4: return x / scale;
    case 5: return (x + 0.5) / scale;
    default:
      return length > 1 ? roi_start * (double)(in - 1) +
                              x * (roi_end - roi_start) * (double)(in - 1) / (length - 1)
                        : 0.5 * (roi_start + roi_end) * (double)(in - 1);
  }
}
EQF_FN double eqf_resize_nearest(double x, int round) {
  return round == 0 ? ceil(x - 0.5) : round == 1 ? floor(x + 0.5) : round == 2 ? floor(x) : ceil(x);
}
// Cubic mode: the weight of input element floor(x) - 1 + k (k = 0..3), t = x - floor(x), under
// cubic_coeff_a `a` (ir::cubic_weights).
EQF_FN double eqf_resize_cubic(double t, double a, int k) {
  const double s = k == 0 ? t + 1 : k == 1 ? t : k == 2 ? 1 - t : 2 - t;
  return k == 1 || k == 2 ? ((a + 2) * s - (a + 3)) * s * s + 1
                          : ((a * s - 5 * a) * s + 8 * a) * s - 4 * a;
}
// Pad: the input coordinate that coordinate c (the output's less the front pad) reads along an
// axis of n elements, c itself where it is inside; mode 1 edge, 2 wrap, 3 reflect
// (ir::pad_source's rule).
EQF_FN int64_t eqf_pad_source(int64_t c, int64_t n, int mode) {
  if (c >= 0 && c < n) return c;
  if (mode == 1) return c < 0 ? 0 : n - 1;
  if (mode == 2) return ((c % n) + n) % n;
  if (n == 1) return 0;
  const int64_t period = 2 * (n - 1);
  c = ((c % period) + period) % period;
  return c < n ? c : period - c;
}
template <typename T> EQF_FN T eqf_add(T a, T b) { return a + b; }
template <typename T> EQF_FN T eqf_sub(T a, T b) { return a - b; }
template <typename T> EQF_FN T eqf_mul(T a, T b) { return a * b; }
EQF_FN float eqf_div(float a, float b) { return a / b; }
EQF_FN double eqf_div(double a, double b) { return a / b; }
EQF_FN int64_t eqf_div(int64_t a, int64_t b) { return b == 0 ? 0 : a / b; }
EQF_FN float eqf_pow(float a, float b) { return powf(a, b); }
EQF_FN double eqf_pow(double a, double b) { return pow(a, b); }
EQF_FN int64_t eqf_pow(int64_t a, int64_t b) { return (int64_t)pow((double)a, (double)b); }
template <typename T> EQF_FN T eqf_max(T a, T b) { return a < b ? b : a; }
template <typename T> EQF_FN T eqf_min(T a, T b) { return b < a ? b : a; }
#if defined(_OPENMP) && !defined(__CUDACC__) && !defined(__CUDACC_RTC__)
// A running maximum that vectors may take in any order (an online softmax's): its private
// copies start at -INFINITY, as the maximum itself does, where OpenMP's own `max` may start them
// at the lowest finite value (Clang does), which a block of -INFINITY scores would then return.
#pragma omp declare reduction(eqf_max_float : float : omp_out = eqf_max(omp_out, omp_in)) \
    initializer(omp_priv = -INFINITY)
#endif
EQF_FN float eqf_fmod(float a, float b) { return fmodf(a, b); }
EQF_FN double eqf_fmod(double a, double b) { return fmod(a, b); }
EQF_FN int64_t eqf_fmod(int64_t a, int64_t b) { return b == 0 ? 0 : a % b; }
template <typename T> EQF_FN T eqf_mod(T a, T b) {
  T r = eqf_fmod(a, b);
  return (r != T(0) && ((r < T(0)) != (b < T(0)))) ? r + b : r;
}
template <typename T> EQF_FN T eqf_eq(T a, T b) { return T(a == b); }
template <typename T> EQF_FN T eqf_ne(T a, T b) { return T(a != b); }
template <typename T> EQF_FN T eqf_lt(T a, T b) { return T(a < b); }
template <typename T> EQF_FN T eqf_le(T a, T b) { return T(a <= b); }
template <typename T> EQF_FN T eqf_gt(T a, T b) { return T(a > b); }
template <typename T> EQF_FN T eqf_ge(T a, T b) { return T(a >= b); }
template <typename T> EQF_FN T eqf_and(T a, T b) { return T(a != T(0) && b != T(0)); }
template <typename T> EQF_FN T eqf_or(T a, T b) { return T(a != T(0) || b != T(0)); }
template <typename T> EQF_FN T eqf_xor(T a, T b) { return T((a != T(0)) != (b != T(0))); }
template <typename T> EQF_FN T eqf_select(T c, T a, T b) { return c != T(0) ? a : b; }
// Storing into an integer type: floats truncate toward zero and saturate (ONNX Cast).
template <typename To, typename From> EQF_FN To eqf_convert(From x, To*) { return (To)x; }
EQF_FN int64_t eqf_convert(float x, int64_t*) {
  return x != x ? 0 : x >= 9.2233720e18f ? INT64_C(9223372036854775807)
                    : x <= -9.2233720e18f ? (-INT64_C(9223372036854775807) - 1) : (int64_t)x;
}
template <typename To, typename From> EQF_FN To eqf_store(From x) {
  return eqf_convert(x, (To*)0);
}
#if defined(__CUDACC__)
// Warp-wide combines for row reductions (every lane gets the result).
#define EQF_WARP_COMBINE(name, T, op)                                                  \
  __device__ __forceinline__ T eqf_warp_##name(T v) {                                  \
    for (int o = 16; o > 0; o >>= 1) v = op(v, __shfl_xor_sync(0xffffffffu, v, o)); \
    return v;                                                                          \
  }
// Block-wide combines for rows a whole block of 8 warps takes (every thread gets the result, in
// the same order of operations): each warp's, then the 8 in shared memory. Every thread of the
// block must call them; the second barrier lets the next call reuse the partials.
#define EQF_BLOCK_COMBINE(name, T, op)                       \
  __device__ __forceinline__ T eqf_block_##name(T v) {       \
    __shared__ T part[8];                                    \
    v = eqf_warp_##name(v);                                  \
    if ((threadIdx.x & 31) == 0) part[threadIdx.x >> 5] = v; \
    __syncthreads();                                         \
    v = part[0];                                             \
    for (int w = 1; w < 8; ++w) v = op(v, part[w]);          \
    __syncthreads();                                         \
    return v;                                                \
  }
#define EQF_COMBINES(name, op)          \
  EQF_WARP_COMBINE(name, float, op)     \
  EQF_WARP_COMBINE(name, double, op)    \
  EQF_BLOCK_COMBINE(name, float, op)    \
  EQF_BLOCK_COMBINE(name, double, op)
EQF_COMBINES(sum, eqf_add)
EQF_COMBINES(max, eqf_max)
EQF_COMBINES(min, eqf_min)
EQF_COMBINES(prod, eqf_mul)
#undef EQF_COMBINES
#undef EQF_BLOCK_COMBINE
#undef EQF_WARP_COMBINE
// ArgMax/ArgMin across a warp or a block: each lane holds the extreme of its part of the row and
// its index (at < 0: an empty part), found walking its part in order (eqf_arg_wins).
template <typename T>
__device__ __forceinline__ void eqf_warp_arg(T& best, int64_t& at, bool is_max, bool last) {
  for (int o = 16; o > 0; o >>= 1) {
    const T v = __shfl_xor_sync(0xffffffffu, best, o);
    const int64_t a = (int64_t)__shfl_xor_sync(0xffffffffu, (long long)at, o);
    if (eqf_arg_wins(v, a, best, at, is_max, last)) {
      best = v;
      at = a;
    }
  }
}
template <typename T>
__device__ __forceinline__ void eqf_block_arg(T& best, int64_t& at, bool is_max, bool last) {
  __shared__ T part[8];
  __shared__ int64_t where[8];
  eqf_warp_arg(best, at, is_max, last);
  if ((threadIdx.x & 31) == 0) {
    part[threadIdx.x >> 5] = best;
    where[threadIdx.x >> 5] = at;
  }
  __syncthreads();
  best = part[0];
  at = where[0];
  for (int w = 1; w < 8; ++w)
    if (eqf_arg_wins(part[w], where[w], best, at, is_max, last)) {
      best = part[w];
      at = where[w];
    }
  __syncthreads();
}
#endif
)eqf";
}

}  // namespace eqfuse::codegen
