#pragma once
// eqfuse-bench's SVG bar chart, drawn by hand (no plotting dependency): per model, kernels
// launched (original, eqfuse, ONNX Runtime where measured) and CPU speed-up over the reference
// interpreter (eqfuse's C++ twin, ONNX Runtime).
#include <nlohmann/json.hpp>
#include <string>

namespace eqfuse::bench {

// `doc` is what --json writes. Throws Error naming the file when it cannot be written.
void write_plot(const nlohmann::json& doc, const std::string& file);

}  // namespace eqfuse::bench
