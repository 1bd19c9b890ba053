#include "cost/device_profile.h"

#include <fmt/format.h>

#include <fstream>
#include <sstream>

#include "cost/builtin_profiles.h"
#include "support/error.h"

namespace eqfuse::cost {
namespace {

using nlohmann::json;

// Reads fields of one JSON object, turning every mistake into an Error that names the document
// and the field.
class FieldReader {
 public:
  FieldReader(const json& j, std::string origin, std::string prefix = "")
      : j_(j), origin_(std::move(origin)), prefix_(std::move(prefix)) {
    if (!j_.is_object()) bad(prefix_.empty() ? "the profile" : prefix_, "should be a JSON object");
  }

  const json& object(const std::string& key) const {
    const json& v = at(key);
    if (!v.is_object()) bad(path(key), "should be a JSON object");
    return v;
  }
  // A number > 0 (and <= max when given).
  double positive(const std::string& key, double max = 0) const {
    const json& v = at(key);
    if (!v.is_number()) bad(path(key), "should be a number");
    double x = v.get<double>();
    if (!(x > 0)) bad(path(key), fmt::format("should be > 0, got {}", x));
    if (max > 0 && x > max) bad(path(key), fmt::format("should be at most {}, got {}", max, x));
    return x;
  }
  double positive_or(const std::string& key, double fallback, double max = 0) const {
    return j_.contains(key) ? positive(key, max) : fallback;
  }
  // A number in [0, 1], or `fallback` where absent.
  double fraction_or(const std::string& key, double fallback) const {
    if (!j_.contains(key)) return fallback;
    const json& v = j_[key];
    if (!v.is_number()) bad(path(key), "should be a number");
    double x = v.get<double>();
    if (!(x >= 0 && x <= 1)) bad(path(key), fmt::format("should be in [0, 1], got {}", x));
    return x;
  }
  std::string string_or(const std::string& key, std::string fallback) const {
    if (!j_.contains(key)) return fallback;
    if (!j_[key].is_string()) bad(path(key), "should be a string");
    return j_[key].get<std::string>();
  }
  std::string origin() const { return origin_; }

  [[noreturn]] void bad(const std::string& field, const std::string& what) const {
    throw Error(fmt::format("device profile {}: '{}' {}", origin_, field, what));
  }

 private:
  const json& at(const std::string& key) const {
    if (!j_.contains(key)) bad(path(key), "is missing");
    return j_[key];
  }
  std::string path(const std::string& key) const {
    return prefix_.empty() ? key : prefix_ + "." + key;
  }
  const json& j_;
  std::string origin_;
  std::string prefix_;
};

DeviceProfile parse_text(std::string_view text, const std::string& origin) {
  json j;
  try {
    j = json::parse(text);
  } catch (const json::parse_error& e) {
    throw Error(fmt::format("device profile {}: not valid JSON: {}", origin, e.what()));
  }
  return DeviceProfile::from_json(j, origin);
}

}  // namespace

DeviceProfile DeviceProfile::from_json(const json& j, const std::string& origin) {
  FieldReader r(j, origin);
  DeviceProfile p;
  p.name = r.string_or("name", "");
  if (p.name.empty()) r.bad("name", "is missing or empty");
  p.description = r.string_or("description", p.name);
  if (j.contains("sources")) {
    if (!j["sources"].is_array()) r.bad("sources", "should be a list of strings");
    for (const json& s : j["sources"]) {
      if (!s.is_string()) r.bad("sources", "should be a list of strings");
      p.sources.push_back(s.get<std::string>());
    }
  }
  p.memory_bandwidth = r.positive("memory_bandwidth_gbps") * 1e9;

  FieldReader peaks(r.object("peak_tflops"), origin, "peak_tflops");
  p.fp32 = peaks.positive("fp32") * 1e12;
  p.fp64 = peaks.positive("fp64") * 1e12;
  // Tensor-core peaks a device lacks fall back to the plain peak of that precision.
  p.fp64_tensor = peaks.positive_or("fp64_tensor", p.fp64 / 1e12) * 1e12;
  p.tf32_tensor = peaks.positive_or("tf32_tensor", p.fp32 / 1e12) * 1e12;
  p.fp16_tensor = peaks.positive_or("fp16_tensor", p.fp32 / 1e12) * 1e12;
  p.bf16_tensor = peaks.positive_or("bf16_tensor", p.fp16_tensor / 1e12) * 1e12;
  p.int8_tensor = peaks.positive_or("int8_tensor", p.fp32 / 1e12) * 1e12;

  double sms = r.positive("sm_count");
  if (sms != static_cast<int>(sms)) r.bad("sm_count", "should be an integer");
  p.sm_count = static_cast<int>(sms);
  p.l2_bytes = r.positive("l2_mb") * 1024 * 1024;
  p.shared_memory_per_sm_bytes = r.positive("shared_memory_per_sm_kb") * 1024;
  p.launch_overhead = r.positive("launch_overhead_us") * 1e-6;
  p.library_call_overhead =
      j.contains("library_call_us") ? r.positive("library_call_us") * 1e-6 : p.launch_overhead;
  p.conv_reread_fraction = r.fraction_or("conv_reread_fraction", 1.0);
  if (j.contains("gemm_tile")) {
    const json& t = j["gemm_tile"];
    if (!t.is_array() || t.size() != 2 || !t[0].is_number_integer() || !t[1].is_number_integer() ||
        t[0].get<int>() <= 0 || t[1].get<int>() <= 0)
      r.bad("gemm_tile", "should be a list of two positive integers [M, N]");
    p.gemm_tile_m = t[0].get<int>();
    p.gemm_tile_n = t[1].get<int>();
  }

  FieldReader eff(r.object("efficiency"), origin, "efficiency");
  p.efficiency.bandwidth = eff.positive("bandwidth", 1.0);
  p.efficiency.contraction = eff.positive("contraction", 1.0);
  p.efficiency.convolution = eff.positive_or("convolution", p.efficiency.contraction, 1.0);
  p.efficiency.attention = eff.positive_or("attention", p.efficiency.contraction, 1.0);
  p.efficiency.elementwise = eff.positive("elementwise", 1.0);
  p.efficiency.reduction = eff.positive("reduction", 1.0);
  p.efficiency.opaque = eff.positive_or("opaque", p.efficiency.reduction, 1.0);
  return p;
}

json DeviceProfile::to_json() const {
  json peaks = {{"fp64", fp64 / 1e12},
                {"fp64_tensor", fp64_tensor / 1e12},
                {"fp32", fp32 / 1e12},
                {"tf32_tensor", tf32_tensor / 1e12},
                {"fp16_tensor", fp16_tensor / 1e12},
                {"bf16_tensor", bf16_tensor / 1e12},
                {"int8_tensor", int8_tensor / 1e12}};
  json eff = {{"bandwidth", efficiency.bandwidth},
              {"contraction", efficiency.contraction},
              {"convolution", efficiency.convolution},
              {"attention", efficiency.attention},
              {"elementwise", efficiency.elementwise},
              {"reduction", efficiency.reduction},
              {"opaque", efficiency.opaque}};
  return json{{"name", name},
              {"description", description},
              {"sources", sources},
              {"memory_bandwidth_gbps", memory_bandwidth / 1e9},
              {"peak_tflops", peaks},
              {"sm_count", sm_count},
              {"l2_mb", l2_bytes / (1024 * 1024)},
              {"shared_memory_per_sm_kb", shared_memory_per_sm_bytes / 1024},
              {"launch_overhead_us", launch_overhead * 1e6},
              {"library_call_us", library_call_overhead * 1e6},
              {"conv_reread_fraction", conv_reread_fraction},
              {"gemm_tile", {gemm_tile_m, gemm_tile_n}},
              {"efficiency", eff}};
}

DeviceProfile DeviceProfile::load_builtin(std::string_view name) {
  for (const auto& [builtin, text] : builtin_profile_texts()) {
    if (builtin == name) return parse_text(text, "'" + std::string(name) + "' (builtin)");
  }
  throw Error(fmt::format("unknown device '{}' (builtin devices: {}; or give a profile file)", name,
                          fmt::join(list_builtin(), ", ")));
}

DeviceProfile DeviceProfile::load_file(const std::filesystem::path& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw Error(fmt::format("device profile {}: cannot read the file", path.string()));
  std::stringstream text;
  text << in.rdbuf();
  return parse_text(text.str(), path.string());
}

DeviceProfile DeviceProfile::load(std::string_view name_or_path) {
  for (const auto& [builtin, text] : builtin_profile_texts()) {
    if (builtin == name_or_path) return load_builtin(name_or_path);
  }
  std::filesystem::path path(name_or_path);
  if (path.has_extension() || path.has_parent_path() || std::filesystem::exists(path))
    return load_file(path);
  return load_builtin(name_or_path);  // the unknown-device Error lists the builtin names
}

std::vector<std::string> DeviceProfile::list_builtin() {
  std::vector<std::string> names;
  for (const auto& [name, text] : builtin_profile_texts()) names.emplace_back(name);
  return names;
}

}  // namespace eqfuse::cost
