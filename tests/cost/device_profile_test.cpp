// Device profiles: the shipped ones load and carry their datasheets' figures; malformed ones
// are clear Errors.
#include "cost/device_profile.h"

#include <catch2/catch.hpp>
#include <filesystem>
#include <fstream>

#include "support/error.h"
#include "tests/cost/published_figures.h"

using eqfuse::Error;
using eqfuse::cost::DeviceProfile;

namespace {

std::filesystem::path write_temp(const std::string& name, const std::string& text) {
  auto path = std::filesystem::temp_directory_path() / ("eqfuse_cost_test_" + name);
  std::ofstream(path) << text;
  return path;
}

nlohmann::json h200_json() {
  return DeviceProfile::load_builtin("h200").to_json();
}

void require_error_mentions(const nlohmann::json& j, const std::string& fragment) {
  auto path = write_temp("bad.json", j.dump());
  try {
    DeviceProfile::load_file(path);
    FAIL("no error for a profile lacking " << fragment);
  } catch (const Error& e) {
    CHECK(e.kind() == Error::Kind::BadInput);
    CHECK_THAT(e.what(), Catch::Contains(fragment));
    CHECK_THAT(e.what(), Catch::Contains(path.string()));
  }
}

}  // namespace

TEST_CASE("builtin profiles are the four devices of the issue", "[cost]") {
  CHECK(DeviceProfile::list_builtin() ==
        std::vector<std::string>{"a100", "a6000", "h100", "h200", "h200-calibrated"});
}

TEST_CASE("builtin profiles carry the published dense figures", "[cost]") {
  for (const auto& f : eqfuse::test::published_figures()) {
    INFO(f.name);
    DeviceProfile p = DeviceProfile::load_builtin(f.name);
    CHECK(p.name == f.name);
    CHECK(!p.sources.empty());
    CHECK(p.memory_bandwidth == Approx(f.bandwidth_gbps * 1e9));
    CHECK(p.fp32 == Approx(f.fp32_tflops * 1e12));
    CHECK(p.fp64 == Approx(f.fp64_tflops * 1e12));
    CHECK(p.tf32_tensor == Approx(f.tf32_tflops * 1e12));
    CHECK(p.fp16_tensor == Approx(f.fp16_tflops * 1e12));
    CHECK(p.bf16_tensor == Approx(f.bf16_tflops * 1e12));
    CHECK(p.sm_count == f.sms);
    CHECK(p.launch_overhead == Approx(f.launch_us * 1e-6));
    CHECK(p.launch_overhead >= 1e-6);
    CHECK(p.launch_overhead <= 2e-6);
    CHECK(p.l2_bytes > 0);
    CHECK(p.shared_memory_per_sm_bytes > 0);
    CHECK(p.efficiency.bandwidth == Approx(f.eff_bandwidth));
    CHECK(p.efficiency.contraction == Approx(f.eff_contraction));
    CHECK(p.efficiency.elementwise == Approx(f.eff_elementwise));
    CHECK(p.efficiency.reduction == Approx(f.eff_reduction));
  }
}

TEST_CASE("a profile loads from a file and round-trips through JSON", "[cost]") {
  auto path = write_temp("h200.json", h200_json().dump(2));
  DeviceProfile p = DeviceProfile::load_file(path);
  DeviceProfile q = DeviceProfile::load(path.string());
  DeviceProfile builtin = DeviceProfile::load("h200");
  CHECK(p.memory_bandwidth == Approx(builtin.memory_bandwidth));
  CHECK(q.fp16_tensor == Approx(builtin.fp16_tensor));
  CHECK(p.sm_count == builtin.sm_count);
  CHECK(p.to_json() == builtin.to_json());
}

TEST_CASE("a library call's cost and attention's efficiency default to launch and contraction",
          "[cost]") {
  nlohmann::json j = h200_json();
  j.erase("library_call_us");
  j["efficiency"].erase("attention");
  DeviceProfile p = DeviceProfile::from_json(j, "test");
  // Exactly theirs, whatever the launch overhead: calibrate tells a field the base left out by
  // equality.
  CHECK(p.library_call_overhead == p.launch_overhead);
  CHECK(p.efficiency.attention == p.efficiency.contraction);
  nlohmann::json odd = j;
  odd["launch_overhead_us"] = 3.308527946472168;  // its microseconds do not round-trip
  DeviceProfile q = DeviceProfile::from_json(odd, "test");
  CHECK(q.library_call_overhead == q.launch_overhead);
  j["library_call_us"] = 11;
  j["efficiency"]["attention"] = 0.07;
  p = DeviceProfile::from_json(j, "test");
  CHECK(p.library_call_overhead == Approx(11e-6));
  CHECK(p.efficiency.attention == Approx(0.07));
  CHECK(DeviceProfile::from_json(p.to_json(), "again").to_json() == p.to_json());
  j["efficiency"]["attention"] = 1.5;
  CHECK_THROWS_WITH(DeviceProfile::from_json(j, "test"),
                    Catch::Contains("efficiency.attention") && Catch::Contains("at most 1"));
  j["efficiency"]["attention"] = 0.07;
  j["library_call_us"] = -1;
  CHECK_THROWS_WITH(DeviceProfile::from_json(j, "test"), Catch::Contains("library_call_us"));
}

TEST_CASE("a convolution's reread fraction defaults to 1 and is a fraction", "[cost]") {
  nlohmann::json j = h200_json();
  j.erase("conv_reread_fraction");
  CHECK(DeviceProfile::from_json(j, "test").conv_reread_fraction == 1.0);
  j["conv_reread_fraction"] = 0;  // every reread from the caches
  CHECK(DeviceProfile::from_json(j, "test").conv_reread_fraction == 0.0);
  j["conv_reread_fraction"] = 0.3;
  DeviceProfile p = DeviceProfile::from_json(j, "test");
  CHECK(p.conv_reread_fraction == Approx(0.3));
  CHECK(DeviceProfile::from_json(p.to_json(), "again").conv_reread_fraction == Approx(0.3));
  for (const nlohmann::json& bad :
       {nlohmann::json(1.5), nlohmann::json(-0.1), nlohmann::json("x")}) {
    j["conv_reread_fraction"] = bad;
    CHECK_THROWS_WITH(DeviceProfile::from_json(j, "test"),
                      Catch::Contains("conv_reread_fraction") && Catch::Contains("test"));
  }
}

TEST_CASE("unknown devices and unreadable files are clear errors", "[cost]") {
  CHECK_THROWS_WITH(DeviceProfile::load_builtin("v100"),
                    Catch::Contains("unknown device 'v100'") && Catch::Contains("h200"));
  CHECK_THROWS_WITH(DeviceProfile::load("v100"), Catch::Contains("unknown device"));
  CHECK_THROWS_WITH(DeviceProfile::load("/nonexistent/dir/gpu.json"),
                    Catch::Contains("cannot read"));
  auto garbage = write_temp("garbage.json", "{ \"name\": ");
  CHECK_THROWS_WITH(DeviceProfile::load_file(garbage), Catch::Contains("not valid JSON"));
  auto array = write_temp("array.json", "[1, 2]");
  CHECK_THROWS_WITH(DeviceProfile::load_file(array), Catch::Contains("JSON object"));
}

TEST_CASE("malformed fields are errors naming the field", "[cost]") {
  nlohmann::json j = h200_json();
  j.erase("memory_bandwidth_gbps");
  require_error_mentions(j, "memory_bandwidth_gbps");

  j = h200_json();
  j["peak_tflops"].erase("fp32");
  require_error_mentions(j, "peak_tflops.fp32");

  j = h200_json();
  j["efficiency"]["bandwidth"] = 1.2;  // above the physical limit
  require_error_mentions(j, "efficiency.bandwidth");

  j = h200_json();
  j["sm_count"] = -4;
  require_error_mentions(j, "sm_count");

  j = h200_json();
  j["launch_overhead_us"] = "fast";
  require_error_mentions(j, "launch_overhead_us");

  j = h200_json();
  j["gemm_tile"] = {128};
  require_error_mentions(j, "gemm_tile");

  j = h200_json();
  j.erase("name");
  require_error_mentions(j, "name");
}
