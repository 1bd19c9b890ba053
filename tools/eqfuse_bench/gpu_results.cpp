#include "tools/eqfuse_bench/gpu_results.h"

#include <fmt/format.h>

#include <fstream>

#include "support/error.h"

namespace eqfuse::bench {
namespace {

using nlohmann::json;

json number_or_null(const json& object, const char* key) {
  if (object.is_object() && object.contains(key) && object[key].is_number()) return object[key];
  return nullptr;
}

// The median of one PyTorch measurement, keyed as run.py writes it.
json torch_ms(const json& part, const std::string& model, int64_t batch, const char* mode,
              const char* what = "median_ms") {
  for (const json& t : part.value("torch", json::array()))
    if (t.value("model", "") == model && t.value("batch", int64_t{-1}) == batch &&
        t.value("mode", "") == mode && t.value("dtype", "") == "f32")
      return number_or_null(t, what);
  return nullptr;
}

// A run's typical time: its median, or its minimum in results written before the median was.
json typical_ms(const json& run) {
  json median = number_or_null(run, "median_ms");
  return median.is_null() ? number_or_null(run, "min_ms") : median;
}

}  // namespace

std::map<std::string, json> read_gpu_results(const std::filesystem::path& file) {
  std::ifstream in(file);
  if (!in) throw Error(fmt::format("--gpu-results {}: cannot read it", file.string()));
  json doc = json::parse(in, nullptr, /*allow_exceptions=*/false);
  if (doc.is_discarded() || !doc.is_object() || !doc.contains("parts") || !doc["parts"].is_array())
    throw Error(fmt::format(
        "--gpu-results {}: not the merged GPU results (a JSON object with \"parts\", as "
        "bench/gpu/run.sh --merge writes)",
        file.string()));
  std::map<std::string, json> out;
  for (const json& part : doc["parts"]) {
    if (!part.is_object()) continue;
    for (const json& m : part.value("models", json::array())) {
      if (!m.is_object() || !m.contains("model") || !m["model"].is_string()) continue;
      std::string name = m["model"];
      json& row = out[name];
      row["device"] = part.value("device", "unknown");
      json numerics = nullptr;  // all checks matched, one did not, or none ran
      for (const json& c : m.value("checks", json::array())) {
        if (!c.contains("match") || !c["match"].is_boolean()) {
          numerics = nullptr;
          break;
        }
        numerics = (numerics.is_null() || numerics.get<bool>()) && c["match"].get<bool>();
      }
      std::vector<int64_t> batches = {1};
      if (m.contains("large_batch") && m["large_batch"].is_number_integer())
        batches.push_back(m["large_batch"].get<int64_t>());
      for (int64_t b : batches) {
        const json r = m.value(fmt::format("b{}", b), json());
        const json generic = r.is_object() ? r.value("generic", json()) : json();
        const json specialized = r.is_object() ? r.value("specialized", json()) : json();
        json cell = {{"eqfuse_ms", typical_ms(generic)},
                     {"eqfuse_graph_ms", number_or_null(generic, "graph_replay_ms")},
                     {"specialized_ms", typical_ms(specialized)},
                     {"eager_ms", torch_ms(part, name, b, "eager")},
                     {"cudagraphs_ms", torch_ms(part, name, b, "cudagraphs")},
                     {"compile_ms", torch_ms(part, name, b, "compile")},
                     {"compile_first_call_s", torch_ms(part, name, b, "compile", "first_call_s")},
                     {"numerics", numerics}};
        cell["compile_vs_eqfuse"] =
            cell["eqfuse_ms"].is_number() && cell["compile_ms"].is_number() &&
                    cell["eqfuse_ms"].get<double>() > 0
                ? json(cell["compile_ms"].get<double>() / cell["eqfuse_ms"].get<double>())
                : json(nullptr);
        row["batches"][std::to_string(b)] = cell;
      }
    }
  }
  return out;
}

}  // namespace eqfuse::bench
