#pragma once
// A fused kernel's body: the one statement of what a kernel computes.
//
// A kernel is a node of the op-table entry `Kernel` (ir/ops/kernel.cpp) whose attribute `body`
// is one term of the tensor language over the kernel's inputs `?0 .. ?n-1`:
//
//     (Relu (Add (MatMul ?0 ?1) ?2))
//     (Mul ?0 (Sigmoid ?0))
//
// Each application is `(Op :attr value ... child...)` of a single-output op-table op, with every
// schema attribute that has a default written out and every value spelled as the e-graph spells
// it (ir/attr_text.h), so two kernels that compute the same term have the same text and
// hash-cons into one e-node. Inputs are numbered in order of first appearance (depth first, left
// to right), so renumbering cannot make two texts of one kernel. The body states no shapes: it is
// instantiated at the kernel's input types, whatever the batch size.
//
// Everything that needs a kernel's meaning reads it from here, by expanding the body into
// ordinary nodes: the interpreter runs the expansion, shape inference infers through it, the
// prover (rules/prove/encode.h) encodes it, the cost model counts its work with the
// intermediates on chip (cost/cost_model.h) and code generation lowers it. No second statement
// of a kernel's meaning exists.
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "ir/graph.h"
#include "support/sexpr.h"

namespace eqfuse::ir {

inline constexpr const char* kKernelOp = "Kernel";
inline constexpr const char* kKernelBodyAttr = "body";
// In ONNX files a kernel is a call of a model-local function of this domain, whose body is the
// expansion in standard ops and whose call carries the body text (frontend/onnx_export.h).
inline constexpr const char* kKernelDomain = "eqfuse.kernels";

struct KernelBody {
  Sexpr term;
  std::string text;  // term.str(): the canonical spelling
  size_t arity = 0;  // inputs: 1 + the largest ?k
  size_t ops = 0;    // distinct op applications (an equal subterm is computed once)
};

// Parses and checks a body (ops known and single-output, attributes of their schema, inputs
// `?k` numbered canonically). Parsed bodies are cached by text. Throws Error (BadInput) naming
// the body on a malformed one.
std::shared_ptr<const KernelBody> kernel_body(std::string_view text);

// The body's text with inputs renumbered in order of first appearance; `order[k]` is the old
// number of new input k. For appliers that build bodies by substitution.
std::string canonical_body_text(const Sexpr& term, std::vector<size_t>* order = nullptr);

// Adds the body's nodes to `graph`, reading `inputs` (one value per ?k), each node typed by
// inference; equal subterms are built once. Returns the body's value, named `output_name` (the
// other nodes and values get names starting with `prefix`). Throws Error naming the kernel when
// inference fails inside the body.
ValueId expand_kernel_body(Graph& graph, const KernelBody& body, const std::vector<ValueId>& inputs,
                           const std::string& prefix, const std::string& output_name);

// The body alone as a graph: inputs `?0..` of the given types (nullptr values are inputs; a
// known constant value becomes a weight, so shape-computing inputs stay known), one output.
Graph kernel_body_graph(const KernelBody& body, const std::vector<const TensorType*>& input_types,
                        const std::vector<const Tensor*>& input_values = {});

// `graph` with every Kernel node replaced by its expansion (value names of kernel outputs kept).
// `origin`, when given, receives for each node of the result the node of `graph` it comes from.
Graph inline_kernels(const Graph& graph, std::vector<NodeId>* origin = nullptr);
bool has_kernels(const Graph& graph);

}  // namespace eqfuse::ir
