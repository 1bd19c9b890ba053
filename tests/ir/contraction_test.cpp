// MatMul and Gemm (ir/ops/contraction.cpp): known answers, batch broadcasting, 1-D operands,
// transposes, and the fast kernel against a naive triple loop on random shapes.
#include <catch2/catch.hpp>
#include <random>

#include "single_op.h"

using namespace eqfuse;
using namespace eqfuse::ir;
using namespace eqfuse::test;

namespace {
std::vector<double> vals(const Tensor& t) {
  return t.to_doubles();
}
Tensor random_tensor(DType d, std::vector<int64_t> dims, std::mt19937& rng) {
  Tensor t(d, std::move(dims));
  std::uniform_int_distribution<int> u(-4, 4);
  for (int64_t i = 0; i < t.numel(); ++i) t.set(i, u(rng) * (is_floating(d) ? 0.25 : 1));
  return t;
}
}  // namespace

TEST_CASE("MatMul of matrices, vectors and batches", "[fast]") {
  Tensor a = f32({2, 3}, {1, 2, 3, 4, 5, 6});
  Tensor b = f32({3, 2}, {1, 0, 0, 1, 1, 1});
  CHECK(vals(run1("MatMul", {a, b})) == std::vector<double>{4, 5, 10, 11});
  Tensor v = f32({3}, {1, 1, 1});
  Tensor av = run1("MatMul", {a, v});
  CHECK(av.dims() == std::vector<int64_t>{2});
  CHECK(vals(av) == std::vector<double>{6, 15});
  Tensor va = run1("MatMul", {f32({2}, {1, 1}), a});
  CHECK(va.dims() == std::vector<int64_t>{3});
  CHECK(vals(va) == std::vector<double>{5, 7, 9});
  CHECK(run1("MatMul", {v, v}).dims().empty());
  // Batch dims broadcast: [2,1,2,3] x [3,3,2] -> [2,3,2,2].
  SingleOp s("MatMul",
             {TensorType{DType::f32, Shape{2, 1, 2, 3}}, TensorType{DType::f32, Shape{3, 3, 2}}});
  CHECK(s.infer()[0].shape == (Shape{2, 3, 2, 2}));
  CHECK(s.work().flops == 2.0 * 2 * 3 * 2 * 2 * 3);
  CHECK(vals(run1("MatMul", {i64({1, 2}, {3, 4}), i64({2, 1}, {5, 6})})) ==
        std::vector<double>{39});
}

TEST_CASE("MatMul inference errors and symbolic dims", "[fast]") {
  Dim n = Dim::symbol("n");
  SingleOp s("MatMul",
             {TensorType{DType::f32, Shape{n, 4, 8}}, TensorType{DType::f32, Shape{8, 16}}});
  CHECK(s.infer()[0].shape == (Shape{n, 4, 16}));
  CHECK_THROWS_AS(
      SingleOp("MatMul", {TensorType{DType::f32, Shape{2, 3}}, TensorType{DType::f32, Shape{4, 2}}})
          .infer(),
      Error);
  CHECK_THROWS_AS(
      SingleOp("MatMul", {TensorType{DType::f32, Shape{2, 3}}, TensorType{DType::f64, Shape{3, 2}}})
          .infer(),
      Error);
  CHECK_THROWS_AS(SingleOp("MatMul", {TensorType{DType::f32, Shape{2, 3}}}).infer(), Error);
}

TEST_CASE("MatMul kernel matches a naive loop on random shapes", "[fast]") {
  std::mt19937 rng(1);
  for (int trial = 0; trial < 20; ++trial) {
    std::uniform_int_distribution<int64_t> d(1, 9);
    int64_t b0 = d(rng) % 3 + 1, m = d(rng), k = d(rng), n = d(rng);
    bool broadcast_a = trial % 2 == 0;
    DType dt = trial % 3 == 0 ? DType::i64 : (trial % 3 == 1 ? DType::f32 : DType::f64);
    Tensor a = random_tensor(dt, {broadcast_a ? 1 : b0, m, k}, rng);
    Tensor b = random_tensor(dt, {b0, k, n}, rng);
    Tensor c = run1("MatMul", {a, b});
    REQUIRE(c.dims() == std::vector<int64_t>{b0, m, n});
    for (int64_t bi = 0; bi < b0; ++bi) {
      for (int64_t i = 0; i < m; ++i) {
        for (int64_t j = 0; j < n; ++j) {
          double want = 0;
          for (int64_t kk = 0; kk < k; ++kk) {
            want += a.get(((broadcast_a ? 0 : bi) * m + i) * k + kk) * b.get((bi * k + kk) * n + j);
          }
          CHECK(c.get((bi * m + i) * n + j) == want);
        }
      }
    }
  }
}

TEST_CASE("Gemm with transposes, alpha, beta and broadcast C", "[fast]") {
  Tensor a = f32({3, 2}, {1, 4, 2, 5, 3, 6});  // A^T = [[1,2,3],[4,5,6]]
  Tensor b = f32({2, 3}, {1, 0, 1, 0, 1, 1});  // B^T = [[1,0],[0,1],[1,1]]
  Tensor c = f32({2}, {100, 200});
  Tensor y =
      run1("Gemm", {a, b, c},
           attrs({{"transA", int64_t{1}}, {"transB", int64_t{1}}, {"alpha", 2.0}, {"beta", 0.5}}));
  // A^T B^T = [[4,5],[10,11]]
  CHECK(vals(y) == std::vector<double>{58, 110, 70, 122});
  CHECK(vals(run1("Gemm", {f32({1, 2}, {1, 2}), f32({2, 1}, {3, 4})})) == std::vector<double>{11});
  SingleOp s("Gemm",
             {TensorType{DType::f32, Shape{4, 8}}, TensorType{DType::f32, Shape{16, 8}},
              TensorType{DType::f32, Shape{16}}},
             attrs({{"transB", int64_t{1}}}));
  CHECK(s.infer()[0].shape == (Shape{4, 16}));
  CHECK(s.work().flops == 2.0 * 4 * 16 * 8 + 2.0 * 4 * 16);
  CHECK_THROWS_AS(
      SingleOp("Gemm", {TensorType{DType::f32, Shape{4, 8}}, TensorType{DType::f32, Shape{16, 8}}})
          .infer(),
      Error);
  CHECK_THROWS_AS(
      SingleOp("Gemm", {TensorType{DType::f32, Shape{4, 8}}, TensorType{DType::f32, Shape{8, 3}},
                        TensorType{DType::f32, Shape{5}}})
          .infer(),
      Error);
}
