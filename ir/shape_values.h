#pragma once
// Symbolic values of shape computations. Exporters write the reshapes of a model with a dynamic
// batch as chains such as Shape(x) -> Gather(0) -> Unsqueeze -> Concat(.., [-1, 64]) ->
// Reshape, whose values are not constants but are known as expressions of the input's dims.
// This pass follows those chains (as ONNX's data propagation does), so that Reshape, Expand,
// Slice, Range and ConstantOfShape infer [batch,4,16] instead of [?,?,?]. Where every element
// of a value turns out constant (Gather of a static dim of a partly dynamic shape), the
// frontend folds it to a weight.
#include <optional>
#include <vector>

#include "ir/graph.h"
#include "ir/op_table.h"

namespace eqfuse::ir {

// The most elements a value may have and still be followed: shapes are short.
inline constexpr int64_t kMaxShapeValueElements = 64;

// The elements of `node`'s single output, row-major, as symbolic integers, given its inferred
// type; nullopt when the op is not a shape computation, the output is not a small integer (or
// bool) tensor, or nothing is known. Elements may be SymInt::unknown().
std::optional<std::vector<SymInt>> infer_shape_value(const OpContext& ctx, const TensorType& out);
std::optional<std::vector<SymInt>> infer_shape_value(const Graph& graph, const Node& node,
                                                     const TensorType& out);

// Re-infers, in node order, every node's output types and shape values. After kernels are
// expanded (their bodies carry no shapes) this gives the body's intermediates the symbolic
// shapes that follow from the graph inputs. By default a value keeps its type where inference
// fails or knows less; `strict` (after the inputs' types changed) replaces every type and
// throws the inference Error, or one naming an opaque node, instead.
void refine_types(Graph& graph, bool strict = false);

// Integer elements when every element is a constant.
std::optional<std::vector<int64_t>> constant_elements(const std::vector<SymInt>& values);

}  // namespace eqfuse::ir
