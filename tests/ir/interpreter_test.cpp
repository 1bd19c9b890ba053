// The interpreter (ir/interpreter.h) on builder graphs: results, input checks with symbolic
// dims, opaque ops, weights, multi-use values.
#include "ir/interpreter.h"

#include <catch2/catch.hpp>

#include "ir/builder.h"
#include "ir/printer.h"
#include "support/error.h"

using namespace eqfuse;
using namespace eqfuse::ir;

namespace {
Tensor f32(std::vector<int64_t> dims, const std::vector<double>& v) {
  return Tensor::from_doubles(DType::f32, std::move(dims), v);
}
}  // namespace

TEST_CASE("interpreter runs a small MLP with a symbolic batch", "[fast]") {
  GraphBuilder b("mlp");
  ValueId x = b.input("x", DType::f32, {Dim::symbol("n"), Dim(2)});
  ValueId w = b.weight("w", f32({2, 2}, {1, -1, 2, 0}));
  ValueId bias = b.weight("bias", f32({2}, {0.5, 0.5}));
  ValueId h = b.op("Add", {b.op("MatMul", {x, w}), bias});
  ValueId r = b.op("Relu", {h});
  ValueId s = b.op("Mul", {r, r});  // r used twice
  b.output(s);
  b.output(h);
  Graph g = std::move(b).finish();
  INFO(print_graph(g));
  Interpreter interp(g);
  // x = [[1,1],[-1,0],[0,1]] -> xw = [[3,-1],[-1,1],[2,0]] -> +0.5 -> relu -> square
  std::vector<Tensor> out = interp.run({f32({3, 2}, {1, 1, -1, 0, 0, 1})});
  REQUIRE(out.size() == 2);
  CHECK(out[0].to_doubles() == std::vector<double>{12.25, 0, 0, 2.25, 6.25, 0.25});
  CHECK(out[1].to_doubles() == std::vector<double>{3.5, -0.5, -0.5, 1.5, 2.5, 0.5});
  // Another batch size binds n differently.
  CHECK(interp.run({f32({1, 2}, {0, 0})})[0].to_doubles() == std::vector<double>{0.25, 0.25});
}

TEST_CASE("interpreter checks inputs against the graph's types", "[fast]") {
  GraphBuilder b;
  Dim n = Dim::symbol("n");
  ValueId x = b.input("x", DType::f32, {n, Dim(2)});
  ValueId y = b.input("y", DType::f32, {n, Dim(2)});
  b.output(b.op("Add", {x, y}));
  Graph g = std::move(b).finish();
  Interpreter interp(g);
  CHECK_THROWS_AS(interp.run({Tensor(DType::f32, {1, 2})}), Error);  // one input missing
  CHECK_THROWS_WITH(interp.run({Tensor(DType::f32, {1, 3}), Tensor(DType::f32, {1, 2})}),
                    Catch::Contains("'x'"));
  CHECK_THROWS_WITH(interp.run({Tensor(DType::f64, {1, 2}), Tensor(DType::f32, {1, 2})}),
                    Catch::Contains("f32"));
  CHECK_THROWS_WITH(interp.run({Tensor(DType::f32, {1, 2}), Tensor(DType::f32, {3, 2})}),
                    Catch::Contains("'n'"));
  CHECK(interp.run({Tensor(DType::f32, {3, 2}), Tensor(DType::f32, {3, 2})})[0].dims() ==
        std::vector<int64_t>{3, 2});
}

TEST_CASE("executing an opaque op fails with Unsupported naming the node", "[fast]") {
  GraphBuilder b;
  ValueId x = b.input("x", DType::f32, {Dim(2)});
  std::vector<ValueId> y =
      b.opaque("MyOp", {x}, {TensorType{DType::f32, Shape{2}}}, {}, "com.acme");
  b.output(b.op("Relu", {y[0]}));
  Graph g = std::move(b).finish();
  try {
    Interpreter(g).run({Tensor(DType::f32, {2})});
    FAIL("expected an error");
  } catch (const Error& e) {
    CHECK(e.kind() == Error::Kind::Unsupported);
    CHECK(std::string(e.what()).find("MyOp") != std::string::npos);
    CHECK(e.exit_code() == 3);
  }
}

TEST_CASE("a graph output may be an input or a weight", "[fast]") {
  GraphBuilder b;
  ValueId x = b.input("x", DType::f32, {Dim(1)});
  ValueId w = b.weight("w", f32({1}, {7}));
  b.output(x);
  b.output(w);
  Graph g = std::move(b).finish();
  std::vector<Tensor> out = Interpreter(g).run({f32({1}, {3})});
  CHECK(out[0].get(0) == 3);
  CHECK(out[1].get(0) == 7);
}

TEST_CASE("evaluate_node runs one node on given values", "[fast]") {
  GraphBuilder b;
  ValueId x = b.input("x", DType::f32, {Dim(2)});
  b.output(b.op("Exp", {x}));
  Graph g = std::move(b).finish();
  Tensor in = f32({2}, {0, 1});
  std::vector<Tensor> out = evaluate_node(g, g.node(0), {&in});
  CHECK(out[0].get(0) == 1);
  CHECK(out[0].get(1) == Approx(2.718281828));
}
