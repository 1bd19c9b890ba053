// Symbolic dims end to end on builder graphs: reshapes computed by Shape/Gather/Concat chains
// of a symbolic input are typed symbolically ([batch*4,32]) and run at any batch, matching
// the same graph built at a fixed batch; invalid symbolic reshapes are refused naming the node;
// Slice, Expand, Range, ConstantOfShape and pooling follow symbolic dims.
#include <catch2/catch.hpp>
#include <optional>
#include <random>

#include "ir/builder.h"
#include "ir/constant_shape_specs.h"
#include "ir/interpreter.h"
#include "ir/printer.h"
#include "support/error.h"

using namespace eqfuse;
using namespace eqfuse::ir;

namespace {

Tensor i64(std::vector<int64_t> v) {
  auto n = int64_t(v.size());
  return Tensor::from_vector(DType::i64, {n}, v);
}
Tensor i64_scalar(int64_t v) {
  return Tensor::from_vector<int64_t>(DType::i64, {}, {v});
}

Tensor random_f32(std::vector<int64_t> dims, uint64_t seed) {
  Tensor t(DType::f32, std::move(dims));
  std::mt19937_64 rng(seed);
  std::uniform_real_distribution<double> u(-1, 1);
  for (int64_t i = 0; i < t.numel(); ++i) t.set(i, u(rng));
  return t;
}

// x[B,8,16] -> Reshape(x, [B,-1,4]) -> Transpose -> Reshape([B*4,32]) -> MatMul(w[32,5]) ->
// Reshape([B,-1]) + Range(0,B) as a column; every shape from Shape(x), as exporters write it.
Graph exported_style_graph(Dim batch) {
  GraphBuilder b("dyn");
  ValueId x = b.input("x", DType::f32, {batch, Dim(8), Dim(16)});
  ValueId shape = b.op("Shape", {x});
  ValueId n = b.op("Gather", {shape, b.constant(i64_scalar(0))}, {{"axis", int64_t{0}}});
  ValueId axes0 = b.constant(i64({0}));
  ValueId n1 = b.op("Unsqueeze", {n, axes0});
  ValueId s1 =
      b.op("Concat", {n1, b.constant(i64({-1})), b.constant(i64({4}))}, {{"axis", int64_t{0}}});
  ValueId r1 = b.op("Reshape", {x, s1});
  ValueId t = b.op("Transpose", {r1}, {{"perm", std::vector<int64_t>{0, 2, 1}}});
  ValueId n4 = b.op("Unsqueeze", {b.op("Mul", {n, b.constant(i64_scalar(4))}), axes0});
  ValueId s2 = b.op("Concat", {n4, b.constant(i64({32}))}, {{"axis", int64_t{0}}});
  ValueId r2 = b.op("Reshape", {t, s2}, {}, "flatten_heads");
  ValueId w = b.weight("w", random_f32({32, 5}, 7));
  ValueId mm = b.op("MatMul", {r2, w});
  ValueId s3 = b.op("Concat", {n1, b.constant(i64({-1}))}, {{"axis", int64_t{0}}});
  ValueId r3 = b.op("Reshape", {mm, s3});
  // A Slice whose end is computed from the shape, along axis -1.
  ValueId last = b.op("Gather", {b.op("Shape", {r3}), b.constant(i64({-1}))});
  ValueId sl = b.op("Slice", {r3, b.constant(i64({1})), last, b.constant(i64({-1}))});
  ValueId range = b.op("Range", {b.constant(i64_scalar(0)), n, b.constant(i64_scalar(1))});
  ValueId col =
      b.op("Unsqueeze", {b.op("Cast", {range}, {{"to", int64_t{1}}}), b.constant(i64({1}))});
  b.output(b.op("Add", {sl, col}));
  return std::move(b).finish();
}

std::string type_of(const Graph& g, const std::string& value) {
  return g.value(*g.find_value(value)).type.str();
}

}  // namespace

TEST_CASE("reshapes computed from a symbolic input are typed symbolically", "[fast]") {
  Graph g = exported_style_graph(Dim::symbol("batch"));
  INFO(print_graph(g));
  CHECK(type_of(g, "reshape_4") == "f32[batch,32,4]");
  CHECK(type_of(g, "flatten_heads") == "f32[batch*4,32]");
  CHECK(g.value(g.outputs()[0]).type.str() == "f32[batch,19]");
}

TEST_CASE("one graph with a symbolic batch runs at every batch like its fixed twin", "[fast]") {
  Graph dynamic = exported_style_graph(Dim::symbol("batch"));
  for (int64_t batch : {1, 3, 7}) {
    INFO("batch " << batch);
    Graph fixed = exported_style_graph(Dim(batch));
    CHECK(fixed.value(fixed.outputs()[0]).type.str() == "f32[" + std::to_string(batch) + ",19]");
    Tensor x = random_f32({batch, 8, 16}, uint64_t(batch));
    Tensor got = Interpreter(dynamic).run({x}).at(0);
    Tensor want = Interpreter(fixed).run({x}).at(0);
    REQUIRE(got.dims() == std::vector<int64_t>{batch, 19});
    CHECK(got.to_doubles() == want.to_doubles());
  }
}

TEST_CASE("computed reshape shapes become constant specs that hold at every batch", "[fast]") {
  Graph dynamic = exported_style_graph(Dim::symbol("batch"));
  ConstantShapeSpecs made = with_constant_shape_specs(dynamic);
  INFO(print_graph(made.graph));
  auto reshape_spec = [&](const std::string& value) -> std::optional<std::vector<int64_t>> {
    const Node& n = made.graph.node(made.graph.value(*made.graph.find_value(value)).producer);
    REQUIRE(n.op_type == "Reshape");
    if (n.inputs.size() != 1) return std::nullopt;
    return n.attrs.ints_if_present("shape");
  };
  // [batch,-1,4] of x[batch,8,16]: batch is x's dim 0.
  CHECK(reshape_spec("reshape_4") == std::vector<int64_t>{0, -1, 4});
  // [batch*4,32] of [batch,4,32]: the one symbolic entry is what is left.
  CHECK(reshape_spec("flatten_heads") == std::vector<int64_t>{-1, 32});
  // [batch,-1] of [batch*4,5]: batch is not the input's dim 0 and -1 is taken; it stays.
  size_t computed = 0;
  for (const Node& n : made.graph.nodes())
    computed += n.op_type == "Reshape" && n.inputs.size() == 2;
  CHECK(computed == 1);
  CHECK(made.reshapes == 2);
  CHECK(made.graph.nodes().size() < dynamic.nodes().size());  // the dead shape chains are gone
  CHECK(type_of(made.graph, "flatten_heads") == "f32[batch*4,32]");
  CHECK(made.graph.value(made.graph.outputs()[0]).type == dynamic.value(dynamic.outputs()[0]).type);
  for (int64_t batch : {1, 3, 7}) {
    INFO("batch " << batch);
    Tensor x = random_f32({batch, 8, 16}, uint64_t(batch));
    CHECK(Interpreter(made.graph).run({x}).at(0).to_doubles() ==
          Interpreter(dynamic).run({x}).at(0).to_doubles());
  }
  // At a fixed batch every computed shape is a constant: all three Reshapes read it.
  Graph fixed = exported_style_graph(Dim(2));
  CHECK(with_constant_shape_specs(fixed).reshapes == 3);
  CHECK(with_constant_shape_specs(with_constant_shape_specs(fixed).graph).reshapes == 0);
}

TEST_CASE("an invalid symbolic reshape is refused naming the node", "[fast]") {
  GraphBuilder b("bad");
  ValueId x = b.input("x", DType::f32, {Dim::symbol("batch"), Dim(6)});
  ValueId n = b.op("Unsqueeze", {b.op("Gather", {b.op("Shape", {x}), b.constant(i64_scalar(0))}),
                                 b.constant(i64({0}))});
  ValueId s = b.op("Concat", {n, b.constant(i64({4}))}, {{"axis", int64_t{0}}});
  try {
    b.op("Reshape", {x, s}, {}, "bad_reshape");
    FAIL("the reshape was accepted");
  } catch (const Error& e) {
    CHECK_THAT(e.what(), Catch::Contains("bad_reshape") && Catch::Contains("[batch,6]") &&
                             Catch::Contains("[batch,4]"));
  }
}

TEST_CASE("Slice with computed ends and a negative axis does not crash inference", "[fast]") {
  // The shape of bert_tiny's attention Slice: starts constant, ends computed, axes (-1).
  GraphBuilder b("slice");
  ValueId x = b.input("x", DType::f32, {Dim(64), Dim::symbol("batch"), Dim(384)});
  ValueId e = b.input("e", DType::i64, {Dim(1)});  // not known at all
  ValueId y = b.op("Slice", {x, b.constant(i64({0})), e, b.constant(i64({-1}))});
  CHECK(b.type(y).str() == "f32[64,batch,?]");
  ValueId z =
      b.op("Slice", {x, b.constant(i64({1})), b.constant(i64({INT64_MAX})), b.constant(i64({-2}))});
  CHECK(b.type(z).str() == "f32[64,batch-1,384]");
  CHECK_THROWS_WITH(b.op("Slice", {x, b.constant(i64({0})), e, b.constant(i64({3}))}, {}, "s3"),
                    Catch::Contains("s3") && Catch::Contains("out of range"));
  CHECK_THROWS_WITH(b.op("Slice", {x, b.constant(i64({0})), e, b.constant(i64({0, 1}))}),
                    Catch::Contains("differ in length"));
}

TEST_CASE("Expand, ConstantOfShape and pooling follow symbolic dims", "[fast]") {
  GraphBuilder b("misc");
  ValueId x =
      b.input("x", DType::f32, {Dim::symbol("n"), Dim(3), Dim::symbol("h"), Dim::symbol("w")});
  ValueId shape = b.op("Shape", {x});
  // torch's expand: Where(Equal(shape, -1), 1, shape)
  ValueId fixed = b.op("Where", {b.op("Equal", {shape, b.constant(i64({-1, -1, -1, -1}))}),
                                 b.constant(i64({1, 1, 1, 1})), shape});
  ValueId one = b.weight("one", Tensor::from_doubles(DType::f32, {1, 1, 1, 1}, {1.0}));
  CHECK(b.type(b.op("Expand", {one, fixed})).str() == "f32[n,3,h,w]");
  CHECK(b.type(b.op("ConstantOfShape", {shape})).str() == "f32[n,3,h,w]");
  ValueId pool =
      b.op("MaxPool", {x},
           {{"kernel_shape", std::vector<int64_t>{2, 2}}, {"strides", std::vector<int64_t>{2, 2}}});
  CHECK(b.type(pool).str() == "f32[n,3,(h-2)/2+1,(w-2)/2+1]");
  ValueId flat = b.op("Flatten", {x});
  CHECK(b.type(flat).str() == "f32[n,h*w*3]");
  b.output(pool);
  Graph g = std::move(b).finish();
  Tensor in = random_f32({2, 3, 5, 6}, 1);
  CHECK(Interpreter(g).run({in}).at(0).dims() == std::vector<int64_t>{2, 3, 2, 3});
}
