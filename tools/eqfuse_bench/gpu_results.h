#pragma once
// The GPU columns of eqfuse-bench: what bench/gpu/run.sh measured on a machine with a GPU (its
// merged results/gpu.json), joined to the bench's rows by model name. eqfuse-bench never runs a
// GPU itself; it reports these measurements beside its own, and says so where there are none.
#include <filesystem>
#include <map>
#include <nlohmann/json.hpp>
#include <string>

namespace eqfuse::bench {

// Per model: {"device": NAME, "batches": {"1": {eqfuse_ms, eqfuse_graph_ms, specialized_ms,
// eager_ms, cudagraphs_ms, compile_ms, compile_first_call_s, compile_vs_eqfuse, numerics}, ...}}
// (null where the run has no figure). Throws Error naming the file when it cannot be read or is
// not the merged format.
std::map<std::string, nlohmann::json> read_gpu_results(const std::filesystem::path& file);

// Where the bench looks when --gpu-results is not given (relative to the working directory).
inline constexpr const char* kDefaultGpuResults = "bench/gpu/results/gpu.json";

}  // namespace eqfuse::bench
