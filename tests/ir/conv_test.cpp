// Conv and ConvTranspose (ir/ops/conv.cpp) against a direct loop-nest convolution written here,
// plus hand-worked answers, shape inference (auto_pad, symbolic batch) and errors. The loop nests
// accumulate in double and write the input's dtype, so they are the f64 reference too.
#include <catch2/catch.hpp>
#include <cmath>

#include "single_op.h"

using namespace eqfuse;
using namespace eqfuse::ir;
using namespace eqfuse::test;

namespace {

Tensor random_tensor(std::vector<int64_t> dims, uint32_t seed) {
  Tensor t(DType::f32, std::move(dims));
  uint32_t s = seed * 2654435761u + 1;
  for (int64_t i = 0; i < t.numel(); ++i) {
    s = s * 1664525u + 1013904223u;
    t.set(i, double(s >> 8) / double(1 << 24) - 0.5);
  }
  return t;
}

// Doubles with all 53 mantissa bits in use, so a kernel that rounds through float shows it.
Tensor random_f64(std::vector<int64_t> dims, uint64_t seed) {
  Tensor t(DType::f64, std::move(dims));
  uint64_t s = seed * 0x9E3779B97F4A7C15ull + 1;
  for (int64_t i = 0; i < t.numel(); ++i) {
    s = s * 6364136223846793005ull + 1442695040888963407ull;
    t.set(i, double(s >> 11) / double(uint64_t(1) << 53) - 0.5);
  }
  return t;
}

// Walks all multi-indices of dims.
bool next_index(std::vector<int64_t>& idx, const std::vector<int64_t>& dims) {
  for (size_t a = dims.size(); a-- > 0;) {
    if (++idx[a] < dims[a]) return true;
    idx[a] = 0;
  }
  return false;
}

struct ConvParams {
  std::vector<int64_t> strides, dilations, pads;  // pads: begins then ends
  int64_t group = 1;
};

// y[n, m, o...] = b[m] + sum_{c in group, k...} x[n, c, o*s - p + k*d] * w[m, c, k...]
Tensor naive_conv(const Tensor& x, const Tensor& w, const Tensor* b, const ConvParams& p) {
  size_t r = x.rank() - 2;
  int64_t N = x.dims()[0], C = x.dims()[1], M = w.dims()[0], Cg = C / p.group, Mg = M / p.group;
  std::vector<int64_t> in(x.dims().begin() + 2, x.dims().end()),
      k(w.dims().begin() + 2, w.dims().end()), out(r);
  for (size_t i = 0; i < r; ++i)
    out[i] =
        (in[i] + p.pads[i] + p.pads[r + i] - p.dilations[i] * (k[i] - 1) - 1) / p.strides[i] + 1;
  std::vector<int64_t> yd = {N, M};
  yd.insert(yd.end(), out.begin(), out.end());
  Tensor y(x.dtype(), yd);
  int64_t yi = 0;
  std::vector<int64_t> full(yd.size(), 0);
  do {
    int64_t n = full[0], m = full[1], g = m / Mg;
    double acc = b ? b->get(m) : 0;
    for (int64_t c = 0; c < Cg; ++c) {
      std::vector<int64_t> ki(r, 0);
      do {
        int64_t xoff = n * C + g * Cg + c, woff = m * Cg + c;
        bool inside = true;
        for (size_t i = 0; i < r; ++i) {
          int64_t pos = full[2 + i] * p.strides[i] - p.pads[i] + ki[i] * p.dilations[i];
          if (pos < 0 || pos >= in[i]) inside = false;
          xoff = xoff * in[i] + pos;
          woff = woff * k[i] + ki[i];
        }
        if (inside) acc += x.get(xoff) * w.get(woff);
      } while (next_index(ki, k));
    }
    y.set(yi++, acc);
  } while (next_index(full, yd));
  return y;
}

Attributes conv_attrs(const ConvParams& p) {
  return attrs(
      {{"strides", p.strides}, {"dilations", p.dilations}, {"pads", p.pads}, {"group", p.group}});
}

void check_close(const Tensor& got, const Tensor& want, double tol = 1e-4) {
  REQUIRE(got.dims() == want.dims());
  double worst = 0;
  for (int64_t i = 0; i < got.numel(); ++i)
    worst = std::max(worst, std::abs(got.get(i) - want.get(i)));
  CHECK(worst <= tol);
}

}  // namespace

TEST_CASE("Conv matches the direct loop nest in 1-D, 2-D and 3-D") {
  struct Case {
    std::vector<int64_t> x, w;
    ConvParams p;
    bool bias;
  };
  std::vector<Case> cases = {
      {{1, 3, 9, 9}, {4, 3, 3, 3}, {{1, 1}, {1, 1}, {1, 1, 1, 1}, 1}, true},
      {{2, 4, 10, 7}, {6, 2, 3, 2}, {{2, 1}, {1, 2}, {0, 1, 2, 0}, 2}, true},
      {{1, 8, 6, 6}, {8, 1, 3, 3}, {{2, 2}, {1, 1}, {1, 1, 1, 1}, 8}, false},  // depthwise
      {{1, 5, 4, 4}, {7, 5, 1, 1}, {{1, 1}, {1, 1}, {0, 0, 0, 0}, 1}, true},   // pointwise
      {{1, 3, 11, 13}, {5, 3, 3, 3}, {{1, 1}, {2, 3}, {2, 2, 2, 2}, 1}, false},
      {{2, 3, 20}, {4, 3, 5}, {{3}, {1}, {2, 1}, 1}, true},
      {{1, 2, 5, 6, 4}, {3, 2, 2, 3, 2}, {{1, 2, 1}, {1, 1, 2}, {1, 0, 1, 0, 1, 0}, 1}, true},
      {{1, 64, 14, 14}, {37, 64, 3, 3}, {{1, 1}, {1, 1}, {1, 1, 1, 1}, 1}, true},  // blocked GEMM
  };
  uint32_t seed = 1;
  for (const Case& c : cases) {
    Tensor x = random_tensor(c.x, seed++), w = random_tensor(c.w, seed++);
    Tensor b = random_tensor({c.w[0]}, seed++);
    std::vector<OpInput> in = {x, w};
    if (c.bias) in.push_back(b);
    Tensor got = SingleOp("Conv", in, conv_attrs(c.p)).run()[0];
    check_close(got, naive_conv(x, w, c.bias ? &b : nullptr, c.p));
    CHECK(SingleOp("Conv", in, conv_attrs(c.p)).infer()[0].shape == got.type().shape);
  }
}

TEST_CASE("Conv worked by hand, auto_pad and shape inference") {
  // 3x3 input 1..9, 2x2 kernel of ones, no pad: sums of 2x2 windows.
  Tensor x = f32({1, 1, 3, 3}, {1, 2, 3, 4, 5, 6, 7, 8, 9});
  Tensor w = f32({1, 1, 2, 2}, {1, 1, 1, 1});
  CHECK(run1("Conv", {x, w}).to_doubles() == std::vector<double>{12, 16, 24, 28});
  // SAME_UPPER pads the end: output 3x3, last row/col sees the zero padding.
  Tensor same = run1("Conv", {x, w}, attrs({{"auto_pad", std::string("SAME_UPPER")}}));
  CHECK(same.to_doubles() == std::vector<double>{12, 16, 9, 24, 28, 15, 15, 17, 9});
  Tensor lower = run1("Conv", {x, w}, attrs({{"auto_pad", std::string("SAME_LOWER")}}));
  CHECK(lower.to_doubles() == std::vector<double>{1, 3, 5, 5, 12, 16, 11, 24, 28});
  CHECK(run1("Conv", {x, w},
             attrs({{"auto_pad", std::string("VALID")}, {"strides", std::vector<int64_t>{2, 2}}}))
            .to_doubles() == std::vector<double>{12});
  TensorType batch{DType::f32, Shape({Dim::symbol("N"), 3, 224, 224})};
  SingleOp s(
      "Conv", {batch, Tensor(DType::f32, {64, 3, 7, 7})},
      attrs({{"strides", std::vector<int64_t>{2, 2}}, {"pads", std::vector<int64_t>{3, 3, 3, 3}}}));
  CHECK(s.infer()[0].shape == Shape({Dim::symbol("N"), 64, 112, 112}));
  SingleOp fixed(
      "Conv", {Tensor(DType::f32, {1, 3, 224, 224}), Tensor(DType::f32, {64, 3, 7, 7})},
      attrs({{"strides", std::vector<int64_t>{2, 2}}, {"pads", std::vector<int64_t>{3, 3, 3, 3}}}));
  CHECK(fixed.work().flops == 2.0 * 64 * 112 * 112 * 3 * 7 * 7);
  CHECK(find_op("Conv")->fusion == FusionClass::Contraction);
  CHECK_THROWS(
      SingleOp("Conv", {Tensor(DType::f32, {1, 4, 5, 5}), Tensor(DType::f32, {2, 3, 3, 3})})
          .infer());
  CHECK_THROWS(
      SingleOp("Conv", {Tensor(DType::f32, {1, 3, 2, 2}), Tensor(DType::f32, {2, 3, 3, 3})})
          .infer());
}

TEST_CASE("Conv in f64 keeps the dtype") {
  Tensor x = f32({1, 1, 3, 3}, {1, 2, 3, 4, 5, 6, 7, 8, 9}).cast(DType::f64);
  Tensor w = f32({1, 1, 2, 2}, {1, 1, 1, 1}).cast(DType::f64);
  Tensor y = run1("Conv", {x, w});
  CHECK(y.dtype() == DType::f64);
  CHECK(y.to_doubles() == std::vector<double>{12, 16, 24, 28});
}

TEST_CASE("Conv computes f64 in double and f16 through f32") {
  // The prover replays counterexamples through Conv in float64: a kernel that rounded through
  // float would be off by ~1e-8 here, far above the 1e-12 asked.
  struct Case {
    std::vector<int64_t> x, w;
    ConvParams p;
  };
  std::vector<Case> cases = {
      {{2, 4, 7, 6}, {6, 2, 3, 2}, {{2, 1}, {1, 2}, {0, 1, 2, 0}, 2}},
      {{1, 5, 4, 4}, {7, 5, 1, 1}, {{1, 1}, {1, 1}, {0, 0, 0, 0}, 1}},  // pointwise
      {{1, 3, 12}, {4, 3, 5}, {{3}, {1}, {2, 1}, 1}},
      {{1, 2, 4, 5, 3}, {3, 2, 2, 3, 2}, {{1, 2, 1}, {1, 1, 2}, {1, 0, 1, 0, 1, 0}, 1}},
      {{1, 64, 9, 9}, {37, 64, 3, 3}, {{1, 1}, {1, 1}, {1, 1, 1, 1}, 1}},  // blocked, parallel
  };
  uint64_t seed = 100;
  for (const Case& c : cases) {
    Tensor x = random_f64(c.x, seed++), w = random_f64(c.w, seed++);
    Tensor b = random_f64({c.w[0]}, seed++);
    Tensor got = SingleOp("Conv", {x, w, b}, conv_attrs(c.p)).run()[0];
    CHECK(got.dtype() == DType::f64);
    check_close(got, naive_conv(x, w, &b, c.p), 1e-12);
  }
  // f16 inputs: converted to f32, accumulated there, written back as f16.
  const Case& c = cases[0];
  Tensor x = random_tensor(c.x, 7).cast(DType::f16), w = random_tensor(c.w, 8).cast(DType::f16);
  Tensor got = SingleOp("Conv", {x, w}, conv_attrs(c.p)).run()[0];
  CHECK(got.dtype() == DType::f16);
  check_close(got, naive_conv(x, w, nullptr, c.p), 4e-3);
}

namespace {
// y[n, g*Mg + m, i*s - p + k*d] += x[n, g*Cg + c, i] * w[g*Cg + c, m, k] (then crop), direct.
Tensor naive_conv_transpose(const Tensor& x, const Tensor& w, const Tensor* b,
                            std::vector<int64_t> s, std::vector<int64_t> d,
                            std::vector<int64_t> pads, std::vector<int64_t> outpad, int64_t group) {
  size_t r = x.rank() - 2;
  int64_t N = x.dims()[0], C = x.dims()[1], Mg = w.dims()[1], M = Mg * group, Cg = C / group;
  std::vector<int64_t> in(x.dims().begin() + 2, x.dims().end()),
      k(w.dims().begin() + 2, w.dims().end()), out(r);
  for (size_t i = 0; i < r; ++i)
    out[i] = s[i] * (in[i] - 1) + outpad[i] + (k[i] - 1) * d[i] + 1 - pads[i] - pads[r + i];
  std::vector<int64_t> yd = {N, M};
  yd.insert(yd.end(), out.begin(), out.end());
  Tensor y(x.dtype(), yd);
  std::vector<int64_t> xi(x.rank(), 0);
  do {
    int64_t n = xi[0], c = xi[1], g = c / Cg;
    for (int64_t m = 0; m < Mg; ++m) {
      std::vector<int64_t> ki(r, 0);
      do {
        int64_t yoff = n * M + g * Mg + m, woff = c * Mg + m, xoff = n * C + c;
        bool inside = true;
        for (size_t i = 0; i < r; ++i) {
          int64_t pos = xi[2 + i] * s[i] - pads[i] + ki[i] * d[i];
          if (pos < 0 || pos >= out[i]) inside = false;
          yoff = yoff * out[i] + pos;
          woff = woff * k[i] + ki[i];
          xoff = xoff * in[i] + xi[2 + i];
        }
        if (inside) y.set(yoff, y.get(yoff) + x.get(xoff) * w.get(woff));
      } while (next_index(ki, k));
    }
  } while (next_index(xi, x.dims()));
  if (b)
    for (int64_t i = 0; i < y.numel(); ++i) y.set(i, y.get(i) + b->get((i / product(out)) % M));
  return y;
}
}  // namespace

TEST_CASE("ConvTranspose matches the direct scatter and ONNX's worked example") {
  // ONNX's ConvTranspose example: x = 0..8 (3x3), w = ones 2x(3x3) -> 5x5 per channel.
  Tensor x = iota_f32({1, 1, 3, 3});
  Tensor w(DType::f32, {1, 2, 3, 3});
  for (int64_t i = 0; i < w.numel(); ++i) w.set(i, 1);
  Tensor y = run1("ConvTranspose", {x, w});
  CHECK(y.dims() == std::vector<int64_t>{1, 2, 5, 5});
  std::vector<double> first = {0,  1,  3, 3,  2,  3,  8,  15, 12, 7,  9,  21, 36,
                               27, 15, 9, 20, 33, 24, 13, 6,  13, 21, 15, 8};
  std::vector<double> all = y.to_doubles();
  CHECK(std::vector<double>(all.begin(), all.begin() + 25) == first);
  uint32_t seed = 50;
  struct Case {
    std::vector<int64_t> x, w, s, d, pads, outpad;
    int64_t group;
  };
  std::vector<Case> cases = {
      {{1, 2, 4, 5}, {2, 3, 3, 3}, {2, 2}, {1, 1}, {1, 1, 1, 1}, {1, 0}, 1},
      {{2, 4, 3, 3}, {4, 2, 2, 3}, {1, 2}, {2, 1}, {0, 1, 1, 0}, {0, 1}, 2},
      {{1, 3, 6}, {3, 2, 4}, {3}, {1}, {1, 2}, {2}, 1},
  };
  for (const Case& c : cases) {
    Tensor xr = random_tensor(c.x, seed++), wr = random_tensor(c.w, seed++);
    Tensor b = random_tensor({c.w[1] * c.group}, seed++);
    Attributes a = attrs({{"strides", c.s},
                          {"dilations", c.d},
                          {"pads", c.pads},
                          {"output_padding", c.outpad},
                          {"group", c.group}});
    Tensor got = SingleOp("ConvTranspose", {xr, wr, b}, a).run()[0];
    check_close(got, naive_conv_transpose(xr, wr, &b, c.s, c.d, c.pads, c.outpad, c.group));
    CHECK(SingleOp("ConvTranspose", {xr, wr, b}, a).infer()[0].shape == got.type().shape);
  }
  // f64 runs in double all through: the scatter's sums match the direct ones to rounding.
  for (const Case& c : cases) {
    Tensor xr = random_f64(c.x, seed++), wr = random_f64(c.w, seed++);
    Tensor b = random_f64({c.w[1] * c.group}, seed++);
    Attributes a = attrs({{"strides", c.s},
                          {"dilations", c.d},
                          {"pads", c.pads},
                          {"output_padding", c.outpad},
                          {"group", c.group}});
    Tensor got = SingleOp("ConvTranspose", {xr, wr, b}, a).run()[0];
    CHECK(got.dtype() == DType::f64);
    check_close(got, naive_conv_transpose(xr, wr, &b, c.s, c.d, c.pads, c.outpad, c.group), 1e-12);
  }
  // output_shape sets the size and the padding (SAME_UPPER splits the crop, extra at the end)
  SingleOp os("ConvTranspose", {x, w},
              attrs({{"strides", std::vector<int64_t>{3, 2}},
                     {"output_shape", std::vector<int64_t>{10, 8}}}));
  CHECK(os.infer()[0].shape == Shape{1, 2, 10, 8});
  CHECK(os.run()[0].dims() == std::vector<int64_t>{1, 2, 10, 8});
  SingleOp same(
      "ConvTranspose", {x, w},
      attrs({{"strides", std::vector<int64_t>{2, 2}}, {"auto_pad", std::string("SAME_UPPER")}}));
  CHECK(same.infer()[0].shape == Shape{1, 2, 6, 6});
}
