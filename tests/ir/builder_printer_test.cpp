// GraphBuilder (ir/builder.h) and the printer (ir/printer.h).
#include <catch2/catch.hpp>

#include "ir/builder.h"
#include "ir/printer.h"
#include "support/error.h"

using namespace eqfuse;
using namespace eqfuse::ir;

TEST_CASE("builder infers types through the op table", "[fast]") {
  GraphBuilder b("g");
  ValueId x = b.input("x", DType::f32, {Dim(1), Dim::symbol("n")});
  ValueId w = b.weight("w", Tensor(DType::f32, {8, 4}));
  ValueId c = b.constant(Tensor(DType::f32, {4}));
  ValueId x2 = b.input("x2", DType::f32, {Dim(3), Dim(8)});
  ValueId y = b.op("Gemm", {x2, w, c}, {{"alpha", 2.0}});
  CHECK(b.type(y) == (TensorType{DType::f32, Shape{3, 4}}));
  ValueId z = b.op("Relu", {x});
  CHECK(b.type(z).shape == (Shape{1, Dim::symbol("n")}));
  b.output(y);
  Graph g = std::move(b).finish();
  CHECK(g.nodes().size() == 2);
  CHECK(g.node(0).def != nullptr);
  CHECK(g.node(0).attrs.get_float("alpha", 0) == 2.0);
}

TEST_CASE("builder errors: unknown op, arity, attribute type, shapes", "[fast]") {
  GraphBuilder b;
  ValueId x = b.input("x", DType::f32, {Dim(2), Dim(3)});
  try {
    b.op("Frobnicate", {x});
    FAIL("expected an error");
  } catch (const Error& e) {
    CHECK(e.kind() == Error::Kind::Unsupported);
    CHECK_THAT(e.what(), Catch::Contains("opaque"));
  }
  CHECK_THROWS_WITH(b.op("Add", {x}), Catch::Contains("inputs"));
  CHECK_THROWS_WITH(b.op("Gemm", {x, x}, {{"transB", std::string("yes")}}),
                    Catch::Contains("transB"));
  CHECK_THROWS_AS(b.op("MatMul", {x, x}), Error);
}

TEST_CASE("printer writes one node per line", "[fast]") {
  GraphBuilder b("tiny");
  ValueId x = b.input("x", DType::f32, {Dim::symbol("n"), Dim(4)});
  ValueId w = b.weight("w", Tensor(DType::f32, {4, 2}));
  ValueId y = b.op("MatMul", {x, w}, {}, "mm");
  ValueId z = b.op("LeakyRelu", {y}, {{"alpha", 0.5}}, "act");
  std::vector<ValueId> o = b.opaque("Custom", {z}, {TensorType{DType::f32, Shape{2}}}, {}, "my");
  b.output(o[0]);
  Graph g = std::move(b).finish();
  std::string text = print_graph(g);
  CHECK_THAT(text, Catch::Contains("graph \"tiny\" {"));
  CHECK_THAT(text, Catch::Contains("input %x: f32[n,4]"));
  CHECK_THAT(text, Catch::Contains("weight %w: f32[4,2]"));
  CHECK_THAT(text, Catch::Contains("%mm: f32[n,2] = MatMul(%x, %w)"));
  CHECK_THAT(text, Catch::Contains("= LeakyRelu(%mm) :alpha 0.5"));
  CHECK_THAT(text, Catch::Contains("my.Custom(%act)  ; opaque"));
  CHECK_THAT(text, Catch::Contains("output %custom"));
}
