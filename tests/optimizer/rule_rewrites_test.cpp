// Tensor rules firing on small graphs with the runner: conditions read the analysis, attribute
// variables and computed attributes pass through, multi-pattern rules, and rules whose result
// would fail shape inference (or change a type) are not applied.
#include "optimizer/rule_rewrites.h"

#include <catch2/catch.hpp>

#include "egraph/runner.h"
#include "ir/builder.h"
#include "optimizer/tensor_egraph.h"
#include "rules/parser.h"
#include "tests/optimizer/test_helpers.h"

using namespace eqfuse;
using namespace eqfuse::optimizer;
using ir::Dim;
using ir::DType;
using ir::Tensor;

namespace {

egraph::RunReport saturate(TensorEGraph& teg, const std::string& rules_text,
                           size_t iterations = 8) {
  std::vector<egraph::Rewrite> rewrites = compile_rules(rules::parse_rules(rules_text, "t.rules"));
  egraph::RunnerOptions options;
  options.limits.iterations = iterations;
  options.limits.nodes = 5000;
  options.limits.seconds = 20;
  return egraph::run(*teg.egraph, rewrites, options);
}

size_t applications(const egraph::RunReport& r, const std::string& rule) {
  for (const auto& s : r.rules)
    if (s.name == rule) return s.applications;
  return 0;
}

bool same_class(const TensorEGraph& teg, egraph::EClassId a, egraph::EClassId b) {
  return teg.egraph->find(a) == teg.egraph->find(b);
}

const char* kAddZero =
    "(rewrite add-zero (Add ?x ?z) ?x :when (zero ?z) (same-shape ?x (Add ?x ?z)))";

}  // namespace

TEST_CASE("rule rewrites: conditions on constants and shapes decide") {
  ir::GraphBuilder b("g");
  ir::ValueId x = b.input("x", DType::f32, {Dim(2), Dim(3)});
  ir::ValueId v = b.input("v", DType::f32, {Dim(3)});
  ir::ValueId zeros = b.weight("zeros", Tensor(DType::f32, {3}));
  ir::ValueId big_zeros = b.weight("big_zeros", Tensor(DType::f32, {2, 3}));
  ir::ValueId ones = b.weight("ones", Tensor::from_doubles(DType::f32, {3}, {1, 1, 1}));
  ir::ValueId y0 = b.op("Add", {x, zeros});      // fires: x + 0 == x
  ir::ValueId y1 = b.op("Add", {v, big_zeros});  // broadcasts v: not the same shape, no
  ir::ValueId y2 = b.op("Add", {x, ones});       // not zero, no
  for (ir::ValueId y : {y0, y1, y2}) b.output(y);
  ir::Graph g = std::move(b).finish();
  TensorEGraph teg = from_graph(g);
  egraph::RunReport report = saturate(teg, kAddZero);
  CHECK(applications(report, "add-zero") >= 1);  // a match is re-applied until saturation
  CHECK(same_class(teg, teg.outputs[0], teg.value_node[x]));
  CHECK_FALSE(same_class(teg, teg.outputs[1], teg.value_node[v]));
  CHECK_FALSE(same_class(teg, teg.outputs[2], teg.value_node[x]));
  // The smallest graph now skips the Add, and still computes the same.
  ir::Graph small = to_graph(teg, test::smallest_choice(teg));
  CHECK(small.nodes().size() == g.nodes().size() - 1 + 1);  // Add gone; Identity renames output
  auto inputs = test::random_inputs(g);
  CHECK(test::same_results(ir::Interpreter(g).run(inputs), ir::Interpreter(small).run(inputs)));
}

TEST_CASE("rule rewrites: a result that fails shape inference or changes type is not applied") {
  ir::GraphBuilder b("g");
  ir::ValueId a = b.input("a", DType::f32, {Dim(2), Dim(3)});
  ir::ValueId w = b.input("w", DType::f32, {Dim(3), Dim(4)});
  ir::ValueId s = b.input("s", DType::f32, {Dim(3), Dim(3)});
  b.output(b.op("MatMul", {a, w}));
  b.output(b.op("Relu", {a}));
  b.output(b.op("Relu", {s}));
  TensorEGraph teg = from_graph(std::move(b).finish());
  size_t nodes = teg.egraph->num_nodes();
  // Neither rule is checked here (parse only): the e-graph must protect itself.
  egraph::RunReport report = saturate(teg,
                                      "(rewrite swap (MatMul ?x ?y) (MatMul ?y ?x))\n"
                                      "(rewrite relu-t (Relu ?x) (Transpose :perm (1 0) ?x))");
  CHECK(applications(report, "swap") == 0);
  // relu-t keeps the type only for the square input: one Transpose node added.
  CHECK(applications(report, "relu-t") >= 1);
  CHECK(teg.egraph->num_nodes() == nodes + 1);
  for (egraph::NodeId n : teg.egraph->class_nodes(teg.egraph->find(teg.outputs[1])))
    CHECK(egraph::symbol_name(teg.egraph->op(n)) == "Relu");
  CHECK(teg.data(teg.outputs[2]).types[0].str() == "f32[3,3]");
}

TEST_CASE("rule rewrites: attribute variables and conditions on them") {
  ir::GraphBuilder b("g");
  ir::ValueId x = b.input("x", DType::f32, {Dim(2), Dim(3), Dim(4)});
  ir::ValueId t1 = b.op("Transpose", {x}, {{"perm", std::vector<int64_t>{1, 2, 0}}});
  ir::ValueId t2 = b.op("Transpose", {t1}, {{"perm", std::vector<int64_t>{2, 0, 1}}});
  ir::ValueId t3 = b.op("Transpose", {t1}, {{"perm", std::vector<int64_t>{1, 2, 0}}});
  b.output(t2);
  b.output(t3);
  ir::Graph g = std::move(b).finish();
  TensorEGraph teg = from_graph(g);
  // Composing two permutations is a computed attribute; the identity is a condition.
  egraph::RunReport report = saturate(teg, R"(
    (rewrite tt-compose (Transpose :perm ?q (Transpose :perm ?p ?x))
      (Transpose :perm ((nth ?p (nth ?q 0)) (nth ?p (nth ?q 1)) (nth ?p (nth ?q 2))) ?x)
      :when (rank ?x 3))
    (rewrite t-identity (Transpose :perm ?p ?x) ?x :when (= ?p (list 0 1 2))))");
  CHECK(applications(report, "tt-compose") >= 2);
  CHECK(same_class(teg, teg.outputs[0], teg.value_node[x]));
  CHECK_FALSE(same_class(teg, teg.outputs[1], teg.value_node[x]));
  ir::Graph small = to_graph(teg, test::smallest_choice(teg));
  auto inputs = test::random_inputs(g);
  CHECK(test::same_results(ir::Interpreter(g).run(inputs), ir::Interpreter(small).run(inputs)));
}

TEST_CASE("rule rewrites: a multi-pattern rule merges two MatMuls sharing an input") {
  ir::GraphBuilder b("g");
  ir::ValueId x = b.input("x", DType::f32, {Dim(2), Dim(3)});
  ir::ValueId w1 =
      b.weight("w1", Tensor::from_doubles(DType::f32, {3, 4}, std::vector<double>(12, 0.5)));
  ir::ValueId w2 = b.weight("w2", Tensor::from_doubles(DType::f32, {3, 2}, {1, 2, 3, 4, 5, 6}));
  b.output(b.op("MatMul", {x, w1}));
  b.output(b.op("MatMul", {x, w2}));
  ir::Graph g = std::move(b).finish();
  TensorEGraph teg = from_graph(g);
  egraph::RunReport report = saturate(teg, R"(
    (rewrite merge-matmul (multi (MatMul ?x ?w1) (MatMul ?x ?w2))
      (multi (Proj :index 0 (Split :axis -1 :split ((dim ?w1 -1) (dim ?w2 -1))
                                   (MatMul ?x (Concat :axis -1 ?w1 ?w2))))
             (Proj :index 1 (Split :axis -1 :split ((dim ?w1 -1) (dim ?w2 -1))
                                   (MatMul ?x (Concat :axis -1 ?w1 ?w2)))))
      :when (distinct ?w1 ?w2) (rank ?w1 2) (rank ?w2 2) (rank ?x 2)))",
                                      1);  // the merged MatMul matches again: one round is enough
  CHECK(applications(report, "merge-matmul") >= 1);
  // Each output's class now holds a projection of the merged MatMul's split.
  bool found = false;
  for (egraph::NodeId n : teg.egraph->class_nodes(teg.egraph->find(teg.outputs[1])))
    found = found || egraph::symbol_name(teg.egraph->op(n)) == "Proj";
  CHECK(found);
  // Choosing the projections gives a graph that computes the same.
  const egraph::EGraph& eg = *teg.egraph;
  NodeChoice fallback = original_choice(teg);
  NodeChoice merged = [&](egraph::EClassId c) {
    for (egraph::NodeId n : eg.class_nodes(eg.find(c)))
      if (egraph::symbol_name(eg.op(n)) == "Proj") return n;
    return fallback(c);
  };
  ir::Graph out = to_graph(teg, merged);
  bool has_split = false;
  for (const ir::Node& n : out.nodes()) has_split = has_split || n.op_type == "Split";
  CHECK(has_split);
  auto inputs = test::random_inputs(g);
  CHECK(test::same_results(ir::Interpreter(g).run(inputs), ir::Interpreter(out).run(inputs)));
}
