// Op group "conv": Conv and ConvTranspose over 1-D, 2-D and 3-D inputs with groups, strides,
// dilations, pads and auto_pad. The kernels lower to a blocked GEMM (im2col for Conv, GEMM then
// col2im for ConvTranspose) so that real CNNs run in seconds; the tests check them against a
// direct 7-loop convolution. They compute in the input's precision: float for f32 (and for
// f16/bf16, converted), double for f64, so that the prover's float64 replay of a counterexample
// through Conv is as exact as through the elementwise ops.
#include <tbb/blocked_range.h>
#include <tbb/parallel_for.h>

#include <algorithm>
#include <cstring>
#include <type_traits>

#include "ir/ops/window.h"

namespace eqfuse::ir {

using namespace structured;

namespace {

// ---- GEMM -------------------------------------------------------------------------------

constexpr int64_t kRows = 4, kCols = 8, kDepthBlock = 256, kColBlock = 256;

// C[i, j0:j1] += A[i, k0:k1] * B[k0:k1, j0:j1] for rows i0..i0+kRows (register tile). T is
// float or double; everything below is instantiated for both.
template <typename T>
inline void micro_tile(const T* A, int64_t lda, const T* B, int64_t ldb, T* C, int64_t ldc,
                       int64_t k0, int64_t k1, int64_t j) {
  T acc[kRows][kCols] = {};
  for (int64_t k = k0; k < k1; ++k) {
    const T* b = B + k * ldb + j;
    for (int64_t r = 0; r < kRows; ++r) {
      T a = A[r * lda + k];
      for (int64_t u = 0; u < kCols; ++u) acc[r][u] += a * b[u];
    }
  }
  for (int64_t r = 0; r < kRows; ++r)
    for (int64_t u = 0; u < kCols; ++u) C[r * ldc + j + u] += acc[r][u];
}

// C[M, N] += A[M, K] * B[K, N], all row-major and dense, for the columns [j0, j1).
template <typename T>
void gemm_columns(int64_t M, int64_t N, int64_t K, const T* A, const T* B, T* C, int64_t j0,
                  int64_t j1) {
  for (int64_t k0 = 0; k0 < K; k0 += kDepthBlock) {
    int64_t k1 = std::min(K, k0 + kDepthBlock);
    int64_t i = 0;
    for (; i + kRows <= M; i += kRows) {
      int64_t j = j0;
      for (; j + kCols <= j1; j += kCols) micro_tile(A + i * K, K, B, N, C + i * N, N, k0, k1, j);
      for (int64_t r = i; r < i + kRows; ++r)
        for (int64_t k = k0; k < k1; ++k) {
          T a = A[r * K + k];
          for (int64_t jj = j; jj < j1; ++jj) C[r * N + jj] += a * B[k * N + jj];
        }
    }
    for (; i < M; ++i)
      for (int64_t k = k0; k < k1; ++k) {
        T a = A[i * K + k];
        const T* b = B + k * N;
        T* c = C + i * N;
        for (int64_t jj = j0; jj < j1; ++jj) c[jj] += a * b[jj];
      }
  }
}

// C[M, N] += A[M, K] * B[K, N]; tiles of 64 rows by kColBlock columns run in parallel (they
// write disjoint parts of C), so small spatial outputs with many channels still spread out.
template <typename T>
void gemm(int64_t M, int64_t N, int64_t K, const T* A, const T* B, T* C) {
  constexpr int64_t kRowBlock = 64;
  int64_t col_blocks = (N + kColBlock - 1) / kColBlock,
          row_blocks = (M + kRowBlock - 1) / kRowBlock;
  if (M * N * K < (int64_t(1) << 18) || col_blocks * row_blocks == 1) {
    gemm_columns(M, N, K, A, B, C, 0, N);
    return;
  }
  tbb::parallel_for(tbb::blocked_range<int64_t>(0, row_blocks * col_blocks),
                    [&](const tbb::blocked_range<int64_t>& r) {
                      for (int64_t t = r.begin(); t < r.end(); ++t) {
                        int64_t i0 = (t / col_blocks) * kRowBlock, b = t % col_blocks;
                        gemm_columns(std::min(kRowBlock, M - i0), N, K, A + i0 * K, B, C + i0 * N,
                                     b * kColBlock, std::min(N, (b + 1) * kColBlock));
                      }
                    });
}

// ---- geometry ---------------------------------------------------------------------------

// col[(c*K + kidx), p] = x[c, window(p, kidx)] (zero in padding).
template <typename T>
void im2col(const T* x, int64_t channels, const Window3& g, T* col) {
  const int64_t P = g.out[0] * g.out[1] * g.out[2];
  int64_t row = 0;
  for (int64_t c = 0; c < channels; ++c) {
    const T* xc = x + c * g.in[0] * g.in[1] * g.in[2];
    for (int64_t ka = 0; ka < g.k[0]; ++ka)
      for (int64_t kb = 0; kb < g.k[1]; ++kb)
        for (int64_t kc = 0; kc < g.k[2]; ++kc, ++row) {
          T* dst = col + row * P;
          for (int64_t oa = 0; oa < g.out[0]; ++oa) {
            int64_t ia = oa * g.s[0] - g.p[0] + ka * g.d[0];
            for (int64_t ob = 0; ob < g.out[1]; ++ob, dst += g.out[2]) {
              int64_t ib = ob * g.s[1] - g.p[1] + kb * g.d[1];
              if (ia < 0 || ia >= g.in[0] || ib < 0 || ib >= g.in[1]) {
                std::fill(dst, dst + g.out[2], T(0));
                continue;
              }
              const T* src = xc + (ia * g.in[1] + ib) * g.in[2];
              int64_t base = -g.p[2] + kc * g.d[2];
              for (int64_t oc = 0; oc < g.out[2]; ++oc) {
                int64_t ic = base + oc * g.s[2];
                dst[oc] = (ic >= 0 && ic < g.in[2]) ? src[ic] : T(0);
              }
            }
          }
        }
  }
}

// The inverse scatter: y[c, window(p, kidx)] += col[(c*K + kidx), p] (y has g.out dims; the
// window walks the input positions g.in of ConvTranspose).
template <typename T>
void col2im(const T* col, int64_t channels, const Window3& g, T* y) {
  const int64_t P = g.in[0] * g.in[1] * g.in[2];
  int64_t row = 0;
  for (int64_t c = 0; c < channels; ++c) {
    T* yc = y + c * g.out[0] * g.out[1] * g.out[2];
    for (int64_t ka = 0; ka < g.k[0]; ++ka)
      for (int64_t kb = 0; kb < g.k[1]; ++kb)
        for (int64_t kc = 0; kc < g.k[2]; ++kc, ++row) {
          const T* src = col + row * P;
          for (int64_t ia = 0; ia < g.in[0]; ++ia) {
            int64_t oa = ia * g.s[0] - g.p[0] + ka * g.d[0];
            for (int64_t ib = 0; ib < g.in[1]; ++ib, src += g.in[2]) {
              int64_t ob = ib * g.s[1] - g.p[1] + kb * g.d[1];
              if (oa < 0 || oa >= g.out[0] || ob < 0 || ob >= g.out[1]) continue;
              T* dst = yc + (oa * g.out[1] + ob) * g.out[2];
              for (int64_t ic = 0; ic < g.in[2]; ++ic) {
                int64_t oc = ic * g.s[2] - g.p[2] + kc * g.d[2];
                if (oc >= 0 && oc < g.out[2]) dst[oc] += src[ic];
              }
            }
          }
        }
  }
}

template <typename T>
constexpr DType dtype_of() {
  return std::is_same_v<T, double> ? DType::f64 : DType::f32;
}

// Runs compute(std::type_identity<T>{}, inputs) in the precision of input 0: T = double for f64,
// float for f32, and float for f16/bf16 (inputs converted to f32, the result converted back).
// Inputs of another dtype than T are converted to it.
template <typename F>
std::vector<Tensor> in_floating(const OpContext& ctx, F compute) {
  DType t = value_of(ctx, 0).dtype();
  if (!is_floating(t)) unsupported(ctx, "needs a floating-point input");
  auto run = [&]<typename T>(std::type_identity<T> tag) {
    std::vector<Tensor> converted;
    converted.reserve(ctx.num_inputs());  // pointers into it are kept
    std::vector<const Tensor*> in;
    for (size_t i = 0; i < ctx.num_inputs(); ++i) {
      const Tensor* v = ctx.has_input(i) ? &value_of(ctx, i) : nullptr;
      if (v && v->dtype() != dtype_of<T>()) {
        converted.push_back(v->cast(dtype_of<T>()));
        v = &converted.back();
      }
      in.push_back(v);
    }
    Tensor out = compute(tag, in);
    if (t != dtype_of<T>()) out = out.cast(t);
    return std::vector<Tensor>{std::move(out)};
  };
  return t == DType::f64 ? run(std::type_identity<double>{}) : run(std::type_identity<float>{});
}

std::vector<int64_t> kernel_dims(const OpContext& ctx, const Shape& w) {
  if (ctx.has_attr("kernel_shape")) return ctx.attr_ints("kernel_shape");
  if (!w.has_rank() || w.rank() < 3) ctx.fail("weights must have rank >= 3");
  std::vector<int64_t> k;
  for (size_t i = 2; i < w.rank(); ++i) {
    if (!w[i].is_static()) ctx.fail("weights need static spatial dims");
    k.push_back(w[i].value());
  }
  return k;
}

std::vector<AttrSpec> conv_attrs() {
  return {{"auto_pad", AttrKind::String, AttrValue(std::string("NOTSET"))},
          {"dilations", AttrKind::Ints, std::nullopt},
          {"group", AttrKind::Int, AttrValue(int64_t{1})},
          {"kernel_shape", AttrKind::Ints, std::nullopt},
          {"pads", AttrKind::Ints, std::nullopt},
          {"strides", AttrKind::Ints, std::nullopt}};
}

OpWork conv_work(const OpContext& ctx, const std::vector<TensorType>& outs, bool transpose) {
  OpWork w;
  for (size_t i = 0; i < ctx.num_inputs(); ++i)
    if (ctx.has_input(i)) w.bytes_read += type_bytes(ctx.input_type(i));
  w.bytes_written = type_bytes(outs[0]);
  // Each multiply-add pairs one input element with one weight element: for Conv, every output
  // element takes (C/group)*prod(kernel) of them; for ConvTranspose every input element does
  // (M/group)*prod(kernel).
  const Shape& ws = ctx.input_type(1).shape;
  double lead = ws.has_rank() && ws.rank() > 0 && ws[0].is_static() ? double(ws[0].value()) : 1;
  double per = type_numel(ctx.input_type(1)) / std::max(1.0, lead);
  double macs = transpose ? type_numel(ctx.input_type(0)) * per : type_numel(outs[0]) * per;
  w.flops = 2 * macs + (ctx.has_input(2) ? type_numel(outs[0]) : 0);
  return w;
}

// ---- Conv -------------------------------------------------------------------------------

// Conv on inputs already in T: im2col (skipped for a pointwise kernel), then a GEMM per group.
template <typename T>
Tensor conv_forward(const OpContext& ctx, const std::vector<const Tensor*>& in) {
  const Tensor& x = *in[0];
  const Tensor& w = *in[1];
  const Tensor* b = in.size() > 2 ? in[2] : nullptr;
  int64_t group = ctx.attr_int("group");
  int64_t N = x.dims()[0], C = x.dims()[1], M = w.dims()[0], Cg = C / group, Mg = M / group;
  if (x.rank() < 3 || x.rank() > 5) unsupported(ctx, "only 1-D to 3-D convolutions run");
  if (w.dims()[1] * group != C || M % group != 0) ctx.fail("channels do not match group");
  std::vector<int64_t> in_sp(x.dims().begin() + 2, x.dims().end());
  std::vector<Dim> sp(in_sp.begin(), in_sp.end());
  std::vector<int64_t> ksz(w.dims().begin() + 2, w.dims().end());
  auto axes = window_axes(ctx, sp, ksz, false);
  auto out_sp = window_out_dims(axes);
  Window3 g = to_window3(in_sp, out_sp, axes);
  int64_t K = product(ksz), P = product(out_sp), X = product(in_sp);
  std::vector<int64_t> out_dims = {N, M};
  out_dims.insert(out_dims.end(), out_sp.begin(), out_sp.end());
  Tensor y(dtype_of<T>(), out_dims);
  const T* xp = x.data<T>().data();
  const T* wp = w.data<T>().data();
  T* yp = y.data<T>().data();
  bool pointwise = K == 1 && g.s[0] == 1 && g.s[1] == 1 && g.s[2] == 1 && g.p[0] == 0 &&
                   g.p[1] == 0 && g.p[2] == 0 && P == X;
  std::vector<T> col(pointwise ? 0 : size_t(Cg * K * P));
  for (int64_t n = 0; n < N; ++n)
    for (int64_t gi = 0; gi < group; ++gi) {
      const T* xg = xp + (n * C + gi * Cg) * X;
      const T* src = xg;
      if (!pointwise) {
        im2col(xg, Cg, g, col.data());
        src = col.data();
      }
      T* yg = yp + (n * M + gi * Mg) * P;
      if (b) {
        const T* bp = b->data<T>().data();
        for (int64_t m = 0; m < Mg; ++m) std::fill(yg + m * P, yg + (m + 1) * P, bp[gi * Mg + m]);
      }
      gemm(Mg, P, Cg * K, wp + gi * Mg * Cg * K, src, yg);
    }
  return y;
}

void add_conv(OpTableBuilder& table) {
  OpDef d;
  d.name = "Conv";
  d.min_inputs = 2;
  d.max_inputs = 3;
  d.attrs = conv_attrs();
  d.fusion = FusionClass::Contraction;
  d.infer = [](const OpContext& ctx) {
    const TensorType& x = ctx.input_type(0);
    const Shape& w = ctx.input_type(1).shape;
    if (!x.shape.has_rank()) return std::vector<TensorType>{{x.dtype, Shape::unranked()}};
    if (x.shape.rank() < 3) ctx.fail("input must have rank >= 3 (N, C, spatial...)");
    if (w.has_rank() && w.rank() != x.shape.rank()) ctx.fail("weights and input ranks differ");
    int64_t group = ctx.attr_int("group");
    if (group <= 0) ctx.fail("group must be positive");
    if (w.has_rank() && x.shape[1].is_static() && w[1].is_static() &&
        x.shape[1].value() != w[1].value() * group)
      ctx.fail("input has " + x.shape[1].str() + " channels, weights expect " +
               std::to_string(w[1].value() * group));
    if (w.has_rank() && w[0].is_static() && w[0].value() % group != 0)
      ctx.fail("output channels are not divisible by group");
    std::vector<Dim> spatial(x.shape.dims().begin() + 2, x.shape.dims().end());
    auto axes = window_axes(ctx, spatial, kernel_dims(ctx, w), false);
    std::vector<Dim> out = {x.shape[0], w.has_rank() ? w[0] : Dim::unknown()};
    for (const WindowAxis& a : axes) out.push_back(a.out);
    return std::vector<TensorType>{{x.dtype, Shape(out)}};
  };
  d.work = [](const OpContext& ctx, const std::vector<TensorType>& outs) {
    return conv_work(ctx, outs, false);
  };
  d.kernel = [](const OpContext& ctx) {
    return in_floating(
        ctx, [&]<typename T>(std::type_identity<T>, const std::vector<const Tensor*>& in) {
          return conv_forward<T>(ctx, in);
        });
  };
  table.add(std::move(d));
}

// ---- ConvTranspose ----------------------------------------------------------------------

// ConvTranspose on inputs already in T: a GEMM with the transposed weights, then col2im.
template <typename T>
Tensor conv_transpose_forward(const OpContext& ctx, const std::vector<const Tensor*>& in) {
  const Tensor& x = *in[0];
  const Tensor& w = *in[1];
  const Tensor* b = in.size() > 2 ? in[2] : nullptr;
  int64_t group = ctx.attr_int("group");
  if (x.rank() < 3 || x.rank() > 5) unsupported(ctx, "only 1-D to 3-D convolutions run");
  int64_t N = x.dims()[0], C = x.dims()[1], Cg = C / group, Mg = w.dims()[1], M = Mg * group;
  if (w.dims()[0] != C || C % group != 0) ctx.fail("channels do not match group");
  std::vector<int64_t> in_sp(x.dims().begin() + 2, x.dims().end());
  std::vector<int64_t> ksz(w.dims().begin() + 2, w.dims().end());
  auto t = transpose_geometry(ctx, std::vector<Dim>(in_sp.begin(), in_sp.end()), ksz);
  std::vector<int64_t> out_sp;
  for (const Dim& dim : t.out) out_sp.push_back(dim.value());
  Window3 g = to_window3(in_sp, out_sp, t.axes);
  int64_t K = product(ksz), P = product(in_sp), Q = product(out_sp);
  std::vector<int64_t> out_dims = {N, M};
  out_dims.insert(out_dims.end(), out_sp.begin(), out_sp.end());
  Tensor y(dtype_of<T>(), out_dims);
  const T* xp = x.data<T>().data();
  const T* wp = w.data<T>().data();
  T* yp = y.data<T>().data();
  // wt[(m*K + k), c] = w[c, m, k] for one group: the GEMM's left operand.
  std::vector<T> wt(size_t(Mg * K * Cg)), col(size_t(Mg * K * P));
  for (int64_t gi = 0; gi < group; ++gi) {
    for (int64_t c = 0; c < Cg; ++c)
      for (int64_t mk = 0; mk < Mg * K; ++mk)
        wt[size_t(mk * Cg + c)] = wp[(gi * Cg + c) * Mg * K + mk];
    for (int64_t n = 0; n < N; ++n) {
      std::fill(col.begin(), col.end(), T(0));
      gemm(Mg * K, P, Cg, wt.data(), xp + (n * C + gi * Cg) * P, col.data());
      col2im(col.data(), Mg, g, yp + (n * M + gi * Mg) * Q);
    }
  }
  if (b) {
    const T* bp = b->data<T>().data();
    for (int64_t n = 0; n < N; ++n)
      for (int64_t m = 0; m < M; ++m)
        for (int64_t q = 0; q < Q; ++q) yp[(n * M + m) * Q + q] += bp[m];
  }
  return y;
}

void add_conv_transpose(OpTableBuilder& table) {
  OpDef d;
  d.name = "ConvTranspose";
  d.min_inputs = 2;
  d.max_inputs = 3;
  d.attrs = conv_attrs();
  d.attrs.push_back({"output_padding", AttrKind::Ints, std::nullopt});
  d.attrs.push_back({"output_shape", AttrKind::Ints, std::nullopt});
  d.fusion = FusionClass::Contraction;
  d.infer = [](const OpContext& ctx) {
    const TensorType& x = ctx.input_type(0);
    const Shape& w = ctx.input_type(1).shape;
    if (!x.shape.has_rank()) return std::vector<TensorType>{{x.dtype, Shape::unranked()}};
    if (x.shape.rank() < 3) ctx.fail("input must have rank >= 3 (N, C, spatial...)");
    int64_t group = ctx.attr_int("group");
    if (group <= 0) ctx.fail("group must be positive");
    if (w.has_rank() && x.shape[1].is_static() && w[0].is_static() && x.shape[1] != w[0])
      ctx.fail("input has " + x.shape[1].str() + " channels, weights expect " + w[0].str());
    std::vector<Dim> spatial(x.shape.dims().begin() + 2, x.shape.dims().end());
    auto t = transpose_geometry(ctx, spatial, kernel_dims(ctx, w));
    Dim m = w.has_rank() && w[1].is_static() ? Dim(w[1].value() * group) : Dim::unknown();
    std::vector<Dim> out = {x.shape[0], m};
    out.insert(out.end(), t.out.begin(), t.out.end());
    return std::vector<TensorType>{{x.dtype, Shape(out)}};
  };
  d.work = [](const OpContext& ctx, const std::vector<TensorType>& outs) {
    return conv_work(ctx, outs, true);
  };
  d.kernel = [](const OpContext& ctx) {
    return in_floating(
        ctx, [&]<typename T>(std::type_identity<T>, const std::vector<const Tensor*>& in) {
          return conv_transpose_forward<T>(ctx, in);
        });
  };
  table.add(std::move(d));
}

}  // namespace

void register_conv_ops(OpTableBuilder& table) {
  add_conv(table);
  add_conv_transpose(table);
}

}  // namespace eqfuse::ir
