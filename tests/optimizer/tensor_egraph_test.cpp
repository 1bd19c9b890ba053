// The tensor e-graph: graph -> e-graph -> graph round trips, the analysis's types and constants,
// and the canonical attribute payloads that rule literals match.
#include "optimizer/tensor_egraph.h"

#include <catch2/catch.hpp>

#include "egraph/symbol.h"
#include "egraph/term.h"
#include "ir/builder.h"
#include "tests/optimizer/test_helpers.h"

using namespace eqfuse;
using namespace eqfuse::optimizer;
using ir::Dim;
using ir::DType;
using ir::Tensor;

namespace {

Tensor filled(std::vector<int64_t> dims, double start = 0.25) {
  Tensor t(DType::f32, dims);
  for (int64_t i = 0; i < t.numel(); ++i) t.set(i, start + 0.5 * static_cast<double>(i % 7) - 1);
  return t;
}

void check_round_trip(const ir::Graph& g) {
  TensorEGraph teg = from_graph(g);
  ir::Graph back = to_graph(teg, original_choice(teg));
  CHECK(back.nodes().size() == g.nodes().size());
  REQUIRE(back.outputs().size() == g.outputs().size());
  for (size_t i = 0; i < g.outputs().size(); ++i) {
    CHECK(back.value(back.outputs()[i]).name == g.value(g.outputs()[i]).name);
    CHECK(back.value(back.outputs()[i]).type == g.value(g.outputs()[i]).type);
  }
  auto inputs = test::random_inputs(g);
  CHECK(test::same_results(ir::Interpreter(g).run(inputs), ir::Interpreter(back).run(inputs)));
}

}  // namespace

TEST_CASE("tensor e-graph: an MLP round-trips and runs identically") {
  ir::GraphBuilder b("mlp");
  ir::ValueId x = b.input("x", DType::f32, {Dim::symbol("n"), Dim(4)});
  ir::ValueId w1 = b.weight("w1", filled({4, 8}));
  ir::ValueId b1 = b.weight("b1", filled({8}));
  ir::ValueId w2 = b.weight("w2", filled({8, 3}, 0.1));
  ir::ValueId h = b.op("Relu", {b.op("Add", {b.op("MatMul", {x, w1}), b1})});
  ir::ValueId y = b.op("Gemm", {h, w2}, {{"alpha", 0.5}}, "gemm");
  b.output(y);
  b.output(h);
  ir::Graph g = std::move(b).finish();
  check_round_trip(g);

  TensorEGraph teg = from_graph(g);
  const TensorData& out = teg.data(teg.outputs[0]);
  REQUIRE(out.valid);
  CHECK(out.types[0].str() == "f32[n,3]");
  // Gemm's payload has every schema attribute (defaults filled in), spelled canonically.
  egraph::EClassId gemm = teg.egraph->find(teg.outputs[0]);
  auto nodes = teg.egraph->class_nodes(gemm);
  REQUIRE(nodes.size() == 1);
  CHECK(egraph::attrs_string(teg.egraph->attrs(nodes[0])) ==
        ":alpha 0.5 :beta 1 :transA 0 :transB 0");
  // Small weights carry their value.
  egraph::EClassId bias = teg.egraph->lookup(
      egraph::intern("Weight"),
      egraph::intern_attrs({{egraph::intern("name"), egraph::intern("\"b1\"")}}), {});
  REQUIRE(bias != egraph::kNoId);
  REQUIRE(teg.data(bias).value);
  CHECK(teg.data(bias).value->numel() == 8);
}

TEST_CASE("tensor e-graph: multi-output ops are tuples read through Proj") {
  ir::GraphBuilder b("split");
  ir::ValueId x = b.input("x", DType::f32, {Dim(2), Dim(6)});
  std::vector<ir::ValueId> parts = b.op_n("Split", {x}, 3, {{"axis", int64_t{1}}});
  b.output(b.op("Add", {parts[0], parts[2]}));
  b.output(parts[1]);
  ir::Graph g = std::move(b).finish();
  check_round_trip(g);
  TensorEGraph teg = from_graph(g);
  egraph::EClassId p1 = teg.egraph->find(teg.outputs[1]);
  egraph::NodeId proj = teg.egraph->class_nodes(p1)[0];
  CHECK(egraph::node_string(*teg.egraph, proj).rfind("(Proj :index 1 #", 0) == 0);
  egraph::EClassId tuple = teg.egraph->find(teg.egraph->children(proj)[0]);
  const TensorData& t = teg.data(tuple);
  REQUIRE(t.valid);
  CHECK(t.tuple);
  CHECK(t.types.size() == 3);
  CHECK(egraph::attrs_string(teg.egraph->attrs(teg.egraph->class_nodes(tuple)[0])) ==
        ":axis 1 :num_outputs 3");
  CHECK(teg.data(p1).types[0].str() == "f32[2,2]");
}

TEST_CASE("tensor e-graph: canonical perms, constants folded, kept nodes") {
  ir::GraphBuilder b("misc");
  ir::ValueId x = b.input("x", DType::f32, {Dim(2), Dim(3)});
  ir::ValueId t = b.op("Transpose", {x});  // no perm: reversed
  ir::ValueId c = b.op("Constant", {}, {{"value_float", 2.0}});
  ir::ValueId y = b.op("Mul", {t, b.op("Neg", {c})});
  b.output(y);
  ir::Graph g = std::move(b).finish();
  check_round_trip(g);
  TensorEGraph teg = from_graph(g);
  egraph::EClassId tc =
      egraph::add_term(*teg.egraph, "(Transpose :perm (1 0) (Input :name \"x\"))");
  teg.egraph->rebuild();
  CHECK(teg.data(tc).types[0].str() == "f32[3,2]");
  // Transpose without perm was given the reversed one: the same node.
  egraph::EClassId mul = teg.egraph->find(teg.outputs[0]);
  CHECK(teg.egraph->find(teg.egraph->children(teg.egraph->class_nodes(mul)[0])[0]) ==
        teg.egraph->find(tc));
  // Neg of a constant folded to a known value.
  egraph::EClassId neg = teg.egraph->find(teg.egraph->children(teg.egraph->class_nodes(mul)[0])[1]);
  REQUIRE(teg.data(neg).value);
  CHECK(teg.data(neg).value->get(0) == -2.0);
}

TEST_CASE("tensor e-graph: a node that fails inference gets no type, without throwing") {
  ir::GraphBuilder b("bad");
  ir::ValueId x = b.input("x", DType::f32, {Dim(2), Dim(3)});
  b.output(b.op("Relu", {x}));
  TensorEGraph teg = from_graph(std::move(b).finish());
  egraph::EClassId bad =
      egraph::add_term(*teg.egraph, "(MatMul (Input :name \"x\") (Input :name \"x\"))");
  teg.egraph->rebuild();
  CHECK_FALSE(teg.data(bad).valid);
}
