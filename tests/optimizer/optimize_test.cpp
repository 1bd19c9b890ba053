// optimize() on builder-made graphs (no ../shared needed): the pipeline lowers predicted time
// where the rules allow it, keeps the outputs (verified in the interpreter), folds weight-only
// subgraphs (BatchNormalization into Conv), is deterministic, and answers bad input with a clear
// error or a stop reason.
#include <catch2/catch.hpp>
#include <filesystem>
#include <fstream>
#include <set>

#include "frontend/onnx_export.h"
#include "ir/builder.h"
#include "ir/interpreter.h"
#include "ir/printer.h"
#include "optimizer/optimize.h"
#include "rules/library.h"
#include "support/error.h"
#include "tests/optimizer/test_helpers.h"

using namespace eqfuse;

namespace {

ir::Tensor filled(std::vector<int64_t> dims, double start, double step) {
  ir::Tensor t(ir::DType::f32, dims);
  for (int64_t i = 0; i < t.numel(); ++i) t.set(i, start + step * static_cast<double>(i % 7));
  return t;
}

// Relu(Transpose(Transpose(x))) + Neg(Neg(y)): the library removes both pairs.
ir::Graph double_transpose_graph() {
  ir::GraphBuilder b("double_transpose");
  ir::ValueId x = b.input("x", ir::DType::f32, {ir::Dim(64), ir::Dim(32)});
  ir::ValueId y = b.input("y", ir::DType::f32, {ir::Dim(64), ir::Dim(32)});
  ir::AttrList perm = {{"perm", std::vector<int64_t>{1, 0}}};
  ir::ValueId t = b.op("Transpose", {b.op("Transpose", {x}, perm)}, perm);
  b.output(b.op("Add", {b.op("Relu", {t}), b.op("Neg", {b.op("Neg", {y})})}));
  return std::move(b).finish();
}

// Conv followed by BatchNormalization, with weights.
ir::Graph conv_bn_graph() {
  ir::GraphBuilder b("conv_bn");
  ir::ValueId x = b.input("x", ir::DType::f32, {ir::Dim(1), ir::Dim(3), ir::Dim(8), ir::Dim(8)});
  ir::ValueId w = b.weight("w", filled({4, 3, 3, 3}, -0.3, 0.1));
  ir::ValueId bias = b.weight("b", filled({4}, 0.1, 0.05));
  ir::ValueId conv = b.op("Conv", {x, w, bias});
  ir::ValueId s = b.weight("scale", filled({4}, 0.5, 0.1));
  ir::ValueId bb = b.weight("shift", filled({4}, -0.2, 0.1));
  ir::ValueId m = b.weight("mean", filled({4}, 0.05, 0.02));
  ir::ValueId v = b.weight("var", filled({4}, 0.8, 0.1));
  b.output(b.op("BatchNormalization", {conv, s, bb, m, v}));
  return std::move(b).finish();
}

// GELU as PyTorch exports it, x * 0.5 * (1 + erf(x / sqrt 2)), after a MatMul: the library
// reassociates its products, and fusion makes one contraction kernel of it.
ir::Graph gelu_graph() {
  ir::GraphBuilder b("gelu");
  ir::ValueId x = b.input("x", ir::DType::f32, {ir::Dim(16), ir::Dim(32)});
  ir::ValueId w = b.weight("w", filled({32, 32}, -0.3, 0.1));
  auto scalar = [&](const char* name, double v) {
    return b.weight(name, ir::Tensor::from_doubles(ir::DType::f32, {}, {v}));
  };
  ir::ValueId m = b.op("MatMul", {x, w});
  ir::ValueId erf = b.op("Erf", {b.op("Div", {m, scalar("sqrt2", 1.4142135)})});
  ir::ValueId half = b.op("Mul", {m, scalar("half", 0.5)});
  b.output(b.op("Mul", {half, b.op("Add", {erf, scalar("one", 1.0)})}));
  return std::move(b).finish();
}

// SqueezeNet's fire module before a pool: two convolutions, each with its Relu, concatenated,
// then a MaxPool (which takes no producers into its loops).
ir::Graph fire_graph() {
  ir::GraphBuilder b("fire");
  ir::ValueId x = b.input("x", ir::DType::f32, {ir::Dim(1), ir::Dim(16), ir::Dim(28), ir::Dim(28)});
  ir::ValueId w1 = b.weight("w1", filled({32, 16, 1, 1}, -0.3, 0.1));
  ir::ValueId b1 = b.weight("b1", filled({32}, 0.1, 0.05));
  ir::ValueId w3 = b.weight("w3", filled({32, 16, 3, 3}, -0.2, 0.07));
  ir::ValueId b3 = b.weight("b3", filled({32}, -0.1, 0.05));
  ir::ValueId e1 = b.op("Relu", {b.op("Conv", {x, w1, b1})});
  ir::ValueId e3 =
      b.op("Relu", {b.op("Conv", {x, w3, b3}, {{"pads", std::vector<int64_t>{1, 1, 1, 1}}})});
  ir::ValueId cat = b.op("Concat", {e1, e3}, {{"axis", int64_t{1}}});
  b.output(b.op(
      "MaxPool", {cat},
      {{"kernel_shape", std::vector<int64_t>{2, 2}}, {"strides", std::vector<int64_t>{2, 2}}}));
  return std::move(b).finish();
}

size_t ops_named(const ir::Graph& g, const std::string& op) {
  size_t n = 0;
  for (const ir::Node& node : g.nodes()) n += node.op_type == op;
  return n;
}

}  // namespace

TEST_CASE("optimize removes what the proved rules remove, and verifies it", "[optimizer][fast]") {
  ir::Graph g = double_transpose_graph();
  optimizer::OptimizeResult r = optimizer::optimize(g);
  // Six ops, five launches: the first Transpose stores its elements where the second puts them
  // (codegen's layout copy by its producer), so the second runs as nothing.
  CHECK(r.report.kernels_before == 5);
  CHECK(r.report.kernels_after == 1);  // Relu and Add, fused into one kernel
  CHECK(ops_named(r.graph, "Kernel") == 1);
  CHECK(ops_named(r.graph, "Transpose") == 0);
  CHECK(ops_named(r.graph, "Neg") == 0);
  CHECK(r.report.predicted_ms_after < r.report.predicted_ms_before);
  CHECK(r.report.verified == "passed");
  CHECK(r.report.rules > 200);
  auto inputs = test::random_inputs(g);
  CHECK(test::same_results(ir::Interpreter(g).run(inputs), ir::Interpreter(r.graph).run(inputs)));
}

TEST_CASE("BatchNormalization folds into the Conv's weights at optimize time",
          "[optimizer][fast]") {
  ir::Graph g = conv_bn_graph();
  optimizer::OptimizeResult r = optimizer::optimize(g);
  CHECK(ops_named(r.graph, "BatchNormalization") == 0);
  INFO(ir::print_graph(r.graph));
  std::printf("predicted %g ms, kernels %zu\n", r.report.predicted_ms_after,
              r.report.kernels_after);
  CHECK(r.report.kernels_after == 1);  // the Conv alone, its folded weights computed
  CHECK(r.report.weights_folded > 0);
  CHECK(r.report.verified == "passed");
  auto inputs = test::random_inputs(g);
  CHECK(test::same_results(ir::Interpreter(g).run(inputs), ir::Interpreter(r.graph).run(inputs),
                           1e-4));
}

TEST_CASE("an omitted input before a given one survives extraction: Clip(x, , max), Resize",
          "[optimizer][fast]") {
  // The omitted input is an e-class of its own (None) with no type; extraction once left it out,
  // so every term above it looked cyclic and optimize failed on such models.
  ir::GraphBuilder b;
  ir::ValueId x = b.input("x", ir::DType::f32, {ir::Dim(1), ir::Dim(2), ir::Dim(3), ir::Dim(4)});
  ir::ValueId top = b.input("top", ir::DType::f32, {});
  ir::ValueId clipped = b.op("Clip", {x, ir::kNoValue, top});
  ir::ValueId scales =
      b.weight("scales", ir::Tensor::from_doubles(ir::DType::f32, {4}, {1, 1, 2, 2}));
  b.output(b.op("Resize", {clipped, ir::kNoValue, scales}, {{"mode", std::string("linear")}}));
  ir::Graph g = std::move(b).finish();
  optimizer::OptimizeResult r = optimizer::optimize(g);
  CHECK(r.report.verified == "passed");
  auto inputs = test::random_inputs(g);
  CHECK(test::same_results(ir::Interpreter(g).run(inputs), ir::Interpreter(r.graph).run(inputs)));
}

TEST_CASE("graphs with repeated node names export with unique ones", "[optimizer][fast]") {
  // to_graph names nodes after their op, so two Adds that rules built are both "Add". ONNX
  // Runtime refuses a model with two nodes of one name: export numbers the repeats.
  ir::GraphBuilder b("repeated_names");
  ir::ValueId x = b.input("x", ir::DType::f32, {ir::Dim(4)});
  ir::ValueId y = b.op("Add", {x, x}, {}, "Add");
  b.output(b.op("Add", {y, x}, {}, "Add"));
  ir::Graph g = std::move(b).finish();
  onnx::ModelProto proto = frontend::export_model_proto(g, std::filesystem::temp_directory_path());
  REQUIRE(proto.graph().node_size() == 2);
  std::set<std::string> names;
  for (const auto& node : proto.graph().node()) CHECK(names.insert(node.name()).second);
  CHECK(names.count("Add"));
}

TEST_CASE("optimize is deterministic", "[optimizer][fast]") {
  ir::Graph g = conv_bn_graph();
  auto dir = std::filesystem::temp_directory_path();
  std::string a = frontend::export_onnx_bytes(optimizer::optimize(g).graph, dir);
  std::string b = frontend::export_onnx_bytes(optimizer::optimize(g).graph, dir);
  CHECK(a == b);
}

TEST_CASE("bad options and unproved rules get clear errors; limits are stop reasons",
          "[optimizer][fast]") {
  ir::Graph g = double_transpose_graph();
  optimizer::OptimizeOptions zero;
  zero.iterations = 0;
  CHECK_THROWS_AS(optimizer::optimize(g, zero), Error);

  auto file = std::filesystem::temp_directory_path() / "eqfuse-optimize-unproved.rules";
  {
    std::ofstream out(file);
    out << "(rewrite relu-distributes (Relu (Add ?a ?b)) (Add (Relu ?a) (Relu ?b)))\n";
  }
  optimizer::OptimizeOptions wrong;
  wrong.rule_files = {file.string()};
  try {
    optimizer::optimize(g, wrong);
    FAIL("an unproved rule was used");
  } catch (const Error& e) {
    CHECK(e.kind() == Error::Kind::CheckFailed);
    CHECK(std::string(e.what()).find("relu-distributes") != std::string::npos);
    CHECK(std::string(e.what()).find("refuted") != std::string::npos);
  }
  std::filesystem::remove(file);

  optimizer::OptimizeOptions one;
  one.iterations = 1;
  optimizer::OptimizeResult r = optimizer::optimize(g, one);
  CHECK(r.report.iterations <= 1);
  CHECK(r.report.verified == "passed");
  CHECK(r.report.extraction.stop_reason == "converged");

  // An extraction with no steps to spend keeps the best start as it is: a stop, not an error.
  optimizer::OptimizeOptions no_search;
  no_search.extraction.dag_work = 0;
  optimizer::OptimizeResult unsearched = optimizer::optimize(g, no_search);
  CHECK(unsearched.report.extraction.stop_reason.starts_with("work limit"));
  CHECK(unsearched.report.verified == "passed");
}

TEST_CASE("the report explains each kernel by the rules behind its ops", "[optimizer][fast]") {
  ir::Graph g = gelu_graph();
  optimizer::OptimizeOptions one, two;
  two.threads = 2;
  optimizer::OptimizeResult r = optimizer::optimize(g, one);
  const auto& kernels = r.report.explained.kernels;
  REQUIRE(kernels.size() == ops_named(r.graph, "Kernel"));
  REQUIRE(!kernels.empty());
  rules::RuleSet library = rules::library_rules();
  std::vector<std::string> names = r.graph.unique_node_names();
  for (const optimizer::NodeExplanation& k : kernels) {
    INFO(k.node);
    CHECK(std::find(names.begin(), names.end(), k.node) != names.end());
    CHECK(k.kind == "contraction");
    CHECK(k.predicted_ms > 0);
    // Each fused op is the model's or a library rule's; the chain is those rules, once each.
    REQUIRE(!k.fused_ops.empty());
    std::vector<std::string> chain;
    size_t from_input = 0;
    for (const optimizer::FusedOp& op : k.fused_ops) {
      if (op.rule.empty()) {
        ++from_input;
        continue;
      }
      CHECK(library.find(op.rule) != nullptr);
      if (std::find(chain.begin(), chain.end(), op.rule) == chain.end()) chain.push_back(op.rule);
    }
    CHECK(k.ops_from_input() == from_input);
    CHECK(k.rules == chain);
  }
  // The kernel's ops cover the model's: MatMul, Div, Erf and the products and sum, some of them
  // rebuilt by the rules.
  std::multiset<std::string> ops;
  for (const auto& op : kernels[0].fused_ops) ops.insert(op.op);
  CHECK(ops.count("MatMul") == 1);
  CHECK(ops.count("Erf") == 1);
  // Provenance does not depend on the thread count.
  optimizer::OptimizeResult r2 = optimizer::optimize(g, two);
  REQUIRE(r2.report.explained.kernels.size() == kernels.size());
  for (size_t i = 0; i < kernels.size(); ++i) {
    CHECK(r2.report.explained.kernels[i].rules == kernels[i].rules);
    CHECK(r2.report.explained.kernels[i].fused_ops.size() == kernels[i].fused_ops.size());
  }
  // Without fusion the rules' nodes are listed one by one, each with its rule.
  optimizer::OptimizeOptions algebra;
  algebra.fusion = false;
  optimizer::OptimizeResult a = optimizer::optimize(g, algebra);
  CHECK(a.report.explained.kernels.empty());
  for (const optimizer::NodeExplanation& n : a.report.explained.rewritten) {
    REQUIRE(n.rules.size() == 1);
    CHECK(library.find(n.rules[0]) != nullptr);
  }
}

TEST_CASE("a kernel of the model's own ops names no rule", "[optimizer][fast]") {
  optimizer::OptimizeOptions fusion_only;
  fusion_only.algebra = false;
  optimizer::OptimizeResult r = optimizer::optimize(gelu_graph(), fusion_only);
  REQUIRE(r.report.explained.kernels.size() == 1);
  const optimizer::NodeExplanation& k = r.report.explained.kernels[0];
  CHECK(k.rules.empty());
  CHECK(k.fused_ops.size() == 6);  // MatMul Div Erf Mul Add Mul
  CHECK(k.ops_from_input() == 6);
  CHECK(r.report.explained.rewritten.empty());
}

TEST_CASE("a node a rule removed names that rule, though the rule made no node",
          "[optimizer][fast]") {
  // Transpose(Transpose(x)) -> x and Neg(Neg(y)) -> y merge classes and add nothing: only the
  // chain of merges can name them.
  ir::Graph g = double_transpose_graph();
  for (bool fusion : {false, true}) {
    INFO("fusion " << fusion);
    optimizer::OptimizeOptions options;
    options.fusion = fusion;
    optimizer::OptimizeResult r = optimizer::optimize(g, options);
    const auto& replaced = r.report.explained.replaced;
    std::vector<std::string> names = g.unique_node_names();
    rules::RuleSet library = rules::library_rules();
    bool transpose = false, neg = false;
    for (const optimizer::Replacement& e : replaced) {
      INFO(e.node << " " << e.op << " now " << e.now);
      CHECK(std::find(names.begin(), names.end(), e.node) != names.end());
      REQUIRE(!e.rules.empty());
      for (const std::string& rule : e.rules) CHECK(library.find(rule) != nullptr);
      if (e.op == "Transpose" && e.now == "input x") transpose = true;
      if (e.op == "Neg" && e.now == "input y") {
        neg = true;
        CHECK(e.rules == std::vector<std::string>{"neg-neg"});
      }
    }
    CHECK(transpose);
    CHECK(neg);
    // The same at two threads.
    options.threads = 2;
    optimizer::OptimizeResult r2 = optimizer::optimize(g, options);
    REQUIRE(r2.report.explained.replaced.size() == replaced.size());
    for (size_t i = 0; i < replaced.size(); ++i) {
      CHECK(r2.report.explained.replaced[i].node == replaced[i].node);
      CHECK(r2.report.explained.replaced[i].rules == replaced[i].rules);
    }
  }
  // Fusion alone replaces nothing by a rule.
  optimizer::OptimizeOptions fusion_only;
  fusion_only.algebra = false;
  CHECK(optimizer::optimize(g, fusion_only).report.explained.replaced.empty());
}

namespace {

// LayerNorm written out (ReduceMean, Sub, Pow, ReduceMean, Add, Sqrt, Div, Mul, Add) on the last
// axis of x, as PyTorch exports it before opset 17.
ir::ValueId layer_norm(ir::GraphBuilder& b, ir::ValueId x, const std::string& tag) {
  auto scalar = [&](const std::string& name, double v) {
    return b.weight(tag + name, ir::Tensor::from_doubles(ir::DType::f32, {}, {v}));
  };
  ir::AttrList axes = {{"axes", std::vector<int64_t>{-1}}};
  ir::ValueId centred = b.op("Sub", {x, b.op("ReduceMean", {x}, axes)});
  ir::ValueId var = b.op("ReduceMean", {b.op("Pow", {centred, scalar("two", 2)})}, axes);
  ir::ValueId norm =
      b.op("Div", {centred, b.op("Sqrt", {b.op("Add", {var, scalar("eps", 1e-5)})})});
  return b.op("Add", {b.op("Mul", {norm, b.weight(tag + "g", filled({32}, 0.5, 0.1))}),
                      b.weight(tag + "b", filled({32}, -0.1, 0.05))});
}

}  // namespace

TEST_CASE("a written-out LayerNorm fuses whole, without recomputing the one before it",
          "[optimizer][fast]") {
  // y1 = LN(x); y2 = LN(y1 + y1 @ w + bias): y1 is read by the MatMul and by the residual add.
  ir::GraphBuilder b("two_layer_norms");
  ir::ValueId x = b.input("x", ir::DType::f32, {ir::Dim(16), ir::Dim(32)});
  ir::ValueId y1 = layer_norm(b, x, "ln1.");
  ir::ValueId h = b.op("Add", {b.op("MatMul", {y1, b.weight("w", filled({32, 32}, -0.3, 0.1))}),
                               b.weight("bias", filled({32}, 0.1, 0.02))});
  b.output(layer_norm(b, b.op("Add", {y1, h}), "ln2."));
  ir::Graph g = std::move(b).finish();
  optimizer::OptimizeOptions fusion_only;
  fusion_only.algebra = false;
  optimizer::OptimizeResult r = optimizer::optimize(g, fusion_only);
  CHECK(r.report.verified == "passed");
  // One reduction kernel for LN1, one contraction kernel with the residual and LN2 as its
  // epilogue (growing past y1, read by both, would recompute LN1: 4 kernels before).
  INFO(ir::print_graph(r.graph));
  CHECK(r.report.kernels_after == 2);
  auto inputs = test::random_inputs(g);
  CHECK(test::same_results(ir::Interpreter(g).run(inputs), ir::Interpreter(r.graph).run(inputs)));

  // Algebra then fusion: the algebra's best graph splits LN1's bias add out of the residual, and
  // fusing that graph leaves 3 kernels. Joint keeps the original graph's kernels too: saturation
  // makes some of its e-nodes congruent to new ones, and fusion reads them as the ones kept
  // (EGraph::live_node), so the 2-kernel graph is there and extraction takes it.
  optimizer::OptimizeOptions sequential;
  sequential.sequential = true;
  optimizer::OptimizeResult seq = optimizer::optimize(g, sequential);
  optimizer::OptimizeResult joint = optimizer::optimize(g, {});
  CHECK(seq.report.iterations >= 6);  // the saturation depth at which this case appeared
  CHECK(seq.report.kernels_after == 3);
  CHECK(joint.report.kernels_after == 2);
  CHECK(joint.report.predicted_ms_after == Approx(r.report.predicted_ms_after));
  CHECK(joint.report.predicted_ms_after < seq.report.predicted_ms_after);
}

TEST_CASE("a Concat its producers store is free: each convolution keeps its Relu",
          "[optimizer][fast]") {
  // Priced as a copy, the Concat drew the extraction to Relu(Concat(conv, conv)), one more
  // pass over the Concat; priced as codegen runs it (its parts stored in place), the two
  // kernels of a convolution and its Relu write their halves and the Concat does nothing.
  ir::Graph g = fire_graph();
  optimizer::OptimizeResult r = optimizer::optimize(g);
  INFO(ir::print_graph(r.graph));
  CHECK(ops_named(r.graph, "Relu") == 0);
  CHECK(ops_named(r.graph, "Kernel") == 2);
  CHECK(ops_named(r.graph, "Concat") == 1);
  CHECK(r.report.kernels_before == 5);  // two Conv, two Relu, the MaxPool: the Concat is free
  CHECK(r.report.kernels_after == 3);
  CHECK(r.report.verified == "passed");
  auto inputs = test::random_inputs(g);
  CHECK(test::same_results(ir::Interpreter(g).run(inputs), ir::Interpreter(r.graph).run(inputs)));
}
