// The extension module `eqfuse._eqfuse`: optimize, run and check_rules over the C++ library,
// for the package in python/eqfuse/__init__.py (which turns the bytes and JSON that come back
// into onnx.ModelProto and dicts). A model is a path (str or os.PathLike), the bytes of a
// model, or anything with SerializeToString() (an onnx.ModelProto). eqfuse::Error arrives as
// eqfuse.Error, a RuntimeError with the same message and a `kind` ("bad_input", "unsupported",
// "check_failed", "internal"). The GIL is released while C++ works.
#include <pybind11/numpy.h>
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include <cstring>
#include <filesystem>
#include <memory>

#include "codegen/cpu_backend.h"
#include "codegen/cuda_backend.h"
#include "frontend/onnx_export.h"
#include "frontend/onnx_import.h"
#include "frontend/test_data.h"
#include "ir/interpreter.h"
#include "optimizer/optimize.h"
#include "optimizer/report_json.h"
#include "rules/parser.h"
#include "rules/prove/batch.h"
#include "support/error.h"

namespace py = pybind11;
namespace fs = std::filesystem;

namespace eqfuse::python {
namespace {

struct LoadedModel {
  ir::Graph graph;
  fs::path dir;  // where its external weights resolve
};

LoadedModel load_model(const py::object& model) {
  py::module_ os = py::module_::import("os");
  if (py::isinstance<py::str>(model) || py::isinstance(model, os.attr("PathLike"))) {
    fs::path path = py::str(os.attr("fspath")(model)).cast<std::string>();
    py::gil_scoped_release unlocked;
    return {frontend::import_onnx(path), fs::absolute(path).parent_path()};
  }
  std::string bytes;
  std::string source = "<bytes>";
  if (py::isinstance<py::bytes>(model) || py::isinstance<py::bytearray>(model)) {
    bytes = py::bytes(model).cast<std::string>();
  } else if (py::hasattr(model, "SerializeToString")) {
    bytes = model.attr("SerializeToString")().cast<std::string>();
    source = "<ModelProto>";
  } else {
    throw py::type_error("model: expected a path, bytes or an onnx.ModelProto, got " +
                         py::str(model.get_type()).cast<std::string>());
  }
  py::gil_scoped_release unlocked;
  fs::path dir = fs::current_path();
  return {frontend::import_onnx_bytes(bytes, dir, source), dir};
}

// The model as bytes that stand alone: weights embedded where their file can be read (export
// embeds a weight whose file lies outside the folder it is given), else referenced relative to
// the original model's folder (a structure-only model).
std::string standalone_bytes(const ir::Graph& graph, const fs::path& model_dir) {
  bool readable = true;
  for (ir::ValueId id : graph.weights()) {
    const ir::Value& v = graph.value(id);
    if (!v.data && v.external && !fs::exists(v.external->file)) readable = false;
  }
  return frontend::export_onnx_bytes(
      graph, readable ? fs::temp_directory_path() / "eqfuse-in-memory-model" : model_dir);
}

const char* kind_name(Error::Kind kind) {
  switch (kind) {
    case Error::Kind::BadInput:
      return "bad_input";
    case Error::Kind::Unsupported:
      return "unsupported";
    case Error::Kind::CheckFailed:
      return "check_failed";
    case Error::Kind::Internal:
      return "internal";
  }
  return "internal";
}

struct DTypeName {
  ir::DType dtype;
  const char* numpy;
};
constexpr DTypeName kDTypes[] = {{ir::DType::f32, "float32"}, {ir::DType::f16, "float16"},
                                 {ir::DType::f64, "float64"}, {ir::DType::i8, "int8"},
                                 {ir::DType::u8, "uint8"},    {ir::DType::i32, "int32"},
                                 {ir::DType::i64, "int64"},   {ir::DType::boolean, "bool"}};

ir::Tensor to_tensor(const std::string& name, const py::array& given) {
  py::array a = py::array::ensure(given, py::array::c_style);
  std::string numpy = py::str(a.dtype().attr("name"));
  const DTypeName* found = nullptr;
  for (const DTypeName& d : kDTypes)
    if (numpy == d.numpy) found = &d;
  if (!found)
    throw Error("input '" + name + "': numpy dtype " + numpy +
                " has no eqfuse type (float32, float16, float64, int8, uint8, int32, int64, "
                "bool)");
  std::vector<int64_t> dims(a.shape(), a.shape() + a.ndim());
  ir::Tensor t(found->dtype, dims);
  if (static_cast<size_t>(a.nbytes()) != t.byte_size())
    throw Error("input '" + name + "': element size differs from eqfuse's", Error::Kind::Internal);
  if (t.byte_size()) std::memcpy(t.raw(), a.data(), t.byte_size());
  return t;
}

// bf16, which NumPy lacks, comes back as float32 (exactly: every bf16 is a float32).
py::array to_numpy(const ir::Tensor& given) {
  ir::Tensor t = given.dtype() == ir::DType::bf16 ? given.cast(ir::DType::f32) : given;
  const char* numpy = nullptr;
  for (const DTypeName& d : kDTypes)
    if (d.dtype == t.dtype()) numpy = d.numpy;
  py::array out(py::dtype(numpy), t.dims());
  if (t.byte_size()) std::memcpy(out.mutable_data(), t.raw(), t.byte_size());
  return out;
}

py::tuple optimize(const py::object& model, const std::string& device,
                   const std::map<std::string, int64_t>& dims,
                   const std::vector<std::string>& rules, double time_limit, size_t node_limit,
                   size_t iter_limit, const std::string& extract,
                   const std::vector<std::string>& phases, bool verify,
                   const std::string& precision) {
  optimizer::OptimizeOptions options;
  options.device = device;
  options.precision = codegen::parse_precision(precision);
  options.dim_bindings = dims;
  options.rule_files = rules;
  options.seconds = time_limit;
  options.nodes = node_limit;
  options.iterations = iter_limit;
  auto method = optimizer::parse_extract_method(extract);
  if (!method) throw Error("extract='" + extract + "': expected dag, ilp or greedy");
  options.extraction.method = *method;
  optimizer::set_phases(options, phases);
  options.verify = verify;
  LoadedModel loaded = load_model(model);
  std::string bytes, report;
  {
    py::gil_scoped_release unlocked;
    optimizer::OptimizeResult result = optimizer::optimize(loaded.graph, options);
    bytes = standalone_bytes(result.graph, loaded.dir);
    report = optimizer::report_json(result.report).dump();
  }
  return py::make_tuple(py::bytes(bytes), report);
}

std::vector<std::pair<std::string, py::array>> run(const py::object& model, const py::dict& inputs,
                                                   const std::string& backend,
                                                   const std::string& precision) {
  if (backend != "interpreter" && backend != "cpu" && backend != "cuda")
    throw Error("backend='" + backend + "': expected interpreter, cpu or cuda");
  codegen::PlanOptions plan_options;
  plan_options.precision = codegen::parse_precision(precision);
  if (plan_options.precision != ir::DType::f32 && backend == "interpreter")
    throw Error("precision='" + precision +
                "' applies to generated code: use backend='cpu' or 'cuda'");
  LoadedModel loaded = load_model(model);
  std::vector<frontend::NamedTensor> given;
  for (auto [key, value] : inputs) {
    std::string name = py::str(key);
    given.push_back({name, to_tensor(name, py::array::ensure(value))});
  }
  std::vector<ir::Tensor> outputs;
  {
    py::gil_scoped_release unlocked;
    for (const auto& g : given)
      if (!loaded.graph.find_value(g.name)) throw Error("the model has no input '" + g.name + "'");
    std::vector<ir::Tensor> bound = frontend::bind_inputs(loaded.graph, given);
    if (backend == "cpu")
      outputs = codegen::CpuModule::build(loaded.graph, nullptr, {}, plan_options)->run(bound);
    else if (backend == "cuda")
      outputs = codegen::CudaModule::build(loaded.graph, nullptr, {}, plan_options)->run(bound);
    else
      outputs = ir::Interpreter(loaded.graph).run(bound);
  }
  std::vector<std::pair<std::string, py::array>> named;
  for (size_t k = 0; k < outputs.size(); ++k)
    named.emplace_back(loaded.graph.value(loaded.graph.outputs()[k]).name, to_numpy(outputs[k]));
  return named;
}

std::string check_rules(const std::vector<std::string>& files, const std::string& text,
                        unsigned jobs, bool use_cache) {
  py::gil_scoped_release unlocked;
  rules::RuleSet all = rules::parse_rule_files(files);
  if (!text.empty()) {
    rules::RuleSet set = rules::parse_rules(text, "<text>");
    for (rules::Rule& r : set.rules) all.rules.push_back(std::move(r));
  }
  std::vector<const rules::Rule*> list;
  for (const rules::Rule& r : all.rules) list.push_back(&r);
  std::unique_ptr<rules::prove::ProofCache> cache;
  if (use_cache) cache = std::make_unique<rules::prove::ProofCache>();
  nlohmann::json out = nlohmann::json::array();
  for (const auto& p : rules::prove::prove_rules(list, {}, jobs, cache.get()))
    out.push_back(rules::prove::proof_json(p));
  return out.dump();
}

}  // namespace
}  // namespace eqfuse::python

PYBIND11_MODULE(_eqfuse, m) {
  using namespace eqfuse::python;
  m.doc() = "eqfuse's C++ library; use the package `eqfuse`, which wraps it";
  static py::exception<eqfuse::Error> error(m, "Error", PyExc_RuntimeError);
  py::register_exception_translator([](std::exception_ptr p) {
    try {
      if (p) std::rethrow_exception(p);
    } catch (const eqfuse::Error& e) {
      py::object instance = py::reinterpret_borrow<py::object>(error.ptr())(e.what());
      instance.attr("kind") = kind_name(e.kind());
      PyErr_SetObject(error.ptr(), instance.ptr());
    }
  });
  m.def("optimize", &optimize, py::arg("model"), py::arg("device"), py::arg("dims"),
        py::arg("rules"), py::arg("time_limit"), py::arg("node_limit"), py::arg("iter_limit"),
        py::arg("extract"), py::arg("phases"), py::arg("verify"), py::arg("precision"));
  m.def("run", &run, py::arg("model"), py::arg("inputs"), py::arg("backend"), py::arg("precision"));
  m.def("check_rules", &check_rules, py::arg("files"), py::arg("text"), py::arg("jobs"),
        py::arg("use_cache"));
}
