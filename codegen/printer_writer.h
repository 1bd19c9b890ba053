#pragma once
// The printer's inside, shared by its files (codegen/printer.h is the interface): the Writer,
// which prints one stage at a time into a function (and for CUDA its launch), and the helpers
// it uses. Its methods are defined by what they print:
//   printer_writer.h         (here) index arithmetic, row loops, the Writer's state
//   printer.cpp              expressions (elementwise ops and layout index maps), pointwise
//                            stages, the stage wrapper (C++ function, CUDA kernel and launch)
//   printer_unit.cpp         the whole unit: the stages' functions, the run function, the
//                            model's interface
//   printer_index_ops.cpp    ops read at computed places (BatchNormalization, Pad, Tile,
//                            Trilu, DepthToSpace, GatherElements, GatherND, OneHot, Resize...)
//   printer_rows.cpp         Reduce*, ArgMax/ArgMin, Softmax, LayerNormalization and pooling
//   printer_attention.cpp    softmax(S)·V in one stage (CUDA cores, tensor cores, the twin)
//   printer_matmul.cpp       MatMul and Gemm in loops of our own (elements, the twin's row
//                            blocks and dot tiles)
//   printer_conv.cpp         convolution (direct loops, the twin's tiles, patch dot tiles and
//                            channel tiles, CUDA's implicit-GEMM tiles)
//   printer_winograd.cpp     the twin's 3x3 convolutions by Winograd's F(m x m, 3 x 3)
//   printer_library.cpp      cuBLAS, cuBLASLt, CBLAS and cuDNN calls, with the kernels that
//                            finish them (a Gemm's C term, the bias after cuDNN)
//   printer_runtimes.cpp     the C sources generated units include for tensor cores, the
//                            hosted table, cuBLASLt and cuDNN
#include <fmt/format.h>

#include <cmath>
#include <functional>
#include <optional>
#include <set>
#include <string>
#include <unordered_map>
#include <vector>

#include "codegen/lowering.h"
#include "codegen/plan.h"
#include "codegen/printer.h"
#include "cost/kernel_forms.h"
#include "ir/op_table.h"
#include "ir/ops/window.h"
#include "support/error.h"

namespace eqfuse::codegen::detail {

using ir::DType;
using ir::ValueId;
using Index = std::vector<std::string>;

inline std::string storage_type(DType t) {
  switch (t) {
    case DType::f32:
      return "float";
    case DType::f64:
      return "double";
    case DType::f16:
      return "eqf_f16";
    case DType::bf16:
      return "eqf_bf16";
    case DType::i64:
      return "int64_t";
    case DType::i32:
      return "int32_t";
    case DType::i8:
      return "int8_t";
    case DType::u8:
    case DType::boolean:
      return "uint8_t";
  }
  throw Error(fmt::format("codegen: dtype {} is not generated yet", ir::dtype_name(t)),
              Error::Kind::Unsupported);
}

// The type an op computes in: double when an f64 is involved, float for other floats, int64_t.
inline std::string compute_type(const std::vector<DType>& types) {
  bool any_float = false;
  for (DType t : types) {
    if (t == DType::f64) return "double";
    any_float = any_float || ir::is_floating(t);
  }
  return any_float ? "float" : "int64_t";
}

// An int64_t constant: INT64_C(-9223372036854775808) negates a literal too large for int64_t,
// so the lowest is spelled as an expression.
inline std::string int_literal(int64_t v) {
  if (v == INT64_MIN) return "(-INT64_C(9223372036854775807) - 1)";
  return fmt::format("INT64_C({})", v);
}

inline std::string literal(double v, const std::string& type) {
  if (type == "int64_t") {  // values past int64_t's range saturate
    if (v <= double(INT64_MIN)) return int_literal(INT64_MIN);
    if (v >= double(INT64_MAX)) return int_literal(INT64_MAX);
    return int_literal(int64_t(v));
  }
  if (std::isnan(v)) return fmt::format("({})NAN", type);
  if (std::isinf(v)) return fmt::format("({})({}INFINITY)", type, v < 0 ? "-" : "");
  std::string s = type == "float" ? fmt::format("{:.9g}", v) : fmt::format("{:.17g}", v);
  if (s.find_first_of(".e") == std::string::npos) s += ".0";
  return type == "float" ? s + "f" : s;
}

inline bool is_zero(const std::string& s) {
  return s == "0" || s == "INT64_C(0)";
}
inline bool is_one(const std::string& s) {
  return s == "1" || s == "INT64_C(1)";
}
inline std::string iadd(const std::string& a, const std::string& b) {
  if (is_zero(a)) return b;
  if (is_zero(b)) return a;
  return "(" + a + " + " + b + ")";
}
// The C++ twin's register tiles: sums that stay in registers, in vectors of the compilers'
// vector extension, as wide as the target's registers (vector_variants).
inline constexpr int kTileAccumulators = 8;  // vector accumulators per tile (of 16 registers)
inline constexpr int kTileAccumulatorsAvx512 = 16;  // the same of AVX-512's 32 registers
// Rows per item of a twin matrix product whose B's rows are contiguous (body_matmul_rows): whole
// register tiles of 4 rows (AVX-512) and of 6 (AVX2, SSE).
inline constexpr int64_t kMatmulBlockRows = 12;
// ... but of 4 rows where the product has fewer rows than this in all (its batch's included), so
// that its items still split evenly across threads (their work is static: `omp for
// schedule(static)`).
inline constexpr int64_t kMatmulFewRows = 192;
// Rows per block of a twin product: `most`, or where a matrix has fewer `rows`, the largest of
// 6, 4, 2 and 1 below both.
inline int64_t fit_block_rows(int64_t most, int64_t rows) {
  if (rows >= most) return most;
  for (int64_t fewer : {6, 4, 2})
    if (fewer < most && fewer <= rows) return fewer;
  return 1;
}
// A twin convolution shares its weights across several vectors of a row where each output sums
// at least this many products (body_conv_tiles).
inline constexpr int64_t kSharedReduction = 64;
// An item of the twin's channel tiles (body_conv_channels) takes up to this many blocks of
// kWeightBlock output channels ...
inline constexpr int64_t kChannelTileBlocks = 4;
// ... where the convolution keeps at least this many items (per image) with them.
inline constexpr int64_t kChannelTileItems = 32;
// ... and their weights take at most this many bytes (a row of an item reads them all, and the
// next row again: from the core's L2 where they fit).
inline constexpr int64_t kChannelTileWeightBytes = 640 * 1024;
// Columns per item of a twin matrix product (body_matmul_rows) where B's rows are contiguous (a
// multiple of every register tile's width) ...
inline constexpr int64_t kColumnChunk = 256;
// ... and where B is transposed (dot products along K).
inline constexpr int64_t kDotChunk = 64;
// A twin matrix product whose B (a weight in panels) has this many bytes or more takes its items
// panel by panel, so that a thread reuses each panel from its cache for all its rows (a core's
// L2 holds a panel of K = 3072; a B this large does not fit it whole).
inline constexpr int64_t kPanelMajorBytes = int64_t(1) << 20;
// Output pixels per item of a 1x1 convolution the twin takes as one row (body_conv_tiles).
inline constexpr int64_t kFlatConvChunk = 512;
inline constexpr int64_t kPoolChunk = 64;     // outputs of a row a twin pooling item keeps at once
inline constexpr int64_t kPointwiseRow = 16;  // the shortest static last axis pointwise_rows takes
inline constexpr int kAttentionWarps = 8;     // CUDA attention: query rows per item, a warp each
// The twin's attention: query rows per item, each block of K and V loaded once for them all
// (vit_b_16's 197 queries: 4 items a head, not 7; its attention 1.08x faster than at 32) ...
inline constexpr int kAttentionTileRows = 64;
// ... and query rows that share each load of a block's K and V.
inline constexpr int kAttentionRows = 4;
static_assert(kAttentionTileRows % kAttentionRows == 0,
              "the twin's attention items are whole groups of rows");
static_assert(kAttentionWarps * 32 == 256, "an attention item is one block of the launch's 256");
// CUDA attention on tensor cores (body_attention_mma): each of an item's 8 warps takes 16 query
// rows; the keys come in blocks of kMmaKeys. Q's depth and V's width, padded to whole steps of
// 16, are at most 128 in every attention stage (the plan's limit), so a warp's fragments stay in
// registers.
inline constexpr int64_t kMmaKeys = 64;
// CUDA convolution tiles (body_conv_gemm): output channels by pixels, in slices of kConvTileK
// k staged in shared memory. Which tiles a convolution has and which a run takes is
// cost/kernel_forms.h's, which the cost model prices.
using cost::ConvTile;
using cost::kConvFullWave;
inline constexpr int64_t kConvTileK = cost::kConvSliceK;

// The 4-element vector type a CUDA pointwise group loads or stores a buffer of `t` as in one
// access (16 bytes for f32, 8 for 16-bit types), or "" where it does not.
inline std::string group_vector(DType t) {
  return t == DType::f32    ? "float4"
         : t == DType::bf16 ? "eqf_bf16x4"
         : t == DType::f16  ? "eqf_f16x4"
                            : "";
}

inline std::string imul(const std::string& a, const std::string& b) {
  if (is_zero(a) || is_zero(b)) return "0";
  if (is_one(a)) return b;
  if (is_one(b)) return a;
  return a + " * " + b;
}

// MatMul and Gemm operand geometry: element (m, k) of A and (k, n) of B at an output index.
struct Contraction {
  ValueId a, b;
  bool gemm = false, trans_a = false, trans_b = false;
  double alpha = 1, beta = 1;
  ValueId c = ir::kNoValue;
};

Contraction contraction(const ir::Graph& g, const ir::Node& n);

// The window (stride, padding, dilation per spatial axis) of a convolution or pooling node
// with kernel extents `kernel`.
std::vector<ir::structured::WindowAxis> window_of(const ir::Graph& g, const ir::Node& n,
                                                  const std::vector<int64_t>& kernel);

// C sources a generated unit includes where it needs them (printer_runtimes.cpp).
extern const char* const kMmaHelpers;       // tensor-core fragments (mma.sync m16n8k16)
extern const char* const kHostTable;        // the EqfHost table of hosted CUDA
extern const char* const kCublasLtRuntime;  // cuBLASLt descriptors and algorithm choices
extern const char* const kCudnnRuntime;     // cuDNN's forms and their run-time choice

class Writer {
 public:
  // `hosted`: CUDA whose host part eqfuse runs (print_cuda_hosted): kernels are extern "C" and
  // the host code launches, calls cuBLAS and records events through an EqfHost table;
  // `runtime`: that host code is built against the CUDA runtime, so it may call cuBLASLt and
  // cuDNN itself, as a tree does.
  Writer(const KernelPlan& plan, Target target, bool hosted = false, bool runtime = false)
      : plan_(plan),
        g_(plan.graph),
        target_(target),
        hosted_(hosted),
        runtime_(!hosted || runtime),
        forms(plan.stages.size()) {}

  // One stage as a function (and, for CUDA, its launch), appended to `functions`; the call
  // the run function makes, appended to `calls`.
  void stage(size_t index, std::string& functions, std::string& calls);

 private:
  const KernelPlan& plan_;
  const ir::Graph& g_;
  Target target_;
  bool hosted_;
  bool runtime_;  // host code may call the CUDA runtime and its libraries (not hosted, or built so)
  std::string out_;
  int depth_ = 0;
  int counter_ = 0;
  std::vector<std::unordered_map<std::string, std::string>> scopes_;
  std::set<ValueId> used_;
  std::set<ValueId> stored_;         // buffers the body stores into (store)
  std::optional<ValueId> in_place_;  // the stage's Stage::in_place_of
  // A contraction's pointwise epilogue printed inside its loops: the next stage, when it reads
  // the contraction's value for the last time and only at the element it writes
  // (Stage::last_read_at_own_element), computed where the contraction stores instead of in a
  // pass of its own. `merged_stage_` is then skipped. While the epilogue prints, `substitute_`
  // stands for the contraction's value.
  const Stage* epilogue_ = nullptr;
  std::optional<size_t> merged_stage_;
  std::optional<std::pair<ValueId, std::string>> substitute_;
  // The pointwise stage after contraction stage `index` that may be printed inside it.
  const Stage* epilogue_after(size_t index) const {
    const Stage& s = plan_.stages[index];
    if (!takes_epilogue(s.kind)) return nullptr;
    if (!plan_.epilogues_in_contractions || index + 1 >= plan_.stages.size()) return nullptr;
    const Stage& next = plan_.stages[index + 1];
    return next.last_read_at_own_element == s.output ? &next : nullptr;
  }
  // Stores the contraction value `v` (compute type) of element `lin` of `out`, whose index is
  // `at`: into its buffer, or through the epilogue, rounded as the store and load it replaces
  // would round it.
  void store_output(ValueId out, const std::string& lin, const Index& at, const std::string& v);

  void line(const std::string& s) { out_ += std::string(size_t(depth_) * 2, ' ') + s + "\n"; }
  std::string fresh(const char* prefix) { return prefix + std::to_string(counter_++); }
  void open(const std::string& header) {
    line(header + " {");
    ++depth_;
    scopes_.emplace_back();
  }
  void close() {
    --depth_;
    line("}");
    scopes_.pop_back();
  }
  const std::string* cached(const std::string& key) const {
    for (auto it = scopes_.rbegin(); it != scopes_.rend(); ++it)
      if (auto f = it->find(key); f != it->end()) return &f->second;
    return nullptr;
  }

  const ir::TensorType& type(ValueId v) const { return g_.value(v).type; }
  size_t rank(ValueId v) const { return type(v).shape.rank(); }
  std::string dim(const ir::Dim& d) const {
    if (d.is_static()) return std::to_string(d.value());
    // Parenthesized: dims are operands of %, / and * in index arithmetic.
    return "(" + d.sym().c_expr([&](const std::string& s) { return plan_.dim_ident(s); }) + ")";
  }
  std::string dim(ValueId v, size_t k) const { return dim(type(v).shape[k]); }
  bool dim_is_one(ValueId v, size_t k) const {
    const ir::Dim& d = type(v).shape[k];
    return d.is_static() && d.value() == 1;
  }
  std::string numel(ValueId v) const {
    std::string n = "1";
    for (size_t k = 0; k < rank(v); ++k) n = imul(n, dim(v, k));
    return n;
  }
  // The element type of v's buffer, which under --precision differs from v's own (loads
  // convert to v's type, stores convert from it).
  std::string buffer_type(ValueId v) const { return storage_type(plan_.buffer(v)->dtype); }
  std::string ptr(ValueId v) {
    if (!plan_.buffer(v))
      throw Error(fmt::format("codegen: internal: value '{}' has no buffer", g_.value(v).name),
                  Error::Kind::Internal);
    used_.insert(v);
    return fmt::format("p{}", plan_.buffer_of.at(v));
  }

  // The statement storing `value` as element `lin` (index `at`) of `v`: into v's buffer, unless
  // v is kept in a Concat's or layout copy's (Buffer::stored_in), and at each place a layout copy
  // of it takes (also_stored_in), followed through the ops between them and on, where those
  // values are kept elsewhere in turn. A place through a Gather of one slice takes only the
  // slice's elements (a store under a condition).
  struct Ref {
    std::string condition;  // empty: always
    std::string target;
  };
  std::string store(ValueId v, const std::string& lin, const Index& at, const std::string& value) {
    std::vector<Ref> refs;
    store_places(v, lin, at, "", refs, true);
    return assign(refs, value);
  }
  // Only the layout copies' places (a grouped stage stores v's own elements 4 at a time).
  std::string store_copies(ValueId v, const std::string& lin, const Index& at,
                           const std::string& value) {
    std::vector<Ref> refs;
    store_places(v, lin, at, "", refs, false);
    return assign(refs, value);
  }
  std::string assign(const std::vector<Ref>& refs, const std::string& value) {
    auto one = [](const Ref& r, const std::string& v) {
      return r.condition.empty() ? fmt::format("{} = {};", r.target, v)
                                 : fmt::format("if ({}) {} = {};", r.condition, r.target, v);
    };
    if (refs.empty()) return "";
    if (refs.size() == 1) return one(refs[0], value);
    const std::string t = fresh("st");
    std::string stmt = fmt::format("const auto {} = {};", t, value);
    for (const Ref& r : refs) stmt += " " + one(r, t);
    return stmt;
  }
  void store_places(ValueId v, const std::optional<std::string>& lin,
                    const std::optional<Index>& at, const std::string& condition,
                    std::vector<Ref>& refs, bool own) {
    const Buffer& b = *plan_.buffer(v);
    if (own && b.stored_in) {
      std::optional<std::string> held_lin = lin;
      std::optional<Index> held_at = at;
      std::string held_condition = condition;
      const ValueId h = place(v, b.placed_by, held_lin, held_at, held_condition);
      store_places(h, held_lin, held_at, held_condition, refs, true);
    } else if (own) {
      stored_.insert(v);
      refs.push_back({condition, fmt::format("{}[{}]", ptr(v), lin ? *lin : linear(v, *at))});
    }
    for (const Buffer::Place& p : b.also_stored_in) {
      std::optional<std::string> copy_lin = lin;
      std::optional<Index> copy_at = at;
      std::string copy_condition = condition;
      const ValueId h = place(v, p.by, copy_lin, copy_at, copy_condition);
      store_places(h, copy_lin, copy_at, copy_condition, refs, true);
    }
  }
  // Follows an element of `v` (its linear index `lin` or its index `at`, whichever the next op
  // needs, the other reset) through layout ops `by` (Transposes, Concats, Gathers of one slice,
  // which add to `condition` that the element is in the slice, and ops that keep the linear
  // index) to the value they make, which it returns.
  ValueId place(ValueId v, const std::vector<ir::NodeId>& by, std::optional<std::string>& lin,
                std::optional<Index>& at, std::string& condition) {
    for (ir::NodeId id : by) {
      const ir::Node& n = g_.node(id);
      const ValueId out = n.outputs[0];
      if (const auto slice = gathered_slice(g_, n)) {
        if (!at) at = decompose_value(*lin, v);
        Index moved = *at;
        const std::string& k = moved[slice->axis];
        const std::string in_slice = fmt::format("{} == {}", k, slice->index);
        if (k != std::to_string(slice->index))  // "0" where the axis is 1 long
          condition = condition.empty() ? in_slice : condition + " && " + in_slice;
        if (slice->keeps_axis)
          moved[slice->axis] = "0";
        else
          moved.erase(moved.begin() + long(slice->axis));
        at = std::move(moved);
        lin.reset();
      } else if (n.op_type == "Concat" && lin) {
        lin = concat_place(v, n, *lin);
        at.reset();
      } else if (n.op_type == "Transpose" || n.op_type == "Concat") {
        if (!at) at = decompose_value(*lin, v);
        Index moved = *at;
        if (n.op_type == "Transpose") {
          ir::OpContext ctx = ir::make_context(g_, n);
          const size_t r = rank(v);
          std::vector<int64_t> perm;
          if (ctx.has_attr("perm"))
            perm = ctx.attr_ints("perm");
          else
            for (size_t k = r; k-- > 0;) perm.push_back(int64_t(k));
          for (size_t k = 0; k < r; ++k) moved[k] = (*at)[size_t(perm[k])];
        } else {
          int64_t axis = ir::make_context(g_, n).attr_int("axis");
          if (axis < 0) axis += int64_t(rank(out));
          const ir::SymInt offset = concat_offset(v, n, size_t(axis));
          const std::string o =
              offset.c_expr([&](const std::string& s) { return plan_.dim_ident(s); });
          moved[size_t(axis)] = iadd(moved[size_t(axis)], "(" + o + ")");
        }
        at = std::move(moved);
        lin.reset();
      } else {  // keeps the linear index
        if (!lin) lin = linear(v, *at);
        at.reset();
      }
      v = out;
    }
    return v;
  }
  // The parts of Concat `n` before part `v` along its axis (how far v's slice starts in it).
  ir::SymInt concat_offset(ValueId v, const ir::Node& n, size_t axis) const {
    ir::SymInt offset = 0;
    for (ValueId part : n.inputs) {
      if (part == v) break;
      if (part != ir::kNoValue) offset = offset + type(part).shape[axis].sym();
    }
    return offset;
  }
  // The linear index in Concat `n`'s output of element `lin` of its part `v`, kept linear: the
  // slice starts `offset` rows of the dims after the axis in, and each index of the dims before
  // the axis skips the other parts' elements. Where those dims are all 1 (a batch of one along
  // channels) that is an addition, which keeps a row's stores contiguous and vectorized; split
  // into coordinates and recombined, it cost a division and a modulo per element.
  std::string concat_place(ValueId v, const ir::Node& n, const std::string& lin) const {
    const ValueId out = n.outputs[0];
    int64_t signed_axis = ir::make_context(g_, n).attr_int("axis");
    if (signed_axis < 0) signed_axis += int64_t(rank(out));
    const size_t axis = size_t(signed_axis);
    const auto& part = type(v).shape;
    const auto& whole = type(out).shape;
    ir::SymInt inner = 1, outer = 1;
    for (size_t k = axis + 1; k < rank(v); ++k) inner = inner * part[k].sym();
    for (size_t k = 0; k < axis; ++k) outer = outer * part[k].sym();
    auto c = [&](const ir::SymInt& x) {
      return "(" + x.c_expr([&](const std::string& d) { return plan_.dim_ident(d); }) + ")";
    };
    const ir::SymInt start = concat_offset(v, n, axis) * inner;
    std::string moved = start.constant() == 0 ? lin : iadd("(" + lin + ")", c(start));
    if (outer.constant() != 1) {
      const ir::SymInt skipped = (whole[axis].sym() - part[axis].sym()) * inner;
      moved =
          iadd(moved, imul("((" + lin + ") / " + c(part[axis].sym() * inner) + ")", c(skipped)));
    }
    return moved;
  }
  // The buffer a stage writing `v` names: the Concat's or layout copy's that keeps it.
  ValueId written_buffer(ValueId v) const { return plan_.holder(v); }

  // The key under which a scope remembers that `idx` in a row-major shape of `dims` is the linear
  // index it was split from (decompose), so that reading a value of that shape at that index
  // (an operand of the output's shape, a reshape of it) uses the linear index as it is instead
  // of recombining the split.
  static std::string split_key(const std::vector<std::string>& dims, const Index& idx) {
    std::string key = "split:";
    for (const std::string& d : dims) key += d + ",";
    key += "|";
    for (const std::string& i : idx) key += i + ",";
    return key;
  }
  // split_key of `idx` in v's shape.
  std::string split_key(ValueId v, const Index& idx) const {
    std::vector<std::string> dims;
    for (size_t k = 0; k < idx.size(); ++k) dims.push_back(dim(v, k));
    return split_key(dims, idx);
  }
  std::string linear(ValueId v, const Index& idx) const {
    if (!idx.empty())
      if (const std::string* lin = cached(split_key(v, idx))) return *lin;
    std::string lin = "0";
    for (size_t k = 0; k < idx.size(); ++k) {
      std::string d = dim(v, k);
      lin = iadd(imul(lin.size() > 1 && lin != "0" ? "(" + lin + ")" : lin, d), idx[k]);
    }
    return lin;
  }
  Index decompose(const std::string& lin, const std::vector<std::string>& dims,
                  const std::vector<bool>& one) {
    Index idx(dims.size(), "0");
    if (dims.empty()) return idx;
    std::string r = fresh("r");
    line(fmt::format("int64_t {} = {};", r, lin));
    for (size_t k = dims.size(); k-- > 1;) {
      if (one[k]) continue;
      std::string v = fresh("i");
      line(fmt::format("const int64_t {} = eqf_divmod(&{}, {});", v, r, dims[k]));
      idx[k] = v;
    }
    if (!one[0]) {
      idx[0] = fresh("i");
      line(fmt::format("const int64_t {} = {};", idx[0], r));
    }
    // A body need not read every coordinate (a broadcast operand skips some).
    std::string unused = fmt::format("(void){};", r);
    for (const std::string& v : idx)
      if (v != "0") unused += fmt::format(" (void){};", v);
    line(unused);
    scopes_.back()[split_key(dims, idx)] = lin;
    return idx;
  }
  Index decompose_value(const std::string& lin, ValueId v) {
    std::vector<std::string> dims;
    std::vector<bool> one;
    for (size_t k = 0; k < rank(v); ++k) {
      dims.push_back(dim(v, k));
      one.push_back(dim_is_one(v, k));
    }
    return decompose(lin, dims, one);
  }
  // Element (row, col) of operand `v` (rank >= 2) of a batched MatMul whose output `out` is at
  // index `batch` along its batch dims, under numpy broadcasting of the batch dims.
  Index matrix_index(ValueId v, const Index& batch, const std::string& row, const std::string& col,
                     ValueId out) const {
    size_t r = rank(v) - 2, nb = batch.size(), base = rank(out) - 2 - nb;
    Index idx(r);
    for (size_t q = 0; q < r; ++q)
      idx[q] = broadcast_coordinate(v, q, type(out).shape[base + nb - r + q], batch[nb - r + q]);
    idx.push_back(row);
    idx.push_back(col);
    return idx;
  }
  // Coordinate k of `in` read where the broadcast result's coordinate along a dim `over` is `i`:
  // 0 where in's dim is 1. A dim of `in` that is a symbol where `over` is not the same symbol may
  // be 1 as it runs (a symbol against a static 5 infers as 5): its coordinate is 0 then, tested
  // in the code.
  std::string broadcast_coordinate(ValueId in, size_t k, const ir::Dim& over,
                                   const std::string& i) const {
    const ir::Dim& d = type(in).shape[k];
    if (dim_is_one(in, k)) return "0";
    if (!d.is_static() && !(over == d)) return fmt::format("({} == 1 ? 0 : {})", dim(in, k), i);
    return i;
  }
  // The index of `in` read at index `idx` of `over` (its last idx.size() dims) under numpy
  // broadcasting (broadcast_coordinate).
  Index broadcast_index(ValueId in, const Index& idx, ValueId over) const {
    size_t r = rank(in), off = idx.size() - r, base = rank(over) - idx.size();
    Index out(r);
    for (size_t k = 0; k < r; ++k)
      out[k] = broadcast_coordinate(in, k, type(over).shape[base + off + k], idx[off + k]);
    return out;
  }

  // Row loops of Softmax and LayerNorm: serial on the CPU; on CUDA a warp takes a row, its
  // lanes stride along it and combine their partial results with shuffles.
  // A static row longer than kMaxCachedRow takes a whole block (block_rows_): its 256 threads
  // stride the row, and combine by warp shuffles, then across the 8 warps in shared memory.
  bool warp_rows_ = false;
  bool block_rows_ = false;
  int row_stride() const { return block_rows_ ? 256 : 32; }
  std::string row_loop(const std::string& j, const std::string& extent) const {
    if (!warp_rows_) return fmt::format("for (int64_t {} = 0; {} < {}; ++{})", j, j, extent, j);
    return fmt::format("for (int64_t {} = {}; {} < {}; {} += {})", j,
                       block_rows_ ? "threadIdx.x" : "lane", j, extent, j, row_stride());
  }
  // Reduce* and ArgMax/ArgMin: on CUDA, where the reduced elements are a row of consecutive ones
  // (`row`) of compute type float or double, a warp takes each output if the row has at least a
  // warp's width or a run-time extent (`extent` where static), a block if it is static and over
  // kMaxCachedRow; elsewhere a thread takes each output.
  void choose_row_threads(bool row, const std::string& ct, std::optional<int64_t> extent) {
    warp_rows_ = target_ == Target::Cuda && row && (ct == "float" || ct == "double") &&
                 (!extent || *extent >= 32);
    if (warp_rows_ && extent && *extent > kMaxCachedRow) block_rows_ = block_items_ = true;
  }
  void row_combine(const char* how, const std::string& var) {
    if (warp_rows_)
      line(fmt::format("{} = eqf_{}_{}({});", var, block_rows_ ? "block" : "warp", how, var));
  }
  // A row a warp reads more than once (Softmax, LayerNorm) is read from memory once where its
  // extent is static and at most kMaxCachedRow: each lane keeps its elements (lane, lane + 32,
  // ...) in registers, `cache` (an array of `chunks`), so that the later passes over the row
  // read those instead of memory; a block's row, where it is at most kMaxBlockRow, likewise
  // (thread t keeps t, t + 256, ...). `open_row` opens a pass (j the element's index in the row),
  // `close_row` closes it.
  struct RowPasses {
    std::string j, extent, cache;
    int64_t chunks = 0;  // 0: not cached
    std::string chunk;   // the pass's loop counter where cached
  };
  static constexpr int64_t kMaxCachedRow = 1024, kMaxBlockRow = 8192;
  // `static_extent`: the row's element count where it is static. Decides block_rows_.
  // `cache_array`: declare the cache (a rows stage caches its buffers itself, RowCache).
  RowPasses row_passes(const std::string& j, const std::string& extent,
                       std::optional<int64_t> static_extent, const std::string& ct,
                       bool cache_array = true) {
    RowPasses p{j, extent, "", 0, ""};
    if (warp_rows_ && static_extent && *static_extent > kMaxCachedRow)
      block_rows_ = block_items_ = true;
    if (warp_rows_ && static_extent &&
        *static_extent <= (block_rows_ ? kMaxBlockRow : kMaxCachedRow)) {
      p.chunks = (*static_extent + row_stride() - 1) / row_stride();
      p.cache = fresh("row");
      if (cache_array) line(fmt::format("{} {}[{}];", ct, p.cache, p.chunks));
    }
    return p;
  }
  void open_row(RowPasses& p) {
    if (!p.chunks) {
      simd_sum_loop();
      return open(row_loop(p.j, p.extent));
    }
    p.chunk = fresh("c");
    line("#pragma unroll");
    open(fmt::format("for (int {} = 0; {} < {}; ++{})", p.chunk, p.chunk, p.chunks, p.chunk));
    line(fmt::format("const int64_t {} = {} + {} * {};", p.j, block_rows_ ? "threadIdx.x" : "lane",
                     p.chunk, row_stride()));
    open(fmt::format("if ({} < {})", p.j, p.extent));
  }
  void close_row(const RowPasses& p) {
    if (p.chunks) close();
    close();
  }
  // The row's element in a pass: what `load` prints (uncached, or the first pass, which fills
  // the cache), or the cache's slot (the later passes, which print no load).
  std::string row_element(const RowPasses& p, bool first, const std::function<std::string()>& load,
                          const std::string& ct) {
    if (!p.chunks) return load();
    const std::string slot = fmt::format("{}[{}]", p.cache, p.chunk);
    if (first) line(fmt::format("{} = ({}){};", slot, ct, load()));
    return slot;
  }

  // A rows stage (body_rows): each reduction it computes inside, as the variable holding it for
  // the row, which elem() gives for the reduction's value.
  std::map<ValueId, std::string> row_scalars_;
  // Where its row is cached (RowPasses::chunks): each of `values` that a pass reads at the
  // row's element `at` is kept in registers (`arrays`, declared at `declare_at` once the body
  // is printed) by the first pass that reads it (`filling`), and read from there by the later
  // ones (`filled`).
  struct RowCache {
    Index at;
    std::string chunk;
    int64_t chunks = 0;
    size_t declare_at = 0;
    int depth = 0;
    std::set<ValueId> values;
    std::map<ValueId, std::string> arrays;
    std::set<ValueId> filled, filling;
  };
  // The values that more than one pass of rows stage `s` reads at the row's element, where no
  // other such value holds them for every pass but one (body_rows).
  std::set<ValueId> shared_row_values(const Stage& s) const;
  std::optional<RowCache> row_cache_;
  // One reduction `op` (Reduce*'s ops) of a row of `count` elements in the compute type `ct`:
  // declares its accumulator, runs `pass` (a loop over the row calling its argument on each
  // element) once or twice, combines the partial results across a warp or block, and returns
  // the result's expression.
  using RowPass = std::function<void(const std::function<void(const std::string&)>&)>;
  std::string row_reduction(const std::string& op, const std::string& ct, const std::string& count,
                            const RowPass& pass);
  // The C++ twin's sum of a row in floating point: the accumulator that the next loop a pass
  // opens sums, which simd_sum_loop declares to OpenMP so that the compiler may vectorize it
  // (reordering the sum, as a warp's lanes do on CUDA); "" none.
  std::string simd_sum_;
  void simd_sum_loop() {
    if (!simd_sum_.empty()) line(fmt::format("#pragma omp simd reduction(+ : {})", simd_sum_));
    simd_sum_.clear();
  }

  std::string elem(ValueId v, const Index& idx);
  std::string elem_uncached(ValueId v, const Index& idx);  // elem's computation or load
  std::string compute(const ir::Node& n, const Index& idx);
  std::string scalar(const ir::Node& n, const Index& idx);
  std::string reshape(ValueId in, ValueId out, const Index& idx);
  std::string slice(const ir::Node& n, const Index& idx);
  std::string concat(const ir::Node& n, const Index& idx);
  std::string gather(const ir::Node& n, const Index& idx);
  std::string shape(const ir::Node& n, const Index& idx);
  // printer_index_ops.cpp: ops reading their inputs at computed places.
  std::string value_in(ValueId out, const std::string& ct, const std::string& expr);
  std::string batch_norm(const ir::Node& n, const Index& idx);
  std::string trilu(const ir::Node& n, const Index& idx);
  std::string tile(const ir::Node& n, const Index& idx);
  std::string depth_space(const ir::Node& n, const Index& idx);
  std::string gather_elements(const ir::Node& n, const Index& idx);
  std::string gather_nd(const ir::Node& n, const Index& idx);
  std::string pad(const ir::Node& n, const Index& idx);
  std::string one_hot(const ir::Node& n, const Index& idx);
  std::string resize(const ir::Node& n, const Index& idx);
  std::string generated(const ir::Node& n, const Index& idx);  // ConstantOfShape, EyeLike, Range

  // Stage bodies over item `i`; each returns the item count.
  std::string body_pointwise(const Stage& s);
  // The C++ twin's pointwise stages: an item per row of the last axis where that is long enough
  // (kPointwiseRow), the row a loop along contiguous memory that the compiler vectorizes, the
  // outer coordinates split once per row rather than per element.
  bool pointwise_rows(ValueId out) const;
  std::string body_pointwise_rows(const Stage& s);
  std::string body_reduce(const Stage& s);
  std::string body_arg_reduce(const Stage& s);      // ArgMax, ArgMin
  std::string body_conv_transpose(const Stage& s);  // a Reduce stage: direct loops
  std::string direct_conv_finish(const ir::Node& n, ValueId out, const Index& idx,
                                 const std::string& acc, const std::string& ct, const Index& xi,
                                 const Index& wi, size_t loops);
  std::string body_rows(const Stage& s);
  std::string body_softmax(const Stage& s);
  std::string body_layernorm(const Stage& s);
  std::string body_attention(const Stage& s);
  // The 16-bit type a CUDA attention stage multiplies in on tensor cores, if it does.
  std::optional<DType> attention_mma_type(const Stage& s) const;
  // The body of an item of such a stage `s` whose first query row is `r0`: `load(x, row, col)`
  // reads Q, K or V as float, `logit(row, key, dot)` is the Softmax's input given Q·K's
  // element, and `store(row, col)` is the output's element as an lvalue.
  void body_attention_mma(
      const Stage& s, DType type, const std::string& r0, const std::string& rows,
      const std::string& keys, int64_t depth, int64_t width,
      const std::function<std::string(ValueId, const std::string&, const std::string&)>& load,
      const std::function<std::string(const std::string&, const std::string&, const std::string&)>&
          logit,
      const std::function<std::string(const Index&, const std::string&)>& store_at);
  std::string body_matmul_element(const Stage& s);
  std::string body_matmul_rows(const Stage& s);
  // A register tile of the twin's matrix products (body_matmul_rows, body_conv_product): `tm`
  // rows from row `first` (of the item's, relative to pointer `a`) by 2 to 4 vectors of B's
  // columns [n0, n1) from pointer `b`, their sums in registers over all of K; each row's
  // elements then stored by `row_store`.
  struct RowTile {
    std::string ct;                   // the compute type
    ValueId b_buffer = ir::kNoValue;  // the buffer B is read from (its element type)
    std::string K;                    // the products each element sums
    std::string a_step;               // elements of A between k and k + 1 of a row
    // Where row `row`'s first element (k = 0) lies from `a`.
    std::function<std::string(const std::string& row)> a_row;
    std::string b_step, b_col;  // elements between B's rows; column n0's place in a row
    bool panels = false;        // B's rows whole tiles (a panel, zeros past its last column)
    std::string n0, n1;         // the item's columns
    // Prints what storing row `row` needs, and returns what stores element (row, col) = v.
    std::function<std::function<void(const std::string& col, const std::string& v)>(
        const std::string& row)>
        row_store;
    std::string what;  // the stage's node, for errors
  };
  void row_tile(const RowTile& t, int lanes, int accumulators, int64_t tm,
                const std::string& first);
  // Prints `print`(rows, first row) for the tiles of a block of `mb` rows from m0: whole tiles
  // of `tm` rows, and where `ragged`, for the block's `mr` rows when fewer than mb: whole tiles
  // while they fit, then a tile of 4, one of 2 and single rows.
  void row_groups(int64_t mb, bool ragged, int64_t tm,
                  const std::function<void(int64_t, const std::string&)>& print);
  // row_groups in each vector_variants variant, `print` given (lanes, accumulators, rows, first),
  // in tiles of the target's rows (4 under AVX-512, 6 else; `dots`: mb).
  void row_blocks(const std::string& ct, int64_t mb, bool ragged,
                  const std::function<void(int, int, int64_t, const std::string&)>& print,
                  bool dots = false);
  // Prints the sums across the lanes of `vectors` (of type `vec`, `lanes` elements; at most
  // `lanes` of them, a power of 2) as one vector whose lane h holds vector h's sum; its name.
  // Halves of two vectors are added into one until one is left, then halves of its groups.
  std::string lane_sums(int lanes, std::vector<std::string> vectors);
  // lane_sums of each of `rows` rows of vectors acc{r}_{c}, c < `columns` (of compute type `ct`),
  // after the mask type the shuffles name; the rows' vectors of sums.
  std::vector<std::string> row_lane_sums(const std::string& ct, int lanes, int64_t rows,
                                         int columns);
  // Prints `name`, a vector of `lanes` elements of v's buffer from address `at`, in the compute
  // type `ct`: one load where the buffer holds `ct` (kept in a register), else element by element.
  void vector_load(const std::string& ct, int lanes, ValueId v, const std::string& name,
                   const std::string& at);
  std::string body_conv(const Stage& s);
  std::string body_conv_tiles(const Stage& s);
  // The CPU form of a 2-D convolution whose windows tile the input along W (a patch embedding):
  // its stride along W its kernel width, a multiple of 16, no padding, no dilation along W.
  static bool conv_takes_patches(const ir::Graph& g, const ir::Node& n);
  std::string body_conv_patches(const Stage& s);
  // The CPU form of a convolution whose weights the plan holds in blocks (Stage::weight_blocks):
  // vectors along output channels.
  std::string body_conv_channels(const Stage& s);
  // The CPU form of a 1x1 convolution whose weights the plan holds as panels of W^T
  // (Stage::weight_blocks): a matrix product of its pixels by its channels.
  std::string body_conv_product(const Stage& s);
  // The bias of the `channels` output channels from `m0` of convolution `n`, loaded into float
  // variables (their names; "0.0f" each where it has none).
  std::vector<std::string> block_bias(const ir::Node& n, int64_t channels);
  // bias[first, first + count) as vectors bv0, bv1, ... of `lanes` floats (in a vector_variants
  // emitter).
  void block_bias_vectors(const std::vector<std::string>& bias, int lanes, size_t first,
                          size_t count);
  // Pixels (or tiles) a register tile of the channel tiles and Winograd's products takes: the
  // accumulators, `nv` vectors of the block's channels each, beside the nv weight vectors, the
  // broadcast and two spare in the variant's registers (32 under AVX-512, 16 else).
  static int64_t channel_tile_width(int accumulators, int64_t nv) {
    return std::max<int64_t>(1, (tile_registers(accumulators) - nv - 3) / nv);
  }
  // The vector registers of the variant whose register tiles hold `accumulators`.
  static int64_t tile_registers(int accumulators) {
    return accumulators == kTileAccumulatorsAvx512 ? 32 : 16;
  }
  // Blocks of output channels (a divisor of `most_blocks`) that a register tile of the channel
  // tiles holds at once, `nv` vectors each, over rows of OW pixels: the count whose tiles load
  // the fewest values (weight vectors and pixels) per multiply-add, of those whose tile of one
  // pixel or more fits the registers.
  static int64_t channel_tile_blocks(int accumulators, int64_t nv, int64_t most_blocks, int64_t OW);
  // The CPU form of a 3x3 convolution at stride 1 whose weights the plan holds transformed
  // (Stage::winograd): Winograd's F(2x2, 3x3) or F(4x4, 3x3) (printer_winograd.cpp).
  std::string body_conv_winograd(const Stage& s);
  std::string body_conv_gemm(const Stage& s, ConvTile tile);
  // The tiles body_conv_gemm may take for `s`, largest first; none where that form does not
  // apply (a depthwise or grouped convolution with few channels per group, f64, symbolic
  // channels). The launch takes the first with at least kConvFullWave tiles, else the last.
  std::vector<ConvTile> conv_gemm_tiles(const Stage& s) const;
  // A convolution tile's operands where both are stored at 16 bits (--precision or a 16-bit
  // model): it multiplies them on tensor cores (mma.sync m16n8k16, f32 accumulators, the 8
  // warps each a block of fragments), else on the FP32 units.
  std::optional<DType> conv_mma_type(const Stage& s) const;
  std::string conv_tile_bias(const Stage& s);
  void conv_tile_store(const Stage& s, const std::string& pixels, const std::string& OW,
                       const std::string& value);
  void conv_mma_store(const Stage& s, int64_t mi, int64_t ni, const std::string& P,
                      const std::string& pixels, const std::string& OW, bool whole_m, int64_t mg);
  // Whether CUDA convolution stage `s` may also run through cuDNN (in EQFUSE_CUDNN builds): a
  // 2-D convolution of whole buffers of one element type cuDNN takes (f32, f16, bf16), with a
  // static kernel and symmetric padding. Its cuDNN form (cudnn_conv_call) writes the raw
  // convolution to scratch memory, and a kernel (body_conv_finish) adds the bias and the
  // epilogue.
  bool cudnn_conv(const Stage& s) const;
  std::string body_conv_finish(const Stage& s);
  // cuDNN's fused form of such a stage, cudnnConvolutionBiasActivationForward's
  // y = act(conv(x, w) + z + bias), where the stage with its epilogue computes exactly that: a
  // bias, then nothing or a ReLU, with or without a residual z before it (a stored value of
  // the output's shape and type that the stage does not overwrite in place: whether cuDNN
  // reads z before it writes y at each element is not documented).
  struct FusedConv {
    bool relu = false;
    ValueId z = ir::kNoValue;
  };
  std::optional<FusedConv> cudnn_fused(const Stage& s, const Stage* epilogue,
                                       ValueId written) const;
  // The host code of a convolution stage that may run through cuDNN: `kernels` (the launches
  // of its generated kernels, writing `p<out>`) in a lambda, and under EQFUSE_CUDNN the
  // run-time choice between them, cuDNN plus `finish`, and the fused form (kCudnnRuntime).
  std::string cudnn_conv_call(const Stage& s, size_t index, ValueId written,
                              const std::string& kernels, const std::string& finish,
                              const std::optional<FusedConv>& fused);
  // An extra parameter of the next kernel cuda_kernel prints, after the buffers: the raw
  // convolution a finish kernel reads ("" for none).
  std::string raw_param_;
  // MatMul and Gemm handed to a BLAS where the operands are f32 and their batch dims either
  // match the output's or broadcast whole: the geometry (C expressions), or nullopt.
  struct LibraryGemm {
    std::string m, n, k, batch, stride_a, stride_b, lda, ldb, a, b, out, alpha;
    bool trans_a = false, trans_b = false;
    DType operand_type = DType::f32, out_type = DType::f32;  // the buffers'
  };
  std::optional<LibraryGemm> library_gemm(const Stage& s);
  // The host code of one cuBLAS strided-batched call (CUDA; `cublas_expression` the call, true
  // where it failed) or of CBLAS calls, one per batch entry (the C++ twin built with
  // EQFUSE_CBLAS; "" where library_gemm does not apply).
  std::string cublas_expression(const LibraryGemm& g) const;
  std::string cublas_call(const Stage& s, size_t index, const LibraryGemm& g);
  // A library product in a generated tree through cuBLASLt with its epilogue,
  // D = act(alpha A B + beta C + bias), where that computes exactly the Gemm's own C term and the
  // pointwise stage after the product (when that stage may merge as its epilogue: an Add tree
  // over the product, at most one bias of one element per column and at most one stored matrix
  // of the product's shape, under nothing or a Relu). The stage it merges then runs only where
  // cuBLASLt takes no algorithm for the shape (`eqf_unfused_s<index>`, after cuBLAS), as does the
  // Gemm's C kernel. In the hosted form (`eqfuse run`) only where built with the runtime.
  struct LtEpilogue {
    ValueId bias = ir::kNoValue;  // one element per column of the product
    ValueId c = ir::kNoValue;     // the product's shape, times beta
    double beta = 0;
    bool relu = false;
    const Stage* merged = nullptr;  // the pointwise stage it computes, or none
  };
  std::optional<LtEpilogue> cublaslt_epilogue(const Stage& s, size_t index) const;
  std::string cublaslt_call(const Stage& s, size_t index, const LibraryGemm& g,
                            const LtEpilogue& e);
  // The stage a cuBLASLt call computes, printed to run only where cuBLASLt took no algorithm.
  std::optional<size_t> lt_fallback_;
  // CUDA host code: an event before stage `index` when profiling.
  std::string record_event(size_t index) const {
    return hosted_ ? fmt::format("if (H->record) H->record(H->ctx, {});", index)
                   : fmt::format("if (prof) cudaEventRecord(prof[{}], st);", index);
  }
  std::string cblas_call(const Stage& s, size_t index);
  std::string body_gemm_epilogue(const Stage& s);
  // A C++ stage function `name` writing `output` over the body printed so far (out_, used_):
  // its text appended to `functions`, its call's arguments returned. Its items are shared out by
  // an OpenMP `for` inside the run's one parallel region (whose barrier ends the stage).
  std::string cpu_function(const std::string& name, const std::string& head, ValueId output,
                           const std::string& items, std::string& functions);
  // Whether v's element count is a multiple of 4 at every binding of the dims: its static dims'
  // product is (a symbolic batch times a static row of 128 is).
  bool whole_groups_of_4(ValueId v) const {
    int64_t n = 1;
    for (const ir::Dim& d : type(v).shape.dims())
      if (d.is_static()) n = n * d.value() % 4;
    return n % 4 == 0;
  }
  // Element `u` (a run-time index) of the vectors `parts` of `lanes` elements each, taken as one
  // row: the store loops of the twin's register tiles read their sums so, from copies of the
  // accumulators. Copying the accumulators into an array with memcpy instead made GCC keep them in
  // memory for the whole reduction under AVX2 (a load and a store beside every multiply-add).
  static std::string lane_of(const std::vector<std::string>& parts, int lanes,
                             const std::string& u) {
    auto element = [&](size_t v) {
      return v == 0 ? fmt::format("{}[{}]", parts[0], u)
                    : fmt::format("{}[{} - {}]", parts[v], u, v * size_t(lanes));
    };
    std::string out = element(parts.size() - 1);
    for (size_t v = parts.size() - 1; v-- > 0;)
      out = fmt::format("({} < {} ? {} : {})", u, (v + 1) * size_t(lanes), element(v), out);
    return out;
  }
  // Opens the loop over the elements u of a register tile's vector that lie before `bound`: the
  // `lanes` from `first`, or fewer. Its count is computed first, since a loop with two exits
  // stays scalar (and a merged epilogue's math in it with it), and is never negative, where GCC
  // would warn of a copy of negative size.
  void open_vector_store(const std::string& u, int64_t first, int lanes, const std::string& bound) {
    const std::string count = fresh("nu"), left = fmt::format("{} - {}", bound, first);
    line(fmt::format("const int64_t {} = {} < 0 ? 0 : {} < {} ? {} : {};", count, left, left, lanes,
                     left, lanes));
    open(fmt::format("for (int {} = 0; {} < {}; ++{})", u, u, count, u));
  }
  // Prints `emit(lanes)` three times, for 64-byte vectors where the target has AVX-512,
  // 32-byte ones where it has AVX and 16-byte ones (SSE, NEON) elsewhere: a vector wider than the
  // target's registers would live in memory. `lanes` is how many elements of `ct` one vector
  // holds; `emit` declares the type `vec`. With AVX-512, a body that is not `wide` (its loads
  // gathered element by element) takes 32 bytes. A row that leaves lanes idle still takes 64: a
  // core with 512-bit multiply-adds does twice a 32-byte vector's work an instruction.
  void vector_variants(const std::string& ct, const std::function<void(int, int)>& emit,
                       bool wide = true) {
    const int bytes = ct == "double" || ct == "int64_t" ? 8 : 4;
    const int avx512_bytes = wide ? 64 : 32;
    line("#if defined(__AVX512F__)");
    open("");
    line(fmt::format("typedef {} vec __attribute__((vector_size({})));", ct, avx512_bytes));
    emit(avx512_bytes / bytes, kTileAccumulatorsAvx512);
    close();
    line("#elif defined(__AVX__)");
    open("");
    line(fmt::format("typedef {} vec __attribute__((vector_size(32)));", ct));
    emit(32 / bytes, kTileAccumulators);
    close();
    line("#else");
    open("");
    line(fmt::format("typedef {} vec __attribute__((vector_size(16)));", ct));
    emit(16 / bytes, kTileAccumulators);
    close();
    line("#endif");
  }
  // A stage function's parameters (the dims, then each buffer the body used, the output first),
  // its call's arguments and their addresses (for a launch through a table, as
  // cuLaunchKernel takes them); and the prologue that names the dims d0, d1, ...
  struct Parameters {
    std::string signature, args, addresses;
  };
  Parameters parameters(ValueId output) const;
  std::string dims_prologue() const;
  // Clears what a stage body accumulates (text, buffers used, cached subexpressions, names).
  void begin_body();

 public:
  std::vector<StageForm> forms;  // of each stage printed (stage_forms)
  bool uses_cublas = false;
  bool uses_cublaslt = false;
  bool uses_cblas = false;
  bool uses_cudnn = false;
  bool uses_mma = false;  // kMmaHelpers
  // A CUDA stage assumes its buffers 16-byte aligned (the run checks).
  bool aligned_vectors = false;

 private:
  // A CUDA pointwise stage in groups of 4 elements per thread: the f32 buffers it reads at its
  // own element are loaded 16 bytes at a time before the group's loop (`group_loads_`, their
  // buffer indices), and an f32 output is stored so after it.
  bool group4_ = false;
  std::set<size_t> group_loads_;
  // A CUDA stage whose items are each a whole block's (attention, convolution tiles).
  bool block_items_ = false;
  // The stage printed last was attention on tensor cores (body_attention_mma).
  bool attention_mma_ = false;
  // The form of a stage printed as code of its own (not a library call), once its body is.
  // `cblas`: the C++ twin calls CBLAS for it under EQFUSE_CBLAS.
  StageForm own_form(const Stage& s, const std::vector<ConvTile>& conv_tiles, bool cblas) const;
  // The CUDA kernel `name` around the body printed so far (out_, used_), writing `written`,
  // appended to `functions`; returns its launch, which takes the item count from a variable `n`.
  // `items` is the body's item count; for groups of 4 (group4_) it becomes their count.
  std::string cuda_kernel(const std::string& name, const std::string& head, ValueId written,
                          std::string& items, bool partial_groups, std::string& functions);

  std::string body_pool(const Stage& s);
  // The C++ twin's 2-D pooling: an item per output row, the taps outside and the row's outputs
  // inside, in chunks of kPoolChunk, so that the inner loop runs along contiguous memory.
  std::string body_pool_rows(const Stage& s);
};

}  // namespace eqfuse::codegen::detail
