// Import and export on graphs the repository carries: graphs built with the builder API, the
// bundled example models, and small ONNX models written in old opsets (upgrade at import).
#include <onnx/checker.h>

#include <catch2/catch.hpp>

#include "frontend/onnx_export.h"
#include "frontend/onnx_import.h"
#include "frontend/test_data.h"
#include "ir/builder.h"
#include "ir/interpreter.h"
#include "tests/frontend/graph_compare.h"
#include "tests/frontend/model_builder.h"
#include "tests/test_data.h"

namespace {

using namespace eqfuse;
using namespace eqfuse::test;
namespace fs = std::filesystem;
using ir::DType;
using ir::Tensor;

ir::Graph roundtrip(const ir::Graph& g, const fs::path& dir) {
  onnx::ModelProto proto = frontend::export_model_proto(g, dir);
  CHECK_NOTHROW(onnx::checker::check_model(proto));
  std::string bytes;
  proto.SerializeToString(&bytes);
  return frontend::import_onnx_bytes(bytes, dir, "roundtrip");
}

Tensor iota(DType dtype, std::vector<int64_t> dims, double scale = 0.1) {
  Tensor t(dtype, std::move(dims));
  for (int64_t i = 0; i < t.numel(); ++i) t.set(i, scale * static_cast<double>(i % 17) - 0.5);
  return t;
}

ir::Graph import_model(onnx::ModelProto& m, const std::string& name) {
  fs::path file = temp_dir("roundtrip") / (name + ".onnx");
  write_file(file, bytes_of(m));
  return frontend::import_onnx(file);
}

}  // namespace

TEST_CASE("a builder graph survives export and import", "[frontend][roundtrip]") {
  ir::GraphBuilder b("built");
  ir::ValueId x = b.input("x", DType::f32, {ir::Dim::symbol("batch"), ir::Dim(4)});
  ir::ValueId w = b.weight("w", iota(DType::f32, {4, 4}));
  ir::ValueId bias = b.weight("bias", iota(DType::f32, {4}));
  ir::ValueId y = b.op("Add", {b.op("MatMul", {x, w}), bias});
  y = b.op("Relu", {y});
  y = b.op("Unsqueeze", {y}, {{"axes", std::vector<int64_t>{1}}});
  y = b.op("Squeeze", {y}, {{"axes", std::vector<int64_t>{1}}});
  y = b.op("Clip", {y}, {{"min", 0.125}, {"max", 0.5}});
  y = b.op("Slice", {y},
           {{"starts", std::vector<int64_t>{1}},
            {"ends", std::vector<int64_t>{3}},
            {"axes", std::vector<int64_t>{1}}});
  b.output(y);
  ir::Graph g = std::move(b).finish();
  ir::Graph back = roundtrip(g, temp_dir("built"));
  check_same_structure(g, back);
  Tensor input = iota(DType::f32, {3, 4});
  auto expected = ir::Interpreter(g).run({input});
  auto got = ir::Interpreter(back).run({input});
  check_same_outputs(got, expected, 0, 0);
}

TEST_CASE("opaque nodes and their attributes are written back unchanged", "[frontend][roundtrip]") {
  auto m = onnx_model();
  auto* o = m.add_opset_import();
  o->set_domain("com.example");
  o->set_version(1);
  add_input(m, "x", {2, 3});
  auto* n = add_node(m, "Fancy", {"x"}, {"y"}, "fancy");
  n->set_domain("com.example");
  add_ints_attr(n, "knobs", {1, 2, 3});
  auto* g = n->add_attribute();
  g->set_name("body");
  g->set_type(onnx::AttributeProto::GRAPH);
  g->mutable_g()->set_name("inner");
  add_node(m, "Relu", {"y"}, {"z"}, "relu");
  add_value(m.mutable_graph()->mutable_value_info(), "y", onnx::TensorProto::FLOAT, {2, 3});
  add_output(m, "z", {2, 3});
  ir::Graph imported = import_model(m, "opaque");
  REQUIRE(imported.nodes().size() == 2);
  CHECK(imported.nodes()[0].is_opaque());
  CHECK(imported.value(imported.nodes()[0].outputs[0]).type.str() == "f32[2,3]");
  onnx::ModelProto out = frontend::export_model_proto(imported, temp_dir("opaque"));
  const auto& node = out.graph().node(0);
  CHECK(node.domain() == "com.example");
  CHECK(node.op_type() == "Fancy");
  REQUIRE(node.attribute_size() == 2);
  CHECK(node.attribute(0).SerializeAsString() ==
        m.graph().node(0).attribute(1).SerializeAsString());
  CHECK(node.attribute(1).SerializeAsString() ==
        m.graph().node(0).attribute(0).SerializeAsString());
  ir::Graph back = roundtrip(imported, temp_dir("opaque"));
  check_same_structure(imported, back);
}

TEST_CASE("the bundled example models run and survive a round trip", "[frontend][roundtrip]") {
  for (const char* name : {"mlp", "pointwise_chain"}) {
    INFO(name);
    fs::path dir = source_dir() / "examples" / "models" / name;
    ir::Graph g = frontend::import_onnx(dir / "model.onnx");
    for (const ir::Node& n : g.nodes()) CHECK(n.op_type != "Constant");
    frontend::TestDataSet data = frontend::read_test_data_set(dir / "test_data_set_0");
    std::vector<Tensor> inputs = frontend::bind_inputs(g, data.inputs);
    auto got = ir::Interpreter(g).run(inputs);
    check_same_outputs(got, tensors_of(data.outputs), 1e-3, 1e-4);
    ir::Graph back = roundtrip(g, dir);
    check_same_structure(g, back);
    check_same_outputs(ir::Interpreter(back).run(inputs), got, 0, 0);
  }
}

TEST_CASE("constant chains, Constant and Identity on weights fold at import", "[frontend]") {
  auto m = onnx_model(13);
  add_input(m, "x", {2, 3, 4});
  add_float_initializer(m, "w", {4}, 1.0f);
  add_node(m, "Identity", {"w"}, {"w2"}, "id");
  add_node(m, "Shape", {"x"}, {"s"});
  add_int64_initializer(m, "zero", {0});
  add_node(m, "Gather", {"s", "zero"}, {"d0"});
  auto* c = add_node(m, "Constant", {}, {"minus_one"});
  auto* a = c->add_attribute();
  a->set_name("value_ints");
  a->set_type(onnx::AttributeProto::INTS);
  a->add_ints(-1);
  add_node(m, "Concat", {"d0", "minus_one"}, {"shape"})->add_attribute()->CopyFrom([] {
    onnx::AttributeProto axis;
    axis.set_name("axis");
    axis.set_type(onnx::AttributeProto::INT);
    axis.set_i(0);
    return axis;
  }());
  add_node(m, "Add", {"x", "w2"}, {"sum"});
  add_node(m, "Reshape", {"sum", "shape"}, {"y"}, "reshape");
  add_output(m, "y", {2, 12});
  ir::Graph g = import_model(m, "folding");
  REQUIRE(g.nodes().size() == 2);
  CHECK(g.nodes()[0].op_type == "Add");
  CHECK(g.nodes()[1].op_type == "Reshape");
  // The folded shape is a constant, so it becomes Reshape's `shape` attribute.
  CHECK(g.nodes()[1].inputs.size() == 1);
  CHECK(g.nodes()[1].attrs.get_ints("shape") == std::vector<int64_t>{2, -1});
  CHECK(g.value(g.outputs()[0]).type.str() == "f32[2,12]");
}

TEST_CASE("attribute-like constant inputs become attributes and go back on export",
          "[frontend][upgrade]") {
  auto m = onnx_model(13);
  add_input(m, "x", {2, 1, 3});
  add_int64_initializer(m, "axes", {1});
  add_node(m, "Squeeze", {"x", "axes"}, {"s"}, "squeeze");
  add_node(m, "ReduceSum", {"s", "axes"}, {"y"}, "sum");
  add_output(m, "y", {2, 1});
  ir::Graph g = import_model(m, "axes");
  REQUIRE(g.nodes().size() == 2);
  CHECK(g.nodes()[0].inputs.size() == 1);
  CHECK(g.nodes()[0].attrs.get_ints("axes") == std::vector<int64_t>{1});
  CHECK(g.nodes()[1].attrs.get_ints("axes") == std::vector<int64_t>{1});
  CHECK(g.nodes()[1].attrs.get_int("keepdims", 0) == 1);  // schema default made explicit
  onnx::ModelProto out = frontend::export_model_proto(g, temp_dir("axes"));
  CHECK_NOTHROW(onnx::checker::check_model(out));
  CHECK(out.graph().node(0).input_size() == 2);
  ir::Graph back = roundtrip(g, temp_dir("axes"));
  check_same_structure(g, back);
}

TEST_CASE("Reshape's constant shape becomes its attribute and an input again on export",
          "[frontend][upgrade]") {
  auto m = onnx_model(13);
  add_input(m, "x", {2, 3, 4});
  add_int64_initializer(m, "shape", {0, -1});
  add_node(m, "Reshape", {"x", "shape"}, {"y"}, "reshape");
  add_output(m, "y", {2, 12});
  ir::Graph g = import_model(m, "reshape");
  REQUIRE(g.nodes().size() == 1);
  CHECK(g.nodes()[0].inputs.size() == 1);
  CHECK(g.nodes()[0].attrs.get_ints("shape") == std::vector<int64_t>{0, -1});
  CHECK(g.value(g.outputs()[0]).type.str() == "f32[2,12]");
  onnx::ModelProto out = frontend::export_model_proto(g, temp_dir("reshape"));
  CHECK_NOTHROW(onnx::checker::check_model(out));
  CHECK(out.graph().node(0).input_size() == 2);
  ir::Graph back = roundtrip(g, temp_dir("reshape"));
  check_same_structure(g, back);
}

TEST_CASE("old-opset Softmax coerced to 2-D is upgraded", "[frontend][upgrade]") {
  auto m = onnx_model(11);
  add_input(m, "x", {2, 3, 4});
  auto* n = add_node(m, "Softmax", {"x"}, {"y"}, "sm");
  auto* a = n->add_attribute();
  a->set_name("axis");
  a->set_type(onnx::AttributeProto::INT);
  a->set_i(1);
  add_output(m, "y", {2, 3, 4});
  ir::Graph g = import_model(m, "softmax11");
  CHECK(g.value(g.outputs()[0]).type.str() == "f32[2,3,4]");
  Tensor x = iota(DType::f32, {2, 3, 4});
  Tensor y = ir::Interpreter(g).run({x}).at(0);
  // Softmax over each trailing block of 12.
  for (int b = 0; b < 2; ++b) {
    double sum = 0;
    for (int i = 0; i < 12; ++i) sum += std::exp(x.get(b * 12 + i));
    for (int i = 0; i < 12; ++i) {
      CHECK(y.get(b * 12 + i) == Approx(std::exp(x.get(b * 12 + i)) / sum).epsilon(1e-5));
    }
  }
}

TEST_CASE("old-opset Pad, Clip, Dropout and Upsample are upgraded", "[frontend][upgrade]") {
  auto m = onnx_model(9);
  add_input(m, "x", {1, 1, 2, 2});
  auto* pad = add_node(m, "Pad", {"x"}, {"p"}, "pad");
  add_ints_attr(pad, "pads", {0, 0, 1, 0, 0, 0, 0, 1});
  auto* value = pad->add_attribute();
  value->set_name("value");
  value->set_type(onnx::AttributeProto::FLOAT);
  value->set_f(5.0f);
  auto* clip = add_node(m, "Clip", {"p"}, {"c"}, "clip");
  auto* mx = clip->add_attribute();
  mx->set_name("max");
  mx->set_type(onnx::AttributeProto::FLOAT);
  mx->set_f(4.0f);
  auto* drop = add_node(m, "Dropout", {"c"}, {"d"}, "drop");
  auto* ratio = drop->add_attribute();
  ratio->set_name("ratio");
  ratio->set_type(onnx::AttributeProto::FLOAT);
  ratio->set_f(0.3f);
  auto* scales = m.mutable_graph()->add_initializer();
  scales->set_name("scales");
  scales->set_data_type(onnx::TensorProto::FLOAT);
  scales->add_dims(4);
  for (float s : {1.f, 1.f, 2.f, 2.f}) scales->add_float_data(s);
  add_node(m, "Upsample", {"d", "scales"}, {"y"}, "up");
  add_output(m, "y", {1, 1, 6, 6});
  ir::Graph g = import_model(m, "old9");
  CHECK(g.value(g.outputs()[0]).type.str() == "f32[1,1,6,6]");
  bool has_resize = false;
  for (const ir::Node& n : g.nodes()) has_resize = has_resize || n.op_type == "Resize";
  CHECK(has_resize);
  Tensor x = Tensor::from_doubles(DType::f32, {1, 1, 2, 2}, {1, 2, 3, 4});
  Tensor y = ir::Interpreter(g).run({x}).at(0);
  // Padded (top row and right column of 5, clipped to 4), then each pixel doubled.
  std::vector<double> padded = {4, 4, 4, 1, 2, 4, 3, 4, 4};
  for (int r = 0; r < 6; ++r) {
    for (int c = 0; c < 6; ++c) CHECK(y.get(r * 6 + c) == padded[(r / 2) * 3 + c / 2]);
  }
  ir::Graph back = roundtrip(g, temp_dir("old9"));
  check_same_outputs(ir::Interpreter(back).run({x}), {y}, 0, 0);
}
