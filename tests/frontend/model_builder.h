#pragma once
// Small ONNX models written directly as protos, for tests of import edge cases and bad input.
#include <onnx/onnx_pb.h>

#include <filesystem>
#include <fstream>
#include <initializer_list>
#include <string>
#include <vector>

#include <unistd.h>

namespace eqfuse::test {

inline onnx::ModelProto onnx_model(int opset = 17) {
  onnx::ModelProto m;
  m.set_ir_version(8);
  auto* o = m.add_opset_import();
  o->set_domain("");
  o->set_version(opset);
  m.mutable_graph()->set_name("test");
  return m;
}

inline onnx::ValueInfoProto* add_value(google::protobuf::RepeatedPtrField<onnx::ValueInfoProto>* to,
                                       const std::string& name, int elem_type,
                                       std::vector<int64_t> dims) {
  auto* v = to->Add();
  v->set_name(name);
  auto* t = v->mutable_type()->mutable_tensor_type();
  t->set_elem_type(elem_type);
  auto* shape = t->mutable_shape();
  for (int64_t d : dims) {
    if (d < 0) {
      shape->add_dim()->set_dim_param("n");
    } else {
      shape->add_dim()->set_dim_value(d);
    }
  }
  return v;
}

inline void add_input(onnx::ModelProto& m, const std::string& name, std::vector<int64_t> dims,
                      int elem_type = onnx::TensorProto::FLOAT) {
  add_value(m.mutable_graph()->mutable_input(), name, elem_type, std::move(dims));
}
inline void add_output(onnx::ModelProto& m, const std::string& name, std::vector<int64_t> dims,
                       int elem_type = onnx::TensorProto::FLOAT) {
  add_value(m.mutable_graph()->mutable_output(), name, elem_type, std::move(dims));
}

inline onnx::NodeProto* add_node(onnx::ModelProto& m, const std::string& op,
                                 std::initializer_list<std::string> inputs,
                                 std::initializer_list<std::string> outputs,
                                 const std::string& name = "") {
  auto* n = m.mutable_graph()->add_node();
  n->set_op_type(op);
  n->set_name(name);
  for (const auto& i : inputs) n->add_input(i);
  for (const auto& o : outputs) n->add_output(o);
  return n;
}

inline void add_ints_attr(onnx::NodeProto* n, const std::string& name, std::vector<int64_t> v) {
  auto* a = n->add_attribute();
  a->set_name(name);
  a->set_type(onnx::AttributeProto::INTS);
  for (int64_t x : v) a->add_ints(x);
}

inline void add_int64_initializer(onnx::ModelProto& m, const std::string& name,
                                  std::vector<int64_t> values) {
  auto* t = m.mutable_graph()->add_initializer();
  t->set_name(name);
  t->set_data_type(onnx::TensorProto::INT64);
  t->add_dims(static_cast<int64_t>(values.size()));
  for (int64_t v : values) t->add_int64_data(v);
}

inline void add_float_initializer(onnx::ModelProto& m, const std::string& name,
                                  std::vector<int64_t> dims, float fill) {
  auto* t = m.mutable_graph()->add_initializer();
  t->set_name(name);
  t->set_data_type(onnx::TensorProto::FLOAT);
  int64_t n = 1;
  for (int64_t d : dims) {
    t->add_dims(d);
    n *= d;
  }
  for (int64_t i = 0; i < n; ++i) t->add_float_data(fill + static_cast<float>(i));
}

// A FLOAT initializer whose data lies in the external file `location` (which may be absent).
inline void add_external_float_initializer(onnx::ModelProto& m, const std::string& name,
                                           std::vector<int64_t> dims, const std::string& location) {
  auto* t = m.mutable_graph()->add_initializer();
  t->set_name(name);
  t->set_data_type(onnx::TensorProto::FLOAT);
  for (int64_t d : dims) t->add_dims(d);
  t->set_data_location(onnx::TensorProto::EXTERNAL);
  auto* kv = t->add_external_data();
  kv->set_key("location");
  kv->set_value(location);
}

inline std::string bytes_of(const onnx::ModelProto& m) {
  std::string s;
  m.SerializeToString(&s);
  return s;
}

inline void write_file(const std::filesystem::path& p, const std::string& bytes) {
  std::ofstream out(p, std::ios::binary | std::ios::trunc);
  out.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
}

inline std::filesystem::path temp_dir(const std::string& name) {
  auto dir = std::filesystem::temp_directory_path() /
             ("eqfuse_test_" + name + "_" + std::to_string(::getpid()));
  std::filesystem::create_directories(dir);
  return dir;
}

}  // namespace eqfuse::test
