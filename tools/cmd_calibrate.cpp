// `eqfuse calibrate --out FILE.json [--device BASE]`: runs microbenchmarks on the GPU and writes
// a device profile whose efficiency factors and launch overhead are fitted to it
// (cost/calibration.h). Without a GPU it says so and exits 2: nothing here links CUDA, the
// driver and NVRTC are loaded only now.
#include <fmt/format.h>

#include <fstream>
#include <iostream>

#include "cost/calibration.h"
#include "support/error.h"
#include "tools/command.h"

namespace eqfuse::tools {
namespace {

struct CalibrateArgs {
  std::string out;
  std::string device;
};

int run_calibrate(const CalibrateArgs& args) {
  if (auto why = cost::calibration_unavailable()) {
    std::cerr << "eqfuse: no CUDA driver/GPU found: calibration needs a GPU (" << *why << ")\n";
    return 2;
  }
  std::optional<cost::DeviceProfile> base;
  if (!args.device.empty()) base = cost::DeviceProfile::load(args.device);
  cost::CalibrationResult result = cost::calibrate(base ? &*base : nullptr);
  std::ofstream out(args.out);
  out << cost::calibration_to_json(result).dump(2) << "\n";
  if (!out) fail(args.out + ": cannot write the profile");

  std::cout << fmt::format("calibrated on {} (base profile '{}')\n", result.gpu_name,
                           result.profile.name);
  std::cout << fmt::format("{:<24} {:>12} {:>12} {:>8}\n", "benchmark", "measured ms",
                           "predicted ms", "error");
  for (const auto& m : result.measurements) {
    std::cout << fmt::format("{:<24} {:>12.5f} {:>12.5f} {:>7.1f}%\n", m.name, m.measured_ms,
                             m.predicted_ms,
                             100 * (m.predicted_ms - m.measured_ms) / m.measured_ms);
  }
  std::cout << fmt::format("mean |error| {:.1f}%\n", 100 * result.mean_abs_relative_error());
  for (const auto& note : result.notes) std::cout << "note: " << note << "\n";
  std::cout << "wrote " << args.out << "\n";
  return 0;
}

RegisterCommand calibrate_command{
    {"calibrate", "Fit a device profile's factors from microbenchmarks on this GPU",
     [](CLI::App& app) {
       auto args = std::make_shared<CalibrateArgs>();
       app.add_option("--out", args->out, "where to write the fitted profile (JSON)")->required();
       app.add_option("--device", args->device,
                      "profile to start from (builtin name or file; default: the GPU's own)");
       app.footer(
           "Examples:\n  eqfuse calibrate --out h200-calibrated.json\n  eqfuse calibrate --device "
           "h200 --out mine.json");
       return CommandMain([args] { return run_calibrate(*args); });
     }}};

}  // namespace
}  // namespace eqfuse::tools
