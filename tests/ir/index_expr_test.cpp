// Index expressions (ir/index_expr.h): the fast MatMul, Gemm and Reduce kernels checked against
// their stated meaning on small random shapes, and the printed form.
#include "ir/index_expr.h"

#include <catch2/catch.hpp>
#include <random>

#include "single_op.h"

using namespace eqfuse;
using namespace eqfuse::ir;
using namespace eqfuse::test;

namespace {
Tensor random_tensor(DType d, std::vector<int64_t> dims, std::mt19937& rng) {
  Tensor t(d, std::move(dims));
  std::uniform_int_distribution<int> u(-6, 6);
  for (int64_t i = 0; i < t.numel(); ++i) t.set(i, u(rng) * (is_floating(d) ? 0.25 : 1));
  return t;
}

// Runs the node's kernel and evaluates its index expression; both must agree.
void check_against_meaning(const SingleOp& op, double tolerance = 1e-6) {
  OpContext ctx = make_context(op.graph, op.graph.node(op.node));
  std::shared_ptr<const IndexExpr> meaning = node_index_expr(ctx);
  REQUIRE(meaning);
  Tensor fast = ctx.def.kernel(ctx).at(0);
  Tensor slow = evaluate(*meaning, ctx.input_values, fast.dtype());
  INFO(to_string(*meaning));
  REQUIRE(fast.dims() == slow.dims());
  for (int64_t i = 0; i < fast.numel(); ++i) {
    CHECK(fast.get(i) == Approx(slow.get(i)).epsilon(tolerance).margin(tolerance));
  }
}
}  // namespace

TEST_CASE("MatMul kernel agrees with its index expression", "[fast]") {
  std::mt19937 rng(3);
  std::uniform_int_distribution<int64_t> d(1, 5);
  const std::vector<std::pair<int, int>> ranks = {{1, 1}, {1, 2}, {2, 1}, {2, 2}, {3, 2},
                                                  {2, 3}, {3, 3}, {4, 3}, {1, 3}, {3, 1}};
  for (auto [ra, rb] : ranks) {
    for (int trial = 0; trial < 3; ++trial) {
      int64_t m = d(rng), k = d(rng), n = d(rng), b0 = d(rng), b1 = d(rng);
      std::vector<int64_t> a_dims, b_dims;
      if (ra == 4) a_dims = {b1, trial == 0 ? 1 : b0};
      if (ra >= 3) a_dims.push_back(trial == 1 ? 1 : b0);
      if (ra >= 2) a_dims.push_back(m);
      a_dims.push_back(k);
      if (rb >= 3) b_dims.push_back(trial == 2 ? 1 : b0);
      b_dims.push_back(k);
      if (rb >= 2) b_dims.push_back(n);
      DType dt = trial == 0 ? DType::i64 : DType::f32;
      check_against_meaning(
          SingleOp("MatMul", {random_tensor(dt, a_dims, rng), random_tensor(dt, b_dims, rng)}));
    }
  }
}

TEST_CASE("Gemm kernel agrees with its index expression", "[fast]") {
  std::mt19937 rng(4);
  for (int ta = 0; ta < 2; ++ta) {
    for (int tb = 0; tb < 2; ++tb) {
      for (std::vector<int64_t> c_dims : {std::vector<int64_t>{}, std::vector<int64_t>{5},
                                          std::vector<int64_t>{3, 1}, std::vector<int64_t>{3, 5}}) {
        Tensor a = random_tensor(DType::f32,
                                 ta ? std::vector<int64_t>{4, 3} : std::vector<int64_t>{3, 4}, rng);
        Tensor b = random_tensor(DType::f32,
                                 tb ? std::vector<int64_t>{5, 4} : std::vector<int64_t>{4, 5}, rng);
        Tensor c = random_tensor(DType::f32, c_dims, rng);
        check_against_meaning(SingleOp("Gemm", {a, b, c},
                                       attrs({{"transA", int64_t{ta}},
                                              {"transB", int64_t{tb}},
                                              {"alpha", 0.5},
                                              {"beta", 2.0}})));
      }
      check_against_meaning(SingleOp(
          "Gemm", {random_tensor(DType::f32, {2, 2}, rng), random_tensor(DType::f32, {2, 2}, rng)},
          attrs({{"transA", int64_t{ta}}, {"transB", int64_t{tb}}})));
    }
  }
}

TEST_CASE("Reduce kernels agree with their index expressions", "[fast]") {
  std::mt19937 rng(5);
  const char* ops[] = {"ReduceSum", "ReduceMean", "ReduceMax",       "ReduceMin",      "ReduceProd",
                       "ReduceL1",  "ReduceL2",   "ReduceSumSquare", "ReduceLogSumExp"};
  const std::vector<std::vector<int64_t>> axes_sets = {{}, {0}, {1}, {-1}, {0, 2}, {2, 1}};
  for (const char* op : ops) {
    for (const auto& axes : axes_sets) {
      for (int64_t keep = 0; keep < 2; ++keep) {
        Tensor x = random_tensor(DType::f32, {2, 3, 4}, rng);
        check_against_meaning(
            SingleOp(op, {x, i64({int64_t(axes.size())}, {axes.begin(), axes.end()})},
                     attrs({{"keepdims", keep}})),
            1e-5);
      }
    }
    check_against_meaning(SingleOp(op, {random_tensor(DType::f32, {2, 3}, rng), i64({0}, {})},
                                   attrs({{"noop_with_empty_axes", int64_t{1}}})));
  }
  // ReduceLogSum needs positive sums.
  Tensor pos(DType::f32, {2, 3});
  for (int64_t i = 0; i < 6; ++i) pos.set(i, 1 + i);
  check_against_meaning(
      SingleOp("ReduceLogSum", {pos}, attrs({{"axes", std::vector<int64_t>{1}}})));
  // Integer sums are exact in both.
  check_against_meaning(SingleOp("ReduceSum", {random_tensor(DType::i64, {3, 4}, rng)},
                                 attrs({{"axes", std::vector<int64_t>{0}}})));
}

TEST_CASE("index expressions print as einsum-like text", "[fast]") {
  SingleOp mm("MatMul", {TensorType{DType::f32, Shape{2, 3}}, TensorType{DType::f32, Shape{3, 4}}});
  OpContext ctx = make_context(mm.graph, mm.graph.node(mm.node));
  CHECK(to_string(*node_index_expr(ctx)) == "out[v0,v1] = sum(v2<3) (mul x0[v0,v2] x1[v2,v1])");
  SingleOp mean("ReduceMean", {TensorType{DType::f32, Shape{2, 3}}},
                attrs({{"axes", std::vector<int64_t>{1}}, {"keepdims", int64_t{0}}}));
  OpContext c2 = make_context(mean.graph, mean.graph.node(mean.node));
  CHECK(to_string(*node_index_expr(c2)) == "out[v0] = (div [sum(v1<3) x0[v0,v1]] 3)");
  SingleOp sym("MatMul", {TensorType{DType::f32, Shape{Dim::symbol("n"), 3}},
                          TensorType{DType::f32, Shape{3, 4}}});
  OpContext c3 = make_context(sym.graph, sym.graph.node(sym.node));
  CHECK_THROWS_AS(node_index_expr(c3), Error);  // needs static shapes
}
