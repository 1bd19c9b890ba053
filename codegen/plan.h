#pragma once
// The kernel plan: what code generation lowers, decided once for both targets.
//
// The optimized graph's kernels are expanded into ordinary nodes (their bodies are the only
// statement of what they compute, ir/kernel_body.h), and the flat graph is cut into stages. A
// stage writes one materialized value with one loop nest: element by element for pointwise work
// (elementwise ops, and layout ops folded into indexing: Transpose, Reshape, Slice, Concat,
// Expand, Gather), row by row for reductions (Reduce*, Softmax, LayerNormalization, pooling),
// as a contraction (MatMul, Gemm, Conv), and as attention: softmax(S)·V, where S is a MatMul
// Q·K under pointwise work (a scale, a mask), in one stage that never stores S (an online
// softmax over blocks of keys, FlashAttention's algorithm). A value is materialized when it
// leaves a top-level node (a kernel's output, or a plain op's other than a Reshape, Flatten,
// Squeeze, Unsqueeze, Identity or Dropout, which its readers index through), when a reduction or
// contraction makes it, or when a contraction reads it (contractions read contiguous operands; an
// attention stage reads Q, K and V through the layout ops that make them); everything else inside a
// kernel is recomputed in registers where it is used, as the fusion chose. A reduction of the last
// axis that only elementwise work of its kernel reads, up to values of its input's shape, is
// computed inside the stage writing that value, a row at a time (a rows stage).
//
// Materialized values live in the caller's input and output buffers, in the weights blob (one
// file, 64-byte aligned), or in one arena planned by liveness (codegen/buffer_plan.h). Shapes
// stay symbolic: dims such as `batch` are run-time parameters, so one build serves every size.
#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "codegen/buffer_plan.h"
#include "ir/graph.h"

namespace eqfuse::codegen {

enum class StageKind {
  Pointwise,  // out[i] = element expression
  Reduce,     // Reduce*, GlobalAveragePool, GlobalMaxPool
  Softmax,    // Softmax, LogSoftmax
  LayerNorm,  // LayerNormalization
  MatMul,
  Gemm,
  Conv,
  Pool,       // MaxPool, AveragePool
  Attention,  // MatMul(Softmax(pointwise(MatMul(Q, K))), V), Stage::attention
  Rows,       // pointwise over rows, with reductions of those rows inside (Stage::row_reductions)
};
std::string_view stage_kind_name(StageKind kind);
// The contractions, which may compute the pointwise stage right after them where they store
// (Stage::last_read_at_own_element).
inline bool takes_epilogue(StageKind kind) {
  return kind == StageKind::Conv || kind == StageKind::MatMul || kind == StageKind::Gemm;
}

struct Stage {
  StageKind kind = StageKind::Pointwise;
  ir::NodeId node = ir::kNoNode;  // in KernelPlan::graph; kNoNode: a copy of `source`
  ir::ValueId output = 0;
  ir::ValueId source = 0;          // copies only (an output that is an input or a weight)
  size_t step = 0;                 // the top-level node it belongs to
  std::vector<ir::ValueId> reads;  // materialized values it reads
  // Pointwise stages: an arena value it reads for the last time, and only at the element it
  // writes. The stage may write in place over it, and a contraction that makes it may compute
  // this stage where it stores (the printer's epilogue merge).
  std::optional<ir::ValueId> last_read_at_own_element;
  // That value, when the stage writes over its arena slot (buffer_plan.h); generated code then
  // drops `restrict` on the pair.
  std::optional<ir::ValueId> in_place_of;
  // A Concat or a layout copy whose inputs their producers write at their places in it
  // (Buffer::stored_in): the stage does nothing.
  bool written_by_producers = false;
  // Attention stages: the scores MatMul (Q·K) and the Softmax; `node` is the MatMul by V. The
  // values between them stay in registers; Q, K and V are read through whatever makes them in
  // the same top-level node.
  struct AttentionNodes {
    ir::NodeId scores = ir::kNoNode, softmax = ir::kNoNode;
  };
  std::optional<AttentionNodes> attention;
  // Stages of a plan for the C++ twin (PlanOptions::weight_blocks): a weight of the plan that
  // holds the stage's weights reordered, read instead of them. A convolution's, in blocks of
  // kWeightBlock output channels, [M / 16][C][KH][KW][16] (the channel tiles: a vector of 16
  // output channels' weights for each input channel and tap). A matrix product's B (B^T for a
  // Gemm's transB), in panels of kPanelWidth columns, [ceil(N / 64)][K][64], zero past column N:
  // a register tile's columns lie in one contiguous run per k, and its loads never stop short.
  // A 1x1 convolution's W^T, as such panels (kPanelReduction).
  std::optional<ir::ValueId> weight_blocks;
  // A 3x3 convolution at stride 1 the twin computes by Winograd's F(m x m, 3 x 3) (winograd.h):
  // m, 2 or 4, the output tile's size; 0 for another form. `weight_blocks` then holds U = G g G^T
  // of each filter g in blocks of kWeightBlock output channels, [M / 16][alpha^2][C][16] (the
  // places of the alpha x alpha tile, alpha = m + 2, then the input channel, then the block's
  // channels).
  int winograd = 0;
  // Rows stages: the reductions of the last axis (Reduce*, keepdims) that its elements read,
  // inner ones first (one may read another). A row at a time, each is computed over the row and
  // kept in registers, then the row is written: a LayerNorm or RMSNorm written out, or a
  // Softmax decomposed, in one pass over memory.
  std::vector<ir::NodeId> row_reductions;
};

// One node of the optimized graph: a fused kernel or a plain op, lowered to stages.
struct Step {
  std::string name;   // its first output's name
  std::string label;  // "kernel pointwise", "Conv", ...
  std::vector<size_t> stages;
  ir::NodeId node = ir::kNoNode;  // in the graph make_plan was given; kNoNode for a copy
};

enum class Storage { Input, Output, Weight, Arena };

struct Buffer {
  ir::ValueId value = 0;
  Storage storage = Storage::Arena;
  ir::DType dtype = ir::DType::f32;  // what memory holds: the value's dtype, or the precision
  size_t index = 0;                  // position among inputs / outputs / weights; the arena slot
  uint64_t offset = 0;               // weights: byte offset in the weights blob
  ir::SymInt bytes = 0;              // its size
  // A value that only a Concat or a layout copy reads, kept in that reader's buffer at each
  // element's place there (it has no buffer of its own; its producer stores it so):
  // `stored_in` is the reader's output, `placed_by` the ops from the value to it (a Concat; or
  // Transposes and ops that keep the linear index, Reshape, Flatten, Squeeze, Unsqueeze,
  // Identity and Dropout, each element going to one place).
  std::optional<ir::ValueId> stored_in;
  std::vector<ir::NodeId> placed_by;
  // Layout copies of a value that others read too: its producer stores each element in its own
  // buffer and at its place in each copy's (`value` the copy, `by` the ops to it, as above).
  struct Place {
    ir::ValueId value = 0;
    std::vector<ir::NodeId> by;
  };
  std::vector<Place> also_stored_in;
  // Stored as itself only, where a library call may write or read it.
  bool plain() const { return !stored_in && also_stored_in.empty(); }
};

// `--precision`: the element type that f32 weights and intermediates are stored in. f16 or bf16
// halves their memory traffic; every kernel still computes in f32 (a value is converted on load
// and rounded to nearest even on store), and the model's inputs and outputs stay f32. This is an
// approximation the user asks for, never a default: results differ from the f32 model by the
// rounding of each stored tensor (`precision_tolerance`).
struct PlanOptions {
  ir::DType precision = ir::DType::f32;  // f32, f16 or bf16
  // A contraction in loops of our own computes the pointwise stage after it where it stores
  // (Stage::last_read_at_own_element). Off: that stage is a pass of its own (for measuring).
  bool epilogues_in_contractions = true;
  // A layout copy (the Transpose before a GEMM) is stored by its value's producer where that
  // is loops of ours (Buffer::stored_in, also_stored_in). Off: a copy stage (the optimizer's
  // pricing of one kernel alone, which cannot see a copy's producer outside it).
  bool layout_copies_by_producers = true;
  // softmax(S)·V as one attention stage where the graph has that form (StageKind::Attention).
  // Off: a MatMul, a Softmax and a MatMul stage, S and softmax(S) stored (for measuring).
  bool attention_stages = true;
  // CUDA: 16-bit attention and convolution tiles multiply on tensor cores (mma.sync m16n8k16,
  // sm_80 or newer). Off: they run on the FP32 units as f32 ones do, for older GPUs.
  bool tensor_cores = true;
  // CUDA trees: a library product takes the bias, ReLU and residual after it in cuBLASLt's
  // epilogue where it can. Off: cuBLAS and the kernels after it, as the hosted form runs them
  // (`eqfuse compile --no-cublaslt`: for trees without cuBLASLt, and for pricing GPU runs that
  // predate it).
  bool cublaslt = true;
  // The C++ twin: a 2-D convolution (one group, output channels a multiple of kWeightBlock,
  // kernel larger than 1x1 and at most kMaxBlockedKernel wide, at least kBlockedReduction
  // products an output, static spatial sizes, f32) reads its weights in blocks
  // (Stage::weight_blocks), so that it vectorizes along output channels: no lane idles on a row
  // of 7 or 14, and no product with the padding is computed; a 3x3 one at stride 1 reads them
  // transformed for Winograd's F(m x m, 3 x 3) (Stage::winograd). A matrix product whose B is a
  // weight (f32, 2-D, static) reads it in panels of kPanelWidth columns. CUDA never reads them
  // (off for its plans: the blob would hold the weights twice).
  bool weight_blocks = false;
};

inline constexpr int64_t kWeightBlock = 16;
// Columns of a panel of a matrix product's B (Stage::weight_blocks): the twin's widest register
// tile, 4 vectors of 16 floats, a multiple of its narrower ones.
inline constexpr int64_t kPanelWidth = 64;
inline constexpr int64_t kMaxBlockedKernel = 7;
// Measured on the shared convnets: a 1x1 convolution (a matrix product), or one whose outputs
// sum fewer products (SqueezeNet's 3x3 over 16 channels, MobileNet's first over 3), runs faster
// in the twin's other tiles.
inline constexpr int64_t kBlockedReduction = 256;
// A 1x1 convolution (one group, no padding, output channels a multiple of kPanelWidth) whose
// outputs sum at least kBlockedReduction products, or at a stride at least this many, reads W^T
// in panels: a matrix product of its pixels by its channels (the product form,
// body_conv_product). Measured on the shared convnets: over fewer input channels at stride 1
// (MobileNet's expansions over 64 to 160, a ResNet-50 1x1 over 64 onto 56 x 56) the flat row
// tiles ran up to 1.3x faster; at a stride the row tiles leave lanes idle and lose.
inline constexpr int64_t kPanelReduction = 64;
// The narrowest output row a Winograd convolution takes (Stage::winograd). Measured on ResNet-18:
// its 7-wide rows (4 tiles a row, so each output row pair streams the transformed weights, 16/9
// of the filters' size, for 4 tiles) ran slower than the channel tiles; 14-wide ones faster.
inline constexpr int64_t kWinogradMinWidth = 10;
// The narrowest that takes tiles of 4x4 outputs, F(4x4, 3x3), rather than 2x2.
inline constexpr int64_t kWinograd4MinWidth = 28;
// The most input channels it takes: an item keeps a vector of tiles' transformed inputs for every
// channel on the stack (printer_winograd.cpp), 16 places a tile for m = 2, 36 for m = 4.
inline constexpr int64_t kWinogradMaxChannels = 256;
inline constexpr int64_t kWinograd4MaxChannels = 128;

// "f32", "f16" or "bf16" as a precision; Error (BadInput) naming the text otherwise.
ir::DType parse_precision(const std::string& name);

// Whether a CUDA architecture has the tensor-core instructions the printer uses (sm_80 or
// newer): "sm_90a", "sm_86", "75", or what CMake's CUDA_ARCHITECTURES takes ("80;90" when every
// entry does, "90a-real"; "all" and "all-major" as no, "native" as yes). Error (BadInput) naming
// the text when it is none of those.
bool arch_has_tensor_cores(const std::string& arch);

// The entries of a CUDA architecture list ("sm_80;90a-real"), each without "sm_" ("80",
// "90a-real"), as CMake's CUDA_ARCHITECTURES takes them; empty entries kept.
std::vector<std::string> cuda_arch_entries(const std::string& arch);

// The tolerance (rtol, atol) at which a plan's outputs are checked against the f32 model's:
// 1e-3/1e-4 at f32, wider where stored tensors are rounded to 16 bits (measured on the shared
// models, README).
std::pair<double, double> precision_tolerance(ir::DType precision);

struct KernelPlan {
  ir::DType precision = ir::DType::f32;   // PlanOptions::precision
  bool epilogues_in_contractions = true;  // PlanOptions::epilogues_in_contractions
  bool tensor_cores = true;               // PlanOptions::tensor_cores
  bool cublaslt = true;                   // PlanOptions::cublaslt
  ir::Graph graph;                        // the optimized graph with kernels expanded
  std::vector<std::string> dims;          // symbolic dims, the order of the run-time dims array
  std::vector<Stage> stages;
  std::vector<Step> steps;
  std::vector<Buffer> buffers;
  std::map<ir::ValueId, size_t> buffer_of;  // materialized value -> buffers index
  std::vector<ir::ValueId> weights;         // in blob order
  uint64_t weight_bytes = 0;
  BufferPlan arena;                 // slots of the Arena buffers, by liveness
  std::vector<Lifetime> lifetimes;  // what `arena` was planned from, per Arena buffer in order

  const Buffer* buffer(ir::ValueId v) const {
    auto it = buffer_of.find(v);
    return it == buffer_of.end() ? nullptr : &buffers[it->second];
  }
  // The value whose buffer holds v's elements: v's own, or where Buffer::stored_in leads (a
  // stage writing v names it).
  ir::ValueId holder(ir::ValueId v) const {
    for (const Buffer* b = buffer(v); b && b->stored_in; b = buffer(v)) v = *b->stored_in;
    return v;
  }
  // The C spelling of dim `name` in generated code ("d0").
  std::string dim_ident(const std::string& name) const;
};

// Plans `graph` (typically optimize()'s output). Throws Error (Unsupported) naming the op and
// node of anything generated code cannot compute: opaque ops, ops without a lowering, dtypes
// other than f32/f64/integers/bool, unknown dims.
// Error (BadInput) for a precision other than f32, f16 and bf16.
KernelPlan make_plan(const ir::Graph& graph, const PlanOptions& options = {});

// By node of `graph`: whether generated code runs it as nothing, every stage of its step a
// Concat or layout copy that its producers store in place (Stage::written_by_producers). The
// cost model prices such a node free and the optimizer does not count it as a launch. All false
// where `graph` cannot be planned (an opaque op, say): then each node runs as itself.
std::vector<bool> nodes_stored_by_producers(const ir::Graph& graph,
                                            const PlanOptions& options = {});

// Whether a weight's data can be read: in memory, or in an external file that exists (a
// structure-only model's is absent: trees and benches seed such weights).
bool has_weight_data(const ir::Value& v);

// The weights blob: every weight at its planned offset in its buffer's dtype (zero padding
// between).
std::vector<unsigned char> weights_blob(const KernelPlan& plan);

// The dims of a run: each plan dim read from the first input that has it. Error naming the
// input when an input's shape disagrees with its type.
std::vector<int64_t> bind_dims(const KernelPlan& plan, const std::vector<ir::Tensor>& inputs);

// Fixes symbolic dims to sizes (`eqfuse compile --dim`): every dim whose symbols are all given
// becomes static. For comparing a specialized build with the generic one.
void specialize_dims(ir::Graph& graph, const std::map<std::string, int64_t>& sizes);

// Makes the leading dim of every input the symbol `name` and re-infers every type from there
// (`eqfuse compile --dynamic-batch`, for models exported at a fixed batch). Error (BadInput)
// naming the node where the graph fixes the batch (a Reshape to a constant shape) or an output
// whose leading dim does not follow.
void make_batch_dynamic(ir::Graph& graph, const std::string& name = "batch");

// An output's concrete dims under a binding.
std::vector<int64_t> output_dims(const KernelPlan& plan, size_t output,
                                 const std::vector<int64_t>& dims);

}  // namespace eqfuse::codegen
