// If, Loop and Scan imported with their bodies and run by the interpreter, including bodies
// that read values of enclosing graphs (an outer intermediate, an outer weight, and from a
// nested If two scopes down), and after an export/re-import round trip.
#include <catch2/catch.hpp>

#include "frontend/onnx_export.h"
#include "frontend/onnx_import.h"
#include "ir/interpreter.h"
#include "tests/frontend/model_builder.h"

namespace {

using namespace eqfuse;
using namespace eqfuse::test;

void typed(google::protobuf::RepeatedPtrField<onnx::ValueInfoProto>* to, const std::string& name,
           int elem, std::vector<int64_t> dims) {
  auto* v = to->Add();
  v->set_name(name);
  auto* t = v->mutable_type()->mutable_tensor_type();
  t->set_elem_type(elem);
  auto* s = t->mutable_shape();
  for (int64_t d : dims) s->add_dim()->set_dim_value(d);
}

onnx::NodeProto* node_in(onnx::GraphProto* g, const std::string& op,
                         std::vector<std::string> inputs, std::vector<std::string> outputs) {
  auto* n = g->add_node();
  n->set_op_type(op);
  for (const auto& i : inputs) n->add_input(i);
  for (const auto& o : outputs) n->add_output(o);
  return n;
}

onnx::GraphProto* graph_attr(onnx::NodeProto* n, const std::string& name) {
  auto* a = n->add_attribute();
  a->set_name(name);
  a->set_type(onnx::AttributeProto::GRAPH);
  return a->mutable_g();
}

constexpr int kF = onnx::TensorProto::FLOAT;
constexpr int kB = onnx::TensorProto::BOOL;
constexpr int kI = onnx::TensorProto::INT64;

// y = x*w; r_if = If(cond, y+w, -x); (acc, rows) = Loop(n) { acc += y; row = If(true, acc*w, acc) }
onnx::ModelProto control_flow_model() {
  auto m = onnx_model(17);
  auto* g = m.mutable_graph();
  typed(g->mutable_input(), "x", kF, {3});
  typed(g->mutable_input(), "cond", kB, {});
  typed(g->mutable_input(), "n", kI, {});
  add_float_initializer(m, "w", {3}, 1.0f);  // [1, 2, 3]
  node_in(g, "Mul", {"x", "w"}, {"y"});

  auto* iff = node_in(g, "If", {"cond"}, {"r_if"});
  auto* then_g = graph_attr(iff, "then_branch");
  then_g->set_name("then");
  node_in(then_g, "Add", {"y", "w"}, {"t"});
  typed(then_g->mutable_output(), "t", kF, {3});
  auto* else_g = graph_attr(iff, "else_branch");
  else_g->set_name("else");
  node_in(else_g, "Neg", {"x"}, {"e"});
  typed(else_g->mutable_output(), "e", kF, {3});

  auto* loop = node_in(g, "Loop", {"n", "", "x"}, {"acc", "rows"});
  auto* body = graph_attr(loop, "body");
  body->set_name("loop_body");
  typed(body->mutable_input(), "i", kI, {});
  typed(body->mutable_input(), "c", kB, {});
  typed(body->mutable_input(), "acc_in", kF, {3});
  node_in(body, "Identity", {"c"}, {"c_out"});
  node_in(body, "Add", {"acc_in", "y"}, {"acc_out"});
  auto* inner = node_in(body, "If", {"c"}, {"row"});
  auto* inner_then = graph_attr(inner, "then_branch");
  inner_then->set_name("inner_then");
  node_in(inner_then, "Mul", {"acc_out", "w"}, {"s"});
  typed(inner_then->mutable_output(), "s", kF, {3});
  auto* inner_else = graph_attr(inner, "else_branch");
  inner_else->set_name("inner_else");
  node_in(inner_else, "Identity", {"acc_out"}, {"s2"});
  typed(inner_else->mutable_output(), "s2", kF, {3});
  typed(body->mutable_output(), "c_out", kB, {});
  typed(body->mutable_output(), "acc_out", kF, {3});
  typed(body->mutable_output(), "row", kF, {3});

  typed(g->mutable_output(), "r_if", kF, {3});
  typed(g->mutable_output(), "acc", kF, {3});
  auto* rows = g->add_output();
  rows->set_name("rows");
  rows->mutable_type()->mutable_tensor_type()->set_elem_type(kF);
  return m;
}

std::vector<ir::Tensor> inputs(bool cond, int64_t n) {
  ir::Tensor c(ir::DType::boolean, {});
  c.set(0, cond ? 1 : 0);
  return {ir::Tensor::from_doubles(ir::DType::f32, {3}, {1, -1, 2}), c,
          ir::Tensor::from_vector<int64_t>(ir::DType::i64, {}, {n})};
}

void check_outputs(const ir::Graph& g) {
  ir::Interpreter interp(g);
  auto out = interp.run(inputs(true, 3));
  REQUIRE(out.size() == 3);
  CHECK(out[0].to_doubles() == std::vector<double>{2, 0, 9});
  CHECK(out[1].to_doubles() == std::vector<double>{4, -7, 20});
  CHECK(out[2].dims() == std::vector<int64_t>{3, 3});
  CHECK(out[2].to_doubles() == std::vector<double>{2, -6, 24, 3, -10, 42, 4, -14, 60});
  auto other = interp.run(inputs(false, 1));
  CHECK(other[0].to_doubles() == std::vector<double>{-1, 1, -2});
  CHECK(other[1].to_doubles() == std::vector<double>{2, -3, 8});
  CHECK(other[2].dims() == std::vector<int64_t>{1, 3});
}

}  // namespace

TEST_CASE("If and Loop bodies run, reading enclosing scopes", "[frontend][fast]") {
  std::string bytes = bytes_of(control_flow_model());
  ir::Graph g = frontend::import_onnx_bytes(bytes, ".", "control_flow");
  CHECK(g.value(g.outputs()[0]).type.str() == "f32[3]");
  check_outputs(g);
  ir::Graph back =
      frontend::import_onnx_bytes(frontend::export_onnx_bytes(g, "."), ".", "round trip");
  check_outputs(back);
}

TEST_CASE("Scan runs its body over slices, in both directions", "[frontend][fast]") {
  auto m = onnx_model(17);
  auto* g = m.mutable_graph();
  typed(g->mutable_input(), "init", kF, {2});
  typed(g->mutable_input(), "xs", kF, {3, 2});
  auto* scan = node_in(g, "Scan", {"init", "xs"}, {"sum", "partial"});
  auto* a = scan->add_attribute();
  a->set_name("num_scan_inputs");
  a->set_type(onnx::AttributeProto::INT);
  a->set_i(1);
  auto* dirs = scan->add_attribute();
  dirs->set_name("scan_input_directions");
  dirs->set_type(onnx::AttributeProto::INTS);
  dirs->add_ints(1);
  auto* body = graph_attr(scan, "body");
  body->set_name("scan_body");
  typed(body->mutable_input(), "s_in", kF, {2});
  typed(body->mutable_input(), "x", kF, {2});
  node_in(body, "Add", {"s_in", "x"}, {"s_out"});
  node_in(body, "Identity", {"s_out"}, {"p"});
  typed(body->mutable_output(), "s_out", kF, {2});
  typed(body->mutable_output(), "p", kF, {2});
  typed(g->mutable_output(), "sum", kF, {2});
  typed(g->mutable_output(), "partial", kF, {3, 2});
  ir::Graph graph = frontend::import_onnx_bytes(bytes_of(m), ".", "scan");
  CHECK(graph.value(graph.outputs()[1]).type.str() == "f32[3,2]");
  auto out = ir::Interpreter(graph).run(
      {ir::Tensor::from_doubles(ir::DType::f32, {2}, {0, 0}),
       ir::Tensor::from_doubles(ir::DType::f32, {3, 2}, {1, 2, 3, 4, 5, 6})});
  CHECK(out[0].to_doubles() == std::vector<double>{9, 12});
  // Reversed input: partial sums of rows 2, 2+1, 2+1+0.
  CHECK(out[1].to_doubles() == std::vector<double>{5, 6, 8, 10, 9, 12});
}
