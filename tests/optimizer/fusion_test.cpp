// Fusion in the e-graph (optimizer/fusion.h) and the kernel op it builds on (ir/kernel_body.h):
// bodies are checked and canonical, a kernel runs as its body, the pipeline fuses builder-made
// graphs into the kernels of each kind, a planted wrong applier is refused before its kernel can
// join an e-class, kernels go to valid ONNX and come back, and the result is deterministic.
#include <onnx/checker.h>

#include <catch2/catch.hpp>
#include <filesystem>
#include <fstream>
#include <regex>

#include "cost/cost_model.h"
#include "egraph/symbol.h"
#include "frontend/onnx_export.h"
#include "frontend/onnx_import.h"
#include "ir/attr_text.h"
#include "ir/builder.h"
#include "ir/interpreter.h"
#include "ir/kernel_body.h"
#include "optimizer/fusion.h"
#include "optimizer/kernel_kind.h"
#include "optimizer/optimize.h"
#include "rules/parser.h"
#include "support/error.h"
#include "tests/optimizer/test_helpers.h"

using namespace eqfuse;
namespace fs = std::filesystem;

namespace {

ir::Tensor filled(std::vector<int64_t> dims, double start, double step) {
  ir::Tensor t(ir::DType::f32, dims);
  for (int64_t i = 0; i < t.numel(); ++i) t.set(i, start + step * static_cast<double>(i % 7));
  return t;
}

std::vector<ir::Dim> dims(std::initializer_list<int64_t> d) {
  std::vector<ir::Dim> out;
  for (int64_t x : d) out.emplace_back(x);
  return out;
}

// A pointwise chain: Relu(Tanh(x * Sigmoid(x)) + y) - y.
ir::Graph pointwise_graph() {
  ir::GraphBuilder b("pointwise");
  ir::ValueId x = b.input("x", ir::DType::f32, dims({16, 32}));
  ir::ValueId y = b.input("y", ir::DType::f32, dims({16, 32}));
  ir::ValueId silu = b.op("Mul", {x, b.op("Sigmoid", {x})});
  b.output(b.op("Sub", {b.op("Relu", {b.op("Add", {b.op("Tanh", {silu}), y})}), y}));
  return std::move(b).finish();
}

// Relu(x W + b): a GEMM with its epilogue.
ir::Graph linear_relu_graph() {
  ir::GraphBuilder b("linear_relu");
  ir::ValueId x = b.input("x", ir::DType::f32, dims({8, 64}));
  ir::ValueId w = b.weight("w", filled({64, 32}, -0.3, 0.1));
  ir::ValueId bias = b.weight("b", filled({32}, 0.1, 0.05));
  b.output(b.op("Relu", {b.op("Add", {b.op("MatMul", {x, w}), bias})}));
  return std::move(b).finish();
}

// softmax(q k^T / 4) v over (batch, heads, seq, dim).
ir::Graph attention_graph() {
  ir::GraphBuilder b("attention");
  ir::ValueId q = b.input("q", ir::DType::f32, dims({2, 4, 16, 8}));
  ir::ValueId k = b.input("k", ir::DType::f32, dims({2, 4, 16, 8}));
  ir::ValueId v = b.input("v", ir::DType::f32, dims({2, 4, 16, 8}));
  ir::ValueId kt = b.op("Transpose", {k}, {{"perm", std::vector<int64_t>{0, 1, 3, 2}}});
  ir::ValueId scores = b.op("Div", {b.op("MatMul", {q, kt}), b.weight("scale", filled({}, 4, 0))});
  b.output(b.op("MatMul", {b.op("Softmax", {scores}, {{"axis", int64_t{-1}}}), v}));
  return std::move(b).finish();
}

size_t ops_named(const ir::Graph& g, const std::string& op) {
  size_t n = 0;
  for (const ir::Node& node : g.nodes()) n += node.op_type == op;
  return n;
}

// The kernel bodies present anywhere in the e-graph.
std::set<std::string> kernel_bodies(const optimizer::TensorEGraph& teg) {
  std::set<std::string> out;
  const egraph::EGraph& eg = *teg.egraph;
  for (egraph::EClassId c : eg.classes())
    for (egraph::NodeId n : eg.class_nodes(c)) {
      if (egraph::symbol_name(eg.op(n)) != ir::kKernelOp) continue;
      for (const auto& [k, v] : egraph::attr_list(eg.attrs(n)))
        out.insert(
            std::get<std::string>(*ir::decode_attr(egraph::symbol_name(v), ir::AttrKind::String)));
    }
  return out;
}

// The unit with its body canonical (inputs renumbered by first appearance).
optimizer::FusionUnit canonical(const std::string& body, std::vector<egraph::EClassId> inputs) {
  std::vector<size_t> order;
  std::string text = ir::canonical_body_text(parse_sexpr(body), &order);
  optimizer::FusionUnit u{text, {}};
  for (size_t k : order) u.inputs.push_back(inputs[k]);
  return u;
}

// Substitutes `with` for ?slot in `body`, shifting `with`'s inputs by `shift`.
std::string substitute(const std::string& body, size_t slot, const std::string& with,
                       size_t shift) {
  std::string shifted = std::regex_replace(with, std::regex(R"(\?(\d+))"), "?s$1");
  std::smatch m;
  std::string out;
  std::string rest = shifted;
  while (std::regex_search(rest, m, std::regex(R"(\?s(\d+))"))) {
    out += m.prefix().str() + "?" + std::to_string(std::stoul(m[1].str()) + shift);
    rest = m.suffix().str();
  }
  shifted = out + rest;
  return std::regex_replace(body, std::regex("\\?" + std::to_string(slot) + "(?![0-9])"), shifted);
}

// A planted applier that forgets to renumber the producer's inputs: its ?0 then reads the
// consumer's ?0.
optimizer::FusionUnit unshifted_merge(const optimizer::FusionUnit& consumer, size_t slot,
                                      const optimizer::FusionUnit& producer) {
  std::vector<egraph::EClassId> inputs = consumer.inputs;
  inputs.insert(inputs.end(), producer.inputs.begin(), producer.inputs.end());
  return canonical(substitute(consumer.body, slot, producer.body, 0), inputs);
}

// A sound applier that writes what it builds differently: the root's operands swapped when the
// root is an Add.
optimizer::FusionUnit commuting_merge(const optimizer::FusionUnit& consumer, size_t slot,
                                      const optimizer::FusionUnit& producer) {
  std::vector<egraph::EClassId> inputs = consumer.inputs;
  inputs.insert(inputs.end(), producer.inputs.begin(), producer.inputs.end());
  std::string body = substitute(consumer.body, slot, producer.body, consumer.inputs.size());
  Sexpr t = parse_sexpr(body);
  if (t.items.size() == 3 && t.items[0].is_symbol("Add")) std::swap(t.items[1], t.items[2]);
  return canonical(t.str(), inputs);
}

}  // namespace

TEST_CASE("a kernel body is checked and written one way", "[optimizer][fusion][fast]") {
  auto body = ir::kernel_body("(Add (Mul ?0 ?1) (Mul ?0 ?1))");
  CHECK(body->arity == 2);
  CHECK(body->ops == 2);  // the shared product is computed once
  CHECK_THROWS_WITH(ir::kernel_body("(Relu ?1)"), Catch::Contains("order of first appearance"));
  CHECK_THROWS_WITH(ir::kernel_body("(Frobnicate ?0)"), Catch::Contains("Frobnicate"));
  CHECK_THROWS_WITH(ir::kernel_body("(Relu ?0"), Catch::Contains("kernel body"));
  CHECK_THROWS_WITH(ir::kernel_body("?0"), Catch::Contains("at least one op"));
  CHECK_THROWS_WITH(ir::kernel_body("(Relu :alpha 2 ?0)"), Catch::Contains("no attribute"));
  std::vector<size_t> order;
  CHECK(ir::canonical_body_text(parse_sexpr("(Sub ?3 (Relu ?1))"), &order) == "(Sub ?0 (Relu ?1))");
  CHECK(order == std::vector<size_t>{3, 1});
}

TEST_CASE("a Kernel node runs, infers and inlines as its body", "[optimizer][fusion][fast]") {
  ir::GraphBuilder b("kernel");
  ir::ValueId x = b.input("x", ir::DType::f32, dims({4, 8}));
  ir::ValueId y = b.input("y", ir::DType::f32, dims({8}));
  b.output(b.op("Kernel", {x, y}, {{"body", std::string("(Relu (Sub ?0 (Mul ?1 ?0)))")}}));
  ir::Graph g = std::move(b).finish();
  CHECK(g.value(g.outputs()[0]).type.str() == "f32[4,8]");
  ir::Graph inlined = ir::inline_kernels(g);
  CHECK(ops_named(inlined, "Kernel") == 0);
  CHECK(inlined.nodes().size() == 3);
  auto inputs = test::random_inputs(g);
  CHECK(test::same_results(ir::Interpreter(g).run(inputs), ir::Interpreter(inlined).run(inputs)));
}

TEST_CASE("fusion makes one kernel of each kind on builder-made graphs",
          "[optimizer][fusion][fast]") {
  SECTION("pointwise") {
    ir::Graph g = pointwise_graph();
    optimizer::OptimizeResult r = optimizer::optimize(g);
    CHECK(r.report.kernels_before == 6);
    CHECK(r.report.kernels_after == 1);
    CHECK(r.report.kernel_kinds["pointwise"] == 1);
    CHECK(r.report.verified == "passed");
    CHECK(r.report.predicted_ms_after < r.report.predicted_ms_before);
  }
  SECTION("contraction with its epilogue") {
    optimizer::OptimizeResult r = optimizer::optimize(linear_relu_graph());
    CHECK(r.report.kernels_after == 1);
    CHECK(r.report.kernel_kinds["contraction"] == 1);
    CHECK(r.report.verified == "passed");
  }
  SECTION("attention") {
    optimizer::OptimizeResult r = optimizer::optimize(attention_graph());
    CHECK(r.report.kernels_after == 1);
    CHECK(r.report.kernel_kinds["attention"] == 1);
    CHECK(r.report.verified == "passed");
  }
  SECTION("no fusion without the phase") {
    optimizer::OptimizeOptions o;
    o.fusion = false;
    optimizer::OptimizeResult r = optimizer::optimize(pointwise_graph(), o);
    CHECK(ops_named(r.graph, "Kernel") == 0);
  }
}

TEST_CASE("attention takes Q scaled before Q.K into its one kernel; a library GEMM does not",
          "[optimizer][fusion][fast]") {
  // The exports scale Q, not the scores: the attention kind computes its operands as it loads
  // them (:operands computed), so the scale joins the kernel, which stays one attention stage.
  ir::GraphBuilder b("scaled_q");
  ir::ValueId q = b.input("q", ir::DType::f32, dims({2, 4, 16, 8}));
  ir::ValueId k = b.input("k", ir::DType::f32, dims({2, 4, 16, 8}));
  ir::ValueId v = b.input("v", ir::DType::f32, dims({2, 4, 16, 8}));
  ir::ValueId kt = b.op("Transpose", {k}, {{"perm", std::vector<int64_t>{0, 1, 3, 2}}});
  ir::ValueId qs = b.op("Div", {q, b.weight("scale", filled({}, 4, 0))});
  ir::ValueId scores = b.op("MatMul", {qs, kt});
  b.output(b.op("MatMul", {b.op("Softmax", {scores}, {{"axis", int64_t{-1}}}), v}));
  optimizer::OptimizeResult r = optimizer::optimize(std::move(b).finish());
  CHECK(r.report.kernels_after == 1);
  CHECK(r.report.kernel_kinds["attention"] == 1);
  CHECK(r.report.verified == "passed");
  // The kinds directly: a Div under attention's Q is admitted, under a lone MatMul (a library
  // call, which reads its operands stored) it is not.
  ir::GraphBuilder kb("kinds");
  ir::ValueId kq = kb.input("q", ir::DType::f32, dims({2, 16, 8}));
  ir::ValueId kk = kb.input("k", ir::DType::f32, dims({2, 8, 16}));
  ir::ValueId ks = kb.weight("s", filled({}, 4, 0));
  kb.output(
      kb.op("Kernel", {kq, ks, kk},
            {{"body", std::string("(MatMul (Softmax :axis -1 (MatMul (Div ?0 ?1) ?2)) ?0)")}}));
  kb.output(
      kb.op("Kernel", {kq, ks, kk}, {{"body", std::string("(Relu (MatMul (Div ?0 ?1) ?2))")}}));
  ir::Graph kinds_graph = std::move(kb).finish();
  CHECK(optimizer::kernel_node_kind(kinds_graph, kinds_graph.nodes()[0]) == "attention");
  CHECK(!optimizer::kernel_node_kind(kinds_graph, kinds_graph.nodes()[1]));
  // So optimize never puts a Div under a lone MatMul's operand.
  ir::GraphBuilder c("scaled_a");
  ir::ValueId a = c.input("a", ir::DType::f32, dims({16, 8}));
  ir::ValueId w = c.weight("w", filled({8, 12}, 5, 0));
  c.output(c.op("Relu", {c.op("MatMul", {c.op("Div", {a, c.weight("s", filled({}, 4, 0))}), w})}));
  ir::Graph lone = std::move(c).finish();
  optimizer::OptimizeResult lr = optimizer::optimize(lone);
  CHECK(lr.report.verified == "passed");
  for (const ir::Node& n : lr.graph.nodes()) {
    if (n.op_type != "Kernel") continue;
    const std::string body = n.attrs.get_string("body", "");
    INFO(body);
    CHECK(body.find("(MatMul (Div") == std::string::npos);
  }
}

TEST_CASE("fusion forms only the kernel kinds the rule files declare",
          "[optimizer][fusion][fast]") {
  auto declare = [](const std::string& text) {
    return std::make_shared<rules::FusionKinds>(rules::parse_rules(text, "<kinds>").fusion);
  };
  SECTION("no contraction kind: the linear layer's epilogue stays apart from the GEMM") {
    optimizer::OptimizeOptions o;
    o.fusion_options.kinds = declare("(kernel-kind pointwise (stage pointwise))");
    optimizer::OptimizeResult r = optimizer::optimize(linear_relu_graph(), o);
    CHECK(r.report.kernels_after == 2);
    CHECK(r.report.kernel_kinds.count("contraction") == 0);
    CHECK(r.report.verified == "passed");
  }
  SECTION("no attention kind: attention is not one kernel") {
    optimizer::OptimizeOptions o;
    auto kinds = std::make_shared<rules::FusionKinds>(rules::library_fusion_kinds());
    std::erase_if(kinds->kinds,
                  [](const rules::KernelKindDecl& k) { return k.name == "attention"; });
    o.fusion_options.kinds = kinds;
    optimizer::OptimizeResult r = optimizer::optimize(attention_graph(), o);
    CHECK(r.report.kernels_after > 1);
    CHECK(r.report.kernel_kinds.count("attention") == 0);
    CHECK(r.report.verified == "passed");
  }
  SECTION("a kind of the user's own, from a rule file given to optimize") {
    std::filesystem::path file = std::filesystem::temp_directory_path() / "eqfuse_kinds.rules";
    std::ofstream(file) << "(fusion-ops contraction MatMul Gemm)\n"
                           "(kernel-kind gemm-epilogue (stage pointwise) (contract contraction)"
                           " (stage pointwise))\n";
    optimizer::OptimizeOptions o;
    o.rule_files = {file.string()};
    optimizer::OptimizeResult r = optimizer::optimize(linear_relu_graph(), o);
    CHECK(r.report.kernels_after == 1);
    CHECK(r.report.kernel_kinds["gemm-epilogue"] == 1);
    CHECK(r.report.verified == "passed");
    std::filesystem::remove(file);
  }
}

TEST_CASE("a planted wrong applier is refused before its kernel joins an e-class",
          "[optimizer][fusion][fast]") {
  // y - Relu(x): merging Relu into Sub without renumbering computes y - Relu(y).
  ir::GraphBuilder b("sub_relu");
  ir::ValueId x = b.input("x", ir::DType::f32, dims({4, 8}));
  ir::ValueId y = b.input("y", ir::DType::f32, dims({4, 8}));
  b.output(b.op("Sub", {y, b.op("Relu", {x})}));
  ir::Graph g = std::move(b).finish();

  optimizer::FusionOptions wrong;
  wrong.merge = unshifted_merge;
  wrong.use_proof_cache = false;
  optimizer::TensorEGraph teg = optimizer::from_graph(g);
  optimizer::FusionReport report = optimizer::fuse(teg, wrong);
  REQUIRE(!report.refused.empty());
  CHECK(report.refused[0].kernel == "(Sub ?0 (Relu ?0))");
  CHECK_THAT(report.refused[0].reason, Catch::StartsWith("refuted"));
  // Not in the e-graph at all: neither extracted nor spread to other classes by congruence,
  // whatever the cost model would have made of it.
  CHECK(kernel_bodies(teg).count("(Sub ?0 (Relu ?0))") == 0);
  CHECK(kernel_bodies(teg).empty());

  // The whole pipeline with the planted applier: refused, and the output is still right.
  optimizer::OptimizeOptions o;
  o.fusion_options = wrong;
  optimizer::OptimizeResult r = optimizer::optimize(g, o);
  CHECK(!r.report.fusion.refused.empty());
  CHECK(r.report.verified == "passed");
  CHECK(ops_named(r.graph, "Kernel") == 0);
}

TEST_CASE("a sound kernel that is not the substitution is proved by the rule prover",
          "[optimizer][fusion][fast]") {
  ir::GraphBuilder b("add_relu");
  ir::ValueId x = b.input("x", ir::DType::f32, dims({4, 8}));
  ir::ValueId y = b.input("y", ir::DType::f32, dims({4, 8}));
  b.output(b.op("Add", {y, b.op("Relu", {x})}));
  ir::Graph g = std::move(b).finish();
  optimizer::FusionOptions commuting;
  commuting.merge = commuting_merge;
  commuting.use_proof_cache = false;
  optimizer::TensorEGraph teg = optimizer::from_graph(g);
  optimizer::FusionReport report = optimizer::fuse(teg, commuting);
  CHECK(report.refused.empty());
  CHECK(report.proved_z3 >= 1);
  CHECK(kernel_bodies(teg).count("(Add (Relu ?0) ?1)") == 1);
}

TEST_CASE("kernels go to valid ONNX as function calls and come back intact",
          "[optimizer][fusion][fast]") {
  optimizer::OptimizeResult r = optimizer::optimize(linear_relu_graph());
  REQUIRE(ops_named(r.graph, "Kernel") == 1);
  fs::path dir = fs::temp_directory_path() / "eqfuse-fusion-test";
  fs::create_directories(dir);
  onnx::ModelProto proto = frontend::export_model_proto(r.graph, dir);
  CHECK_NOTHROW(onnx::checker::check_model(proto));
  REQUIRE(proto.functions_size() == 1);
  CHECK(proto.functions(0).domain() == ir::kKernelDomain);
  CHECK(proto.graph().node(0).domain() == ir::kKernelDomain);
  fs::path file = dir / "linear_relu.onnx";
  frontend::export_onnx(r.graph, file);
  ir::Graph back = frontend::import_onnx(file);
  REQUIRE(ops_named(back, "Kernel") == 1);
  const ir::Node* k = nullptr;
  for (const ir::Node& n : back.nodes())
    if (n.op_type == "Kernel") k = &n;
  for (const ir::Node& n : r.graph.nodes())
    if (n.op_type == "Kernel")
      CHECK(n.attrs.get_string("body", "") == k->attrs.get_string("body", "x"));
  auto inputs = test::random_inputs(r.graph);
  CHECK(
      test::same_results(ir::Interpreter(r.graph).run(inputs), ir::Interpreter(back).run(inputs)));
  fs::remove_all(dir);
}

TEST_CASE("fusion is deterministic", "[optimizer][fusion][fast]") {
  ir::Graph g = attention_graph();
  optimizer::OptimizeOptions one, two;
  two.threads = 2;
  fs::path dir = fs::temp_directory_path();
  std::string a = frontend::export_onnx_bytes(optimizer::optimize(g, one).graph, dir);
  std::string b = frontend::export_onnx_bytes(optimizer::optimize(g, one).graph, dir);
  std::string c = frontend::export_onnx_bytes(optimizer::optimize(g, two).graph, dir);
  CHECK(a == b);
  CHECK(a == c);
}

TEST_CASE("a fused GEMM keeps its wave quantization and saves its epilogue's traffic",
          "[optimizer][fusion][fast]") {
  cost::CostModel model(cost::DeviceProfile::load("h200"));
  ir::GraphBuilder b("gemm");
  ir::ValueId x = b.input("x", ir::DType::f32, dims({1000, 512}));
  ir::ValueId w = b.input("w", ir::DType::f32, dims({512, 1000}));
  ir::ValueId mm = b.op("MatMul", {x, w});
  ir::ValueId relu = b.op("Relu", {mm});
  b.output(relu);
  b.output(b.op("Kernel", {x, w}, {{"body", std::string("(Relu (MatMul ?0 ?1))")}}));
  ir::Graph g = std::move(b).finish();
  cost::NodeCost gemm = model.node_cost(g, g.node(0));
  cost::NodeCost act = model.node_cost(g, g.node(1));
  cost::NodeCost fused = model.node_cost(g, g.node(2));
  CHECK(fused.compute_seconds == Approx(gemm.compute_seconds + act.compute_seconds));
  CHECK(fused.seconds < gemm.seconds + act.seconds);
  CHECK(fused.seconds >= gemm.seconds);
}
