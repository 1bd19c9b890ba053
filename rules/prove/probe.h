#pragma once
// The structure of a structured op at concrete shapes, read off its reference kernel.
//
// Why probing: the op table is the single source of truth for what an op means, and every
// structured op has a reference kernel there, while only some carry an index expression. The
// prover therefore asks the kernel itself. Most structured ops are multi-affine in their
// (non-constant) inputs: layout ops (Transpose, Reshape, Concat, Split, Slice, Gather with
// constant indices, Expand, Tile, Pad, Flatten, Squeeze, Unsqueeze, Identity) copy input
// elements or write constants; MatMul, Gemm, Conv, ConvTranspose, ReduceSum/Mean and average
// pooling are sums of products of at most one element of each input. For those,
//   out[o] = c0[o] + sum_k sum_i c1[o,k,i] x_k[i] + sum_{k<l} sum_{i,j} c2[o,k,i,l,j] x_k[i] x_l[j]
// and every coefficient is recovered exactly by running the kernel on one-hot inputs (all zero,
// e_i, e_i with e_j, inclusion-exclusion). The decomposition is then checked on random inputs;
// an op it does not fit (ReduceMax, MaxPool, LpNorm...) is reported as such, never guessed.
// Max-like ops are recognized by a second probe: out[o] = max (or min) over a window W(o) of
// input elements, W read from one-hot inputs and again checked on random inputs.
#include <cstdint>
#include <optional>
#include <vector>

#include "ir/graph.h"
#include "ir/tensor.h"

namespace eqfuse::rules::prove {

// One input of the probed node: a fixed value (a constant: shape tensors, indices, weights
// the rule fixes) or a symbolic tensor of the given dims.
struct ProbeInput {
  const ir::Tensor* fixed = nullptr;  // nullptr: symbolic (or an omitted input when !present)
  std::vector<int64_t> dims;
  ir::DType dtype = ir::DType::f32;
  bool present = true;
};

struct Factor {
  uint32_t input;   // node input slot
  int64_t element;  // row-major element index in that input
};
struct Monomial {
  double coefficient = 0;
  std::vector<Factor> factors;  // empty: a constant term
};
// outputs[k][e]: the polynomial of element e of output k.
using Polynomials = std::vector<std::vector<std::vector<Monomial>>>;

std::optional<Polynomials> probe_multiaffine(const ir::Graph& graph, const ir::Node& node,
                                             const std::vector<ProbeInput>& inputs);

// out[k][e] = max (or min, when `is_min`) of input 0's elements listed in windows[k][e].
struct Windows {
  bool is_min = false;
  std::vector<std::vector<std::vector<int64_t>>> outputs;
};
std::optional<Windows> probe_window(const ir::Graph& graph, const ir::Node& node,
                                    const std::vector<ProbeInput>& inputs);

}  // namespace eqfuse::rules::prove
