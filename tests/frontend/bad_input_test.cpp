// Each kind of bad input gets a clear eqfuse::Error naming the file, node or value; never a
// crash.
#include <catch2/catch.hpp>
#include <cstring>

#include "frontend/onnx_export.h"
#include "frontend/onnx_import.h"
#include "ir/interpreter.h"
#include "support/error.h"
#include "tests/frontend/model_builder.h"
#include "tests/test_data.h"

namespace {

using namespace eqfuse;
using namespace eqfuse::test;
namespace fs = std::filesystem;

// Imports bytes written to a file; returns the error (fails the test when none).
Error import_error(const std::string& bytes, const std::string& file_name = "model.onnx") {
  fs::path dir = temp_dir("bad_input");
  fs::path file = dir / file_name;
  write_file(file, bytes);
  try {
    frontend::import_onnx(file);
  } catch (const Error& e) {
    INFO(e.what());
    CHECK(std::string(e.what()).find(file.string()) != std::string::npos);
    return e;
  }
  FAIL("import succeeded on bad input");
  return Error("unreachable");
}

bool says(const Error& e, const std::string& text) {
  INFO(e.what());
  return std::string(e.what()).find(text) != std::string::npos;
}

onnx::ModelProto relu_model() {
  auto m = onnx_model();
  add_input(m, "x", {2, 3});
  add_node(m, "Relu", {"x"}, {"y"}, "relu");
  add_output(m, "y", {2, 3});
  return m;
}

}  // namespace

TEST_CASE("an empty file is not a model", "[frontend][bad_input]") {
  Error e = import_error("");
  CHECK(says(e, "empty"));
  CHECK(e.exit_code() == 2);
}

TEST_CASE("a garbage file is not a model", "[frontend][bad_input]") {
  Error e = import_error("this is certainly not a protobuf \xff\xff\xff\xff\x01\x02");
  CHECK(says(e, "not an ONNX model"));
  CHECK(e.exit_code() == 2);
}

TEST_CASE("a model with no graph is refused", "[frontend][bad_input]") {
  onnx::ModelProto m;
  m.set_ir_version(8);
  Error e = import_error(bytes_of(m));
  CHECK(says(e, "graph"));
}

TEST_CASE("every truncation of a model is an error, never a crash", "[frontend][bad_input]") {
  auto m = relu_model();
  add_float_initializer(m, "w", {2, 3}, 1.0f);
  add_node(m, "Add", {"y", "w"}, {"z"}, "add");
  m.mutable_graph()->mutable_output(0)->set_name("z");
  std::string bytes = bytes_of(m);
  for (size_t cut = 1; cut < bytes.size(); cut += 7) {
    fs::path file = temp_dir("truncated") / "model.onnx";
    write_file(file, bytes.substr(0, cut));
    try {
      frontend::import_onnx(file);
    } catch (const Error&) {
      // expected for most cuts; a cut at a field boundary may still parse as a smaller model
    }
  }
  Error e = import_error(bytes.substr(0, bytes.size() / 2));
  CHECK(e.exit_code() == 2);
}

TEST_CASE("nodes out of order are sorted; a real cycle is an error", "[frontend][bad_input]") {
  auto m = onnx_model();
  add_input(m, "x", {2, 3});
  add_node(m, "Relu", {"a"}, {"y"}, "second");
  add_node(m, "Neg", {"x"}, {"a"}, "first");
  add_output(m, "y", {2, 3});
  fs::path file = temp_dir("order") / "model.onnx";
  write_file(file, bytes_of(m));
  ir::Graph g = frontend::import_onnx(file);
  REQUIRE(g.nodes().size() == 2);
  CHECK(g.nodes()[0].name == "first");

  auto c = onnx_model();
  add_input(c, "x", {2, 3});
  add_node(c, "Add", {"x", "b"}, {"a"}, "one");
  add_node(c, "Relu", {"a"}, {"b"}, "two");
  add_node(c, "Relu", {"a"}, {"y"}, "three");
  add_output(c, "y", {2, 3});
  Error e = import_error(bytes_of(c));
  CHECK(says(e, "cycle"));
  CHECK(says(e, "'one'"));
}

TEST_CASE("a dangling value name is an error naming it", "[frontend][bad_input]") {
  auto m = onnx_model();
  add_input(m, "x", {2, 3});
  add_node(m, "Add", {"x", "nowhere"}, {"y"}, "adder");
  add_output(m, "y", {2, 3});
  Error e = import_error(bytes_of(m));
  CHECK(says(e, "'nowhere'"));
  CHECK(says(e, "'adder'"));

  auto o = relu_model();
  o.mutable_graph()->mutable_output(0)->set_name("missing_output");
  CHECK(says(import_error(bytes_of(o)), "'missing_output'"));
}

TEST_CASE("names an If body reads from the outer graph are not dangling", "[frontend]") {
  auto m = onnx_model();
  add_input(m, "x", {2, 3});
  add_input(m, "cond", {}, onnx::TensorProto::BOOL);
  add_node(m, "Neg", {"x"}, {"outer"}, "neg");
  auto* node = add_node(m, "If", {"cond"}, {"y"}, "branch");
  for (const char* branch : {"then_branch", "else_branch"}) {
    auto* a = node->add_attribute();
    a->set_name(branch);
    a->set_type(onnx::AttributeProto::GRAPH);
    auto* body = a->mutable_g();
    body->set_name(branch);
    auto* n = body->add_node();
    n->set_op_type(std::string(branch) == "then_branch" ? "Relu" : "Abs");
    n->add_input("outer");  // from the enclosing graph
    n->add_output(std::string(branch) + "_out");
    add_value(body->mutable_output(), std::string(branch) + "_out", onnx::TensorProto::FLOAT,
              {2, 3});
  }
  add_output(m, "y", {2, 3});
  fs::path file = temp_dir("if_body") / "model.onnx";
  write_file(file, bytes_of(m));
  ir::Graph g = frontend::import_onnx(file);
  REQUIRE(g.nodes().size() == 2);
  CHECK(g.nodes()[1].op_type == "If");
  CHECK(!g.nodes()[1].is_opaque());  // in the op table, with both bodies imported
  CHECK(g.nodes()[1].subgraphs.size() == 2);
  CHECK(g.value(g.outputs()[0]).type.str() == "f32[2,3]");
  ir::Tensor x = ir::Tensor::from_doubles(ir::DType::f32, {2, 3}, {1, -2, 3, -4, 5, -6});
  ir::Tensor yes(ir::DType::boolean, {});
  yes.set(0, 1);
  ir::Tensor no(ir::DType::boolean, {});
  CHECK(ir::Interpreter(g).run({x, yes})[0].to_doubles() == std::vector<double>{0, 2, 0, 4, 0, 6});
  CHECK(ir::Interpreter(g).run({x, no})[0].to_doubles() == std::vector<double>{1, 2, 3, 4, 5, 6});

  // A body reading a name defined nowhere is dangling.
  auto* body = m.mutable_graph()->mutable_node(1)->mutable_attribute(0)->mutable_g();
  body->mutable_node(0)->set_input(0, "ghost");
  Error e = import_error(bytes_of(m));
  CHECK(says(e, "'ghost'"));
}

TEST_CASE("inconsistent shapes are an error naming the node or value", "[frontend][bad_input]") {
  auto m = onnx_model();
  add_input(m, "a", {2, 3});
  add_input(m, "b", {4, 5});
  add_node(m, "Add", {"a", "b"}, {"y"}, "bad_add");
  add_output(m, "y", {4, 5});
  Error e = import_error(bytes_of(m));
  CHECK((says(e, "bad_add") || says(e, "'y'")));

  // A declared output shape that contradicts the op.
  auto d = relu_model();
  d.mutable_graph()
      ->mutable_output(0)
      ->mutable_type()
      ->mutable_tensor_type()
      ->mutable_shape()
      ->mutable_dim(1)
      ->set_dim_value(7);
  Error e2 = import_error(bytes_of(d));
  CHECK(says(e2, "'y'"));
}

TEST_CASE("an unsupported element type is an error naming the value", "[frontend][bad_input]") {
  auto m = onnx_model();
  add_input(m, "text", {2}, onnx::TensorProto::STRING);
  add_node(m, "Identity", {"text"}, {"y"});
  add_output(m, "y", {2}, onnx::TensorProto::STRING);
  Error e = import_error(bytes_of(m));
  CHECK(says(e, "'text'"));
  CHECK(says(e, "STRING"));
  CHECK(e.kind() == Error::Kind::Unsupported);

  auto c = relu_model();
  auto* t = c.mutable_graph()->add_initializer();
  t->set_name("z");
  t->set_data_type(onnx::TensorProto::COMPLEX64);
  t->add_dims(1);
  t->add_float_data(1);
  t->add_float_data(2);
  CHECK(says(import_error(bytes_of(c)), "'z'"));
}

TEST_CASE("an attribute of the wrong type is an error naming node and attribute",
          "[frontend][bad_input]") {
  auto m = onnx_model();
  add_input(m, "x", {2, 3});
  auto* n = add_node(m, "Transpose", {"x"}, {"y"}, "tr");
  auto* a = n->add_attribute();
  a->set_name("perm");
  a->set_type(onnx::AttributeProto::FLOAT);
  a->set_f(1.0f);
  add_output(m, "y", {3, 2});
  Error e = import_error(bytes_of(m));
  CHECK(says(e, "'tr'"));
  CHECK(says(e, "'perm'"));
}

TEST_CASE("initializer data that does not fit its shape is an error", "[frontend][bad_input]") {
  auto m = relu_model();
  auto* t = m.mutable_graph()->add_initializer();
  t->set_name("w");
  t->set_data_type(onnx::TensorProto::FLOAT);
  t->add_dims(4);
  t->set_raw_data(std::string(7, '\0'));
  CHECK(says(import_error(bytes_of(m)), "'w'"));
}

TEST_CASE("external data must stay inside the model's folder", "[frontend][bad_input]") {
  for (const char* location : {"/etc/passwd", "../outside.bin", "sub/../../outside.bin"}) {
    auto m = relu_model();
    add_external_float_initializer(m, "w", {2}, location);
    Error e = import_error(bytes_of(m));
    CHECK(says(e, "'w'"));
    CHECK((says(e, "absolute") || says(e, "escapes")));
  }
}

TEST_CASE("missing external weights import; reading them says which file", "[frontend]") {
  auto m = relu_model();
  add_external_float_initializer(m, "w", {2, 3}, "weights.bin");
  add_node(m, "Add", {"y", "w"}, {"z"}, "add");
  m.mutable_graph()->mutable_output(0)->set_name("z");
  fs::path dir = temp_dir("external");
  fs::remove(dir / "weights.bin");
  write_file(dir / "model.onnx", bytes_of(m));
  ir::Graph g = frontend::import_onnx(dir / "model.onnx");
  auto w = g.find_value("w");
  REQUIRE(w);
  CHECK(g.value(*w).external.has_value());
  CHECK(g.parameter_count() == 6);
  // Written to another folder, the missing file is named as beside it (a location may not leave
  // the folder), and the model imports there, still structure-only.
  fs::path elsewhere = temp_dir("external_elsewhere");
  fs::remove(elsewhere / "weights.bin");
  frontend::export_onnx(g, elsewhere / "copy.onnx");
  ir::Graph copy = frontend::import_onnx(elsewhere / "copy.onnx");
  REQUIRE(copy.find_value("w"));
  CHECK(copy.value(*copy.find_value("w")).external->file.filename() == "weights.bin");
  CHECK(copy.value(*copy.find_value("w")).external->file.parent_path() ==
        fs::absolute(elsewhere).lexically_normal());
  // Where another file of that name is, it would be read as the weights: refused, naming both.
  fs::path taken = temp_dir("external_taken");
  write_file(taken / "weights.bin", std::string(24, 'x'));
  try {
    frontend::export_onnx(g, taken / "copy.onnx");
    FAIL("a model naming another file's bytes as its weights was written");
  } catch (const Error& e) {
    CHECK(says(e, "weights.bin"));
    CHECK(says(e, "absent"));
  }
  try {
    g.weight_data(*w);
    FAIL("missing weights were read");
  } catch (const Error& e) {
    CHECK(says(e, "weights.bin"));
  }
  // With the file present the weights load lazily.
  std::string data(24, '\0');
  float one = 1.0f;
  for (int i = 0; i < 6; ++i) std::memcpy(data.data() + 4 * i, &one, 4);
  write_file(dir / "weights.bin", data);
  CHECK(g.weight_data(*w)->get(5) == 1.0);
}

TEST_CASE("an unsupported opset is refused clearly", "[frontend][bad_input]") {
  auto m = relu_model();
  m.mutable_opset_import(0)->set_version(5);
  Error e = import_error(bytes_of(m));
  CHECK(says(e, "opset 5"));
  CHECK(e.kind() == Error::Kind::Unsupported);
}

TEST_CASE("a misspelled ONNX op is an error", "[frontend][bad_input]") {
  auto m = onnx_model();
  add_input(m, "x", {2, 3});
  add_node(m, "Rleu", {"x"}, {"y"}, "typo");
  add_output(m, "y", {2, 3});
  CHECK(says(import_error(bytes_of(m)), "Rleu"));
}
