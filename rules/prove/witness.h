#pragma once
// Running a rule's graph numerically: the float64 copy of a graph, the comparison of its left-
// and right-hand outputs, and the randomized check that runs beside every proof.
//
// Why a second witness: a proof is only as good as the encoding it is about. The numeric check
// evaluates both sides with the reference interpreter (the ground truth of eqfuse) on random
// inputs, so an encoding bug that makes a wrong rule "provable" shows up as a disagreement
// between the two witnesses instead of a silent false proof. The same machinery replays every
// Z3 counterexample: a model that does not reproduce in float64 (say an uninterpreted exp given
// a negative value) is not a counterexample.
#include <cstdint>
#include <map>
#include <optional>
#include <random>
#include <string>
#include <vector>

#include "ir/graph.h"
#include "ir/tensor.h"

namespace eqfuse::rules::prove {

// The same graph computing in float64: f32/f16/bf16 inputs, weights and values become f64.
ir::Graph as_float64(const ir::Graph& graph);

// Where the outputs of a rule graph (the LHS roots, then the RHS results) first differ.
struct Mismatch {
  size_t output = 0;  // index among the LHS roots
  int64_t element = 0;
  double lhs = 0;
  double rhs = 0;
};
// Runs the graph (float64 copy first; the graph itself if the copy cannot run) and compares
// output k with output k + num_lhs. Values agree when both are NaN, or when
// |l - r| <= rtol * (1 + max(|l|, |r|)); 1e-9 in float64 lets no misplaced epsilon through
// (the fallback to the graph's own float32 kernels is compared at 1e-4 at least). Throws Error
// when the graph cannot run.
std::optional<Mismatch> compare_sides(const ir::Graph& graph, size_t num_lhs,
                                      const std::vector<ir::Tensor>& inputs, double rtol = 1e-9);

// Random inputs for the graph's inputs (float64 values in [-2, 2]; inputs listed in `nonzero`
// get values in [-2, -0.5] U [0.5, 2]; integer inputs small non-negative integers).
std::vector<ir::Tensor> random_inputs(const ir::Graph& graph,
                                      const std::vector<std::string>& nonzero,
                                      std::mt19937_64& rng);

// `trials` random evaluations; the first mismatch with the inputs that show it.
struct NumericFailure {
  Mismatch mismatch;
  std::vector<ir::Tensor> inputs;
};
std::optional<NumericFailure> numeric_check(const ir::Graph& graph, size_t num_lhs,
                                            const std::vector<std::string>& nonzero, int trials,
                                            uint64_t seed, double rtol = 1e-9);

}  // namespace eqfuse::rules::prove
