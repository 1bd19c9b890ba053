#pragma once
// Random inputs for `eqfuse run` when none are given: fixed seed, floats uniform in [-1, 1),
// booleans fair coins, and integers in [0, bound) where the bound comes from how the input is
// used (the indexed dim of a Gather or GatherElements it reaches through casts and reshapes,
// so embedding ids stay in range), else [0, 2) (masks, flags).
//
// Symbolic dims take, in this order: the size bound on the command line (--dim NAME=VALUE);
// the model's own hint, the size its test data (test_data_set_*/input_K.pb beside the model)
// gives the dim; else a default that keeps windowed ops valid: 1 for a leading (batch) dim,
// kDefaultDimSize for every other dim (spatial, sequence). The choice is reported.
#include <cstdint>
#include <filesystem>
#include <map>
#include <string>
#include <vector>

#include "ir/graph.h"

namespace eqfuse::tools {

inline constexpr int64_t kDefaultBatchSize = 1;
inline constexpr int64_t kDefaultDimSize = 32;

struct DimChoice {
  int64_t size = 1;
  std::string source;  // "--dim", "test data", "default"
};

// "NAME=VALUE" options as a map; Error (exit 2) naming the option when malformed or repeated.
std::map<std::string, int64_t> parse_dim_options(const std::vector<std::string>& specs);

// Sizes the model's test data give its symbolic input dims (the first test set that has all
// inputs); empty when the model has no test data next to it.
std::map<std::string, int64_t> dim_hints_from_test_data(const ir::Graph& graph,
                                                        const std::filesystem::path& model);

// The size of every symbolic dim of the graph's inputs, with where it came from.
std::map<std::string, DimChoice> choose_dims(const ir::Graph& graph,
                                             const std::map<std::string, int64_t>& bound,
                                             const std::map<std::string, int64_t>& hints);

std::vector<ir::Tensor> random_inputs(const ir::Graph& graph, uint64_t seed,
                                      const std::map<std::string, DimChoice>& dims);

// Gives every weight whose external file is absent (a structure-only model) made-up data, so
// that the model runs: floats uniform in [-kSeededWeightScale, kSeededWeightScale), which keeps
// activations finite through deep stacks of layers, and other types zeros (an index or a mask
// stays in range). For timing and for comparing backends with each other; the outputs mean
// nothing. Returns how many weights it filled.
inline constexpr double kSeededWeightScale = 0.05;
size_t seed_missing_weights(ir::Graph& graph, uint64_t seed);

}  // namespace eqfuse::tools
