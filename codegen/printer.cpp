#include "codegen/printer.h"

#include <fmt/format.h>

#include <cctype>
#include <cmath>
#include <functional>
#include <optional>
#include <regex>
#include <set>
#include <unordered_map>

#include "codegen/lowering.h"
#include "codegen/prelude.h"
#include "cost/kernel_forms.h"
#include "ir/op_table.h"
#include "ir/ops/window.h"
#include "ir/scalar_expr.h"
#include "support/error.h"

namespace eqfuse::codegen {

namespace {

using ir::DType;
using ir::ValueId;
using Index = std::vector<std::string>;

std::string storage_type(DType t) {
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
std::string compute_type(const std::vector<DType>& types) {
  bool any_float = false;
  for (DType t : types) {
    if (t == DType::f64) return "double";
    any_float = any_float || ir::is_floating(t);
  }
  return any_float ? "float" : "int64_t";
}

std::string literal(double v, const std::string& type) {
  if (type == "int64_t") return fmt::format("INT64_C({})", int64_t(v));
  if (std::isnan(v)) return fmt::format("({})NAN", type);
  if (std::isinf(v)) return fmt::format("({})({}INFINITY)", type, v < 0 ? "-" : "");
  std::string s = type == "float" ? fmt::format("{:.9g}", v) : fmt::format("{:.17g}", v);
  if (s.find_first_of(".e") == std::string::npos) s += ".0";
  return type == "float" ? s + "f" : s;
}

bool is_zero(const std::string& s) {
  return s == "0" || s == "INT64_C(0)";
}
bool is_one(const std::string& s) {
  return s == "1" || s == "INT64_C(1)";
}
std::string iadd(const std::string& a, const std::string& b) {
  if (is_zero(a)) return b;
  if (is_zero(b)) return a;
  return "(" + a + " + " + b + ")";
}
// The C++ twin's register tiles: sums that stay in registers, in vectors of the compilers'
// vector extension, as wide as the target's registers (vector_variants).
constexpr int kTileAccumulators = 8;  // vector accumulators per tile (of 16 registers)
constexpr int kAttentionWarps = 8;    // CUDA attention: query rows per item, a warp each
static_assert(kAttentionWarps * 32 == 256, "an attention item is one block of the launch's 256");
// CUDA attention on tensor cores (body_attention_mma): each of an item's 8 warps takes 16 query
// rows; the keys come in blocks of kMmaKeys. Q's depth and V's width, padded to whole steps of
// 16, are at most 128 in every attention stage (the plan's limit), so a warp's fragments stay in
// registers.
constexpr int64_t kMmaKeys = 64;
// CUDA convolution tiles (body_conv_gemm): output channels by pixels, in slices of kConvTileK
// k staged in shared memory. Which tiles a convolution has and which a run takes is
// cost/kernel_forms.h's, which the cost model prices.
using cost::ConvTile;
using cost::kConvFullWave;
constexpr int64_t kConvTileK = cost::kConvSliceK;

// The 4-element vector type a CUDA pointwise group loads or stores a buffer of `t` as in one
// access (16 bytes for f32, 8 for 16-bit types), or "" where it does not.
std::string group_vector(DType t) {
  return t == DType::f32    ? "float4"
         : t == DType::bf16 ? "eqf_bf16x4"
         : t == DType::f16  ? "eqf_f16x4"
                            : "";
}

std::string imul(const std::string& a, const std::string& b) {
  if (is_zero(a) || is_zero(b)) return "0";
  if (is_one(a)) return b;
  if (is_one(b)) return a;
  return a + " * " + b;
}

class Writer {
 public:
  // `hosted`: CUDA whose host part eqfuse runs (print_cuda_hosted): kernels are extern "C" and
  // the host code launches, calls cuBLAS and records events through an EqfHost table.
  Writer(const KernelPlan& plan, Target target, bool hosted = false)
      : plan_(plan), g_(plan.graph), target_(target), hosted_(hosted) {}

  // One stage as a function (and, for CUDA, its launch), appended to `functions`; the call
  // the run function makes, appended to `calls`.
  void stage(size_t index, std::string& functions, std::string& calls);

 private:
  const KernelPlan& plan_;
  const ir::Graph& g_;
  Target target_;
  bool hosted_;
  std::string out_;
  int depth_ = 0;
  int counter_ = 0;
  std::vector<std::unordered_map<std::string, std::string>> scopes_;
  std::set<ValueId> used_;
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

  // Where element `lin` (index `at`) of `v` is stored: its buffer, or for a Concat input written
  // in place (Buffer::slice_of), the Concat's buffer at that element's place in it.
  std::string store_ref(ValueId v, const std::string& lin, const Index& at) {
    const Buffer& b = *plan_.buffer(v);
    if (!b.slice_of) return fmt::format("{}[{}]", ptr(v), lin);
    Index in_concat = at;
    std::string offset =
        "(" + b.slice_offset.c_expr([&](const std::string& s) { return plan_.dim_ident(s); }) + ")";
    in_concat[b.slice_axis] = iadd(at[b.slice_axis], offset);
    return fmt::format("{}[{}]", ptr(*b.slice_of), linear(*b.slice_of, in_concat));
  }
  // The buffer a stage writing `v` names: the Concat's for a slice of it.
  ValueId written_buffer(ValueId v) const { return plan_.buffer(v)->slice_of.value_or(v); }

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
  std::string linear(ValueId v, const Index& idx) const {
    std::vector<std::string> dims;
    for (size_t k = 0; k < idx.size(); ++k) dims.push_back(dim(v, k));
    if (!idx.empty())
      if (const std::string* lin = cached(split_key(dims, idx))) return *lin;
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
      line(fmt::format("const int64_t {} = {} % {};", v, r, dims[k]));
      line(fmt::format("{} /= {};", r, dims[k]));
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
  // Element (row, col) of operand `v` (rank >= 2) of a batched MatMul whose output index starts
  // with `batch`, under numpy broadcasting of the batch dims.
  Index matrix_index(ValueId v, const Index& batch, const std::string& row,
                     const std::string& col) const {
    size_t r = rank(v) - 2, nb = batch.size();
    Index idx(r);
    for (size_t q = 0; q < r; ++q) idx[q] = dim_is_one(v, q) ? "0" : batch[nb - r + q];
    idx.push_back(row);
    idx.push_back(col);
    return idx;
  }
  // The index of `in` read at output index `idx` under numpy broadcasting.
  Index broadcast_index(ValueId in, const Index& idx) const {
    size_t r = rank(in), off = idx.size() - r;
    Index out(r);
    for (size_t k = 0; k < r; ++k) out[k] = dim_is_one(in, k) ? "0" : idx[off + k];
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
  RowPasses row_passes(const std::string& j, const std::string& extent,
                       std::optional<int64_t> static_extent, const std::string& ct) {
    RowPasses p{j, extent, "", 0, ""};
    if (warp_rows_ && static_extent && *static_extent > kMaxCachedRow)
      block_rows_ = block_items_ = true;
    if (warp_rows_ && static_extent &&
        *static_extent <= (block_rows_ ? kMaxBlockRow : kMaxCachedRow)) {
      p.chunks = (*static_extent + row_stride() - 1) / row_stride();
      p.cache = fresh("row");
      line(fmt::format("{} {}[{}];", ct, p.cache, p.chunks));
    }
    return p;
  }
  void open_row(RowPasses& p) {
    if (!p.chunks) return open(row_loop(p.j, p.extent));
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

  std::string elem(ValueId v, const Index& idx);
  std::string compute(const ir::Node& n, const Index& idx);
  std::string scalar(const ir::Node& n, const Index& idx);
  std::string reshape(ValueId in, ValueId out, const Index& idx);
  std::string slice(const ir::Node& n, const Index& idx);
  std::string concat(const ir::Node& n, const Index& idx);
  std::string gather(const ir::Node& n, const Index& idx);
  std::string shape(const ir::Node& n, const Index& idx);

  // Stage bodies over item `i`; each returns the item count.
  std::string body_pointwise(const Stage& s);
  std::string body_reduce(const Stage& s);
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
      const std::function<std::string(const Index&)>& store);
  std::string body_matmul_element(const Stage& s);
  std::string body_matmul_rows(const Stage& s);
  std::string body_conv(const Stage& s);
  std::string body_conv_tiles(const Stage& s);
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
  // Gemm's C kernel. Not in the hosted form (`eqfuse run`), which keeps cuBLAS and the kernels.
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
  // its text appended to `functions`, its call's arguments returned. `work`: about how many
  // multiply-adds one item costs (an expression), which decides whether OpenMP is worth it.
  std::string cpu_function(const std::string& name, const std::string& head, ValueId output,
                           const std::string& items, const std::string& work,
                           std::string& functions);
  // Whether v's element count is a multiple of 4 at every binding of the dims: its static dims'
  // product is (a symbolic batch times a static row of 128 is).
  bool whole_groups_of_4(ValueId v) const {
    int64_t n = 1;
    for (const ir::Dim& d : type(v).shape.dims())
      if (d.is_static()) n = n * d.value() % 4;
    return n % 4 == 0;
  }
  // The work of one item of the row forms (body_matmul_rows, body_conv_tiles); "" otherwise.
  std::string row_work_;
  // Prints `emit(lanes)` twice, for 32-byte vectors where the target has AVX and 16-byte ones
  // (SSE, NEON) elsewhere: a vector wider than the target's registers would live in memory.
  // `lanes` is how many elements of `ct` one vector holds; `emit` declares the type `vec`.
  void vector_variants(const std::string& ct, const std::function<void(int)>& emit) {
    const int bytes = ct == "double" || ct == "int64_t" ? 8 : 4;
    line("#if defined(__AVX__)");
    open("");
    line(fmt::format("typedef {} vec __attribute__((vector_size(32)));", ct));
    emit(32 / bytes);
    close();
    line("#else");
    open("");
    line(fmt::format("typedef {} vec __attribute__((vector_size(16)));", ct));
    emit(16 / bytes);
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
  // The CUDA kernel `name` around the body printed so far (out_, used_), writing `written`,
  // appended to `functions`; returns its launch, which takes the item count from a variable `n`.
  // `items` is the body's item count; for groups of 4 (group4_) it becomes their count.
  std::string cuda_kernel(const std::string& name, const std::string& head, ValueId written,
                          std::string& items, bool partial_groups, std::string& functions);

  std::string body_pool(const Stage& s);
};

void Writer::store_output(ValueId out, const std::string& lin, const Index& at,
                          const std::string& v) {
  if (!epilogue_) {
    line(fmt::format("{} = {};", store_ref(out, lin, at), v));
    return;
  }
  open("");
  std::string stored = fresh("c"), loaded = fresh("t");
  line(fmt::format("const {} {} = {};", buffer_type(out), stored, v));
  line(fmt::format("const {} {} = {};", storage_type(type(out).dtype), loaded, stored));
  substitute_ = {out, loaded};
  ValueId e = epilogue_->output;
  // The same element of the epilogue's value: the same index where the shapes agree (a bias or
  // an activation), else the linear index split again (a reshape between them).
  bool same_shape = rank(e) == rank(out);
  for (size_t k = 0; same_shape && k < rank(e); ++k)
    same_shape = type(e).shape[k].sym() == type(out).shape[k].sym();
  Index idx = same_shape ? at : decompose_value(lin, e);
  std::string value = compute(g_.node(epilogue_->node), idx);
  line(fmt::format("{} = {};", store_ref(e, lin, idx), value));
  substitute_.reset();
  close();
}

std::string Writer::elem(ValueId v, const Index& idx) {
  if (substitute_ && substitute_->first == v) return substitute_->second;
  std::string key = std::to_string(v);
  for (const std::string& i : idx) key += "," + i;
  if (const std::string* hit = cached(key)) return *hit;
  std::string var;
  if (const Buffer* b = plan_.buffer(v)) {
    if (b->slice_of)
      throw Error("codegen: internal: '" + g_.value(v).name + "' is read after its Concat",
                  Error::Kind::Internal);
    var = fresh("t");
    // A group reads a buffer at its own element in one vector access where the value is the
    // buffer's elements widened to float (f32, or 16 bits: a 16-bit model's, or --precision's).
    const bool widened =
        type(v).dtype == DType::f32 || (type(v).dtype == b->dtype && b->dtype != DType::f32);
    if (group4_ && !group_vector(b->dtype).empty() && widened && linear(v, idx) == "i") {
      size_t index = plan_.buffer_of.at(v);
      used_.insert(v);
      group_loads_.insert(index);
      line(fmt::format("const float {} = g{}[k];", var, index));
      scopes_.back()[key] = var;
      return var;
    }
    line(fmt::format("const {} {} = {}[{}];", storage_type(type(v).dtype), var, ptr(v),
                     linear(v, idx)));
  } else {
    const ir::Value& val = g_.value(v);
    if (val.producer == ir::kNoNode)
      throw Error("codegen: internal: '" + val.name + "' is neither computed nor stored",
                  Error::Kind::Internal);
    var = compute(g_.node(val.producer), idx);
  }
  scopes_.back()[key] = var;
  return var;
}

std::string Writer::compute(const ir::Node& n, const Index& idx) {
  const std::string& op = n.op_type;
  ValueId out = n.outputs[0];
  if (op == "Transpose") {
    ir::OpContext ctx = ir::make_context(g_, n);
    size_t r = rank(n.inputs[0]);
    std::vector<int64_t> perm;
    if (ctx.has_attr("perm"))
      perm = ctx.attr_ints("perm");
    else
      for (size_t k = r; k-- > 0;) perm.push_back(int64_t(k));
    Index in(r);
    for (size_t k = 0; k < r; ++k) in[size_t(perm[k])] = idx[k];
    return elem(n.inputs[0], in);
  }
  if (op == "Reshape" || op == "Flatten" || op == "Squeeze" || op == "Unsqueeze" ||
      op == "Identity" || op == "Dropout")
    return reshape(n.inputs[0], out, idx);
  if (op == "Expand") return elem(n.inputs[0], broadcast_index(n.inputs[0], idx));
  if (op == "Slice") return slice(n, idx);
  if (op == "Concat") return concat(n, idx);
  if (op == "Gather") return gather(n, idx);
  if (op == "Shape") return shape(n, idx);
  return scalar(n, idx);
}

std::string print_scalar(const ir::ScalarExpr& e, const std::string& type,
                         const std::vector<std::string>& operands) {
  switch (e.op) {
    case ir::ScalarOp::Input:
      return operands.at(size_t(e.input));
    case ir::ScalarOp::Const:
      return literal(e.value, type);
    case ir::ScalarOp::Attr:
      throw Error("codegen: internal: unbound attribute @" + e.attr, Error::Kind::Internal);
    default:
      break;
  }
  std::string s = "eqf_";
  s += ir::scalar_op_name(e.op);
  s += "(";
  for (size_t k = 0; k < e.args.size(); ++k) {
    if (k) s += ", ";
    s += print_scalar(*e.args[k], type, operands);
  }
  return s + ")";
}

void input_refs(const ir::ScalarExpr& e, std::set<int64_t>& refs) {
  if (e.op == ir::ScalarOp::Input) refs.insert(e.input);
  for (const auto& a : e.args) input_refs(*a, refs);
}

std::string Writer::scalar(const ir::Node& n, const Index& idx) {
  ir::OpContext ctx = ir::make_context(g_, n);
  ir::ScalarExprPtr e = ir::node_scalar_expr(ctx);
  if (!e)
    throw Error(fmt::format("codegen: {} '{}': no scalar meaning", n.op_type, n.name),
                Error::Kind::Unsupported);
  ValueId out = n.outputs[0];
  std::vector<DType> types = {type(out).dtype};
  for (ValueId in : n.inputs)
    if (in != ir::kNoValue) types.push_back(type(in).dtype);
  if (type(out).dtype == DType::boolean) types.pop_back(), types.erase(types.begin());
  std::string ct = compute_type(types);
  std::set<int64_t> refs;
  input_refs(*e, refs);
  std::vector<std::string> operands(n.inputs.size());
  for (int64_t k : refs) {
    ValueId in = n.inputs.at(size_t(k));
    std::string v = elem(in, broadcast_index(in, idx));
    operands[size_t(k)] = storage_type(type(in).dtype) == ct ? v : "(" + ct + ")" + v;
  }
  std::string expr = print_scalar(*e, ct, operands);
  std::string st = storage_type(type(out).dtype);
  std::string var = fresh("t");
  if (type(out).dtype == DType::boolean)
    line(fmt::format("const uint8_t {} = (uint8_t)(({}) != ({})0);", var, expr, ct));
  else if (st == ct)
    line(fmt::format("const {} {} = {};", st, var, expr));
  else
    line(fmt::format("const {} {} = eqf_store<{}, {}>({});", st, var, st, ct, expr));
  return var;
}

std::string Writer::reshape(ValueId in, ValueId out, const Index& idx) {
  const auto& a = type(in).shape.dims();
  const auto& b = type(out).shape.dims();
  if (a == b) return elem(in, idx);
  // Only size-1 axes differ (Squeeze, Unsqueeze): map the other axes one to one.
  std::vector<size_t> ka, kb;
  for (size_t k = 0; k < a.size(); ++k)
    if (!(a[k].is_static() && a[k].value() == 1)) ka.push_back(k);
  for (size_t k = 0; k < b.size(); ++k)
    if (!(b[k].is_static() && b[k].value() == 1)) kb.push_back(k);
  bool same = ka.size() == kb.size();
  for (size_t k = 0; same && k < ka.size(); ++k) same = a[ka[k]] == b[kb[k]];
  Index in_idx(a.size(), "0");
  if (same) {
    for (size_t k = 0; k < ka.size(); ++k) in_idx[ka[k]] = idx[kb[k]];
    return elem(in, in_idx);
  }
  std::string lin = fresh("l");
  line(fmt::format("const int64_t {} = {};", lin, linear(out, idx)));
  return elem(in, decompose_value(lin, in));
}

std::string Writer::slice(const ir::Node& n, const Index& idx) {
  ir::OpContext ctx = ir::make_context(g_, n);
  ValueId in = n.inputs[0];
  size_t r = rank(in);
  auto starts = ctx.ints_attr_or_input("starts", 1);
  auto ends = ctx.ints_attr_or_input("ends", 2);
  auto axes = ctx.ints_attr_or_input("axes", 3);
  auto steps = ctx.ints_attr_or_input("steps", 4);
  if (!starts || !ends)
    throw Error(fmt::format("codegen: Slice '{}': starts and ends must be constants", n.name),
                Error::Kind::Unsupported);
  if (!axes) {
    axes.emplace();
    for (size_t k = 0; k < starts->size(); ++k) axes->push_back(int64_t(k));
  }
  if (!steps) steps = std::vector<int64_t>(starts->size(), 1);
  Index in_idx = idx;
  for (size_t k = 0; k < axes->size(); ++k) {
    int64_t a = (*axes)[k] < 0 ? (*axes)[k] + int64_t(r) : (*axes)[k];
    int64_t start = (*starts)[k], step = (*steps)[k];
    const ir::Dim& d = type(in).shape[size_t(a)];
    std::string begin;
    if (d.is_static()) {
      int64_t size = d.value();
      if (start < 0) start += size;
      start = step > 0 ? std::clamp<int64_t>(start, 0, size)
                       : std::clamp<int64_t>(start, 0, std::max<int64_t>(size - 1, 0));
      begin = std::to_string(start);
    } else if (start >= 0 && step > 0) {
      begin = fmt::format("eqf_min<int64_t>({}, {})", start, dim(d));
    } else if (start < 0) {
      begin = fmt::format("eqf_max<int64_t>({} - {}, 0)", dim(d), -start);
    } else {
      throw Error(fmt::format("codegen: Slice '{}': a negative step over a symbolic dim", n.name),
                  Error::Kind::Unsupported);
    }
    in_idx[size_t(a)] = iadd(begin, imul(idx[size_t(a)], std::to_string(step)));
  }
  return elem(in, in_idx);
}

std::string Writer::concat(const ir::Node& n, const Index& idx) {
  ir::OpContext ctx = ir::make_context(g_, n);
  ValueId out = n.outputs[0];
  int64_t axis = ctx.attr_int("axis");
  if (axis < 0) axis += int64_t(rank(out));
  size_t a = size_t(axis);
  std::string var = fresh("t");
  line(fmt::format("{} {};", storage_type(type(out).dtype), var));
  std::string offset = "0";
  std::vector<ValueId> parts;
  for (ValueId in : n.inputs)
    if (in != ir::kNoValue) parts.push_back(in);
  for (size_t k = 0; k < parts.size(); ++k) {
    std::string end = iadd(offset, dim(parts[k], a));
    std::string header = k + 1 == parts.size() ? "else"
                         : k == 0              ? fmt::format("if ({} < {})", idx[a], end)
                                               : fmt::format("else if ({} < {})", idx[a], end);
    if (parts.size() == 1) header = "";
    open(header);
    Index in_idx = idx;
    in_idx[a] = is_zero(offset) ? idx[a] : fmt::format("({} - {})", idx[a], offset);
    line(fmt::format("{} = {};", var, elem(parts[k], in_idx)));
    close();
    offset = end;
  }
  return var;
}

std::string Writer::gather(const ir::Node& n, const Index& idx) {
  ir::OpContext ctx = ir::make_context(g_, n);
  ValueId data = n.inputs[0], indices = n.inputs[1];
  int64_t axis = ctx.attr_int("axis");
  if (axis < 0) axis += int64_t(rank(data));
  size_t a = size_t(axis), q = rank(indices);
  Index qi(idx.begin() + long(a), idx.begin() + long(a + q));
  std::string raw = elem(indices, qi);
  std::string gv = fresh("g");
  line(fmt::format("const int64_t {} = (int64_t){} < 0 ? (int64_t){} + {} : (int64_t){};", gv, raw,
                   raw, dim(data, a), raw));
  Index in_idx(idx.begin(), idx.begin() + long(a));
  in_idx.push_back(gv);
  in_idx.insert(in_idx.end(), idx.begin() + long(a + q), idx.end());
  return elem(data, in_idx);
}

std::string Writer::shape(const ir::Node& n, const Index& idx) {
  ir::OpContext ctx = ir::make_context(g_, n);
  ValueId in = n.inputs[0];
  int64_t r = int64_t(rank(in));
  int64_t start = ctx.has_attr("start") ? ctx.attr_int("start") : 0;
  int64_t end = ctx.has_attr("end") ? ctx.attr_int("end") : r;
  if (start < 0) start += r;
  if (end < 0) end += r;
  start = std::clamp<int64_t>(start, 0, r);
  end = std::clamp<int64_t>(end, start, r);
  std::string e = "0";
  for (int64_t k = end - 1; k >= start; --k)
    e = k == end - 1 ? "(int64_t)(" + dim(in, size_t(k)) + ")"
                     : fmt::format("({} == {} ? (int64_t)({}) : {})", idx[0], k - start,
                                   dim(in, size_t(k)), e);
  std::string var = fresh("t");
  line(fmt::format("const int64_t {} = {};", var, e));
  return var;
}

// ---- stage bodies -------------------------------------------------------------------------

std::string Writer::body_pointwise(const Stage& s) {
  ValueId out = s.output;
  Index idx = decompose_value("i", out);
  std::string v = s.node == ir::kNoNode ? elem(s.source, idx) : compute(g_.node(s.node), idx);
  const DType stored = plan_.buffer(out)->dtype;
  if (group4_ && !group_vector(stored).empty() &&
      (type(out).dtype == DType::f32 || type(out).dtype == stored)) {
    used_.insert(out);
    line(fmt::format("go[k] = (float){};", v));
  } else {
    line(fmt::format("{} = {};", store_ref(out, "i", idx), v));
  }
  return numel(out);
}

std::string Writer::body_reduce(const Stage& s) {
  const ir::Node& n = g_.node(s.node);
  ir::OpContext ctx = ir::make_context(g_, n);
  ValueId in = n.inputs[0], out = s.output;
  size_t r = rank(in);
  std::string op = n.op_type;
  std::vector<bool> reduced(r, false);
  bool keep = true;
  if (op == "GlobalAveragePool" || op == "GlobalMaxPool") {
    for (size_t k = 2; k < r; ++k) reduced[k] = true;
    op = op == "GlobalAveragePool" ? "ReduceMean" : "ReduceMax";
  } else {
    keep = ctx.attr_int("keepdims") != 0;
    auto axes = ctx.ints_attr_or_input("axes", 1);
    if (!axes && ctx.has_input(1))
      throw Error(fmt::format("codegen: {} '{}': axes must be constant", n.op_type, n.name),
                  Error::Kind::Unsupported);
    if (!axes || axes->empty()) {
      if (ctx.attr_int("noop_with_empty_axes") != 0) {
        Index idx = decompose_value("i", out);
        line(fmt::format("{}[i] = {};", ptr(out), elem(in, idx)));
        return numel(out);
      }
      reduced.assign(r, true);
    } else {
      for (int64_t a : *axes) reduced[size_t(a < 0 ? a + int64_t(r) : a)] = true;
    }
  }
  Index oidx = decompose_value("i", out);
  std::string ct = compute_type({type(out).dtype});
  std::string count = "1";
  Index in_idx(r);
  size_t o = 0;
  std::vector<size_t> loops;
  for (size_t k = 0; k < r; ++k) {
    if (reduced[k]) {
      in_idx[k] = fresh("k");
      loops.push_back(k);
      count = imul(count, dim(in, k));
      if (keep) ++o;
    } else {
      in_idx[k] = oidx[o++];
    }
  }
  // On CUDA, where the reduced axes are the input's last ones (a row of consecutive elements,
  // e.g. GlobalAveragePool's pixels) and at least a warp's width or of run-time extent, a warp
  // takes each output element (a block where the row is static and over kMaxCachedRow): its
  // lanes stride the row and combine their partial results. Elsewhere (a row shorter than a
  // warp, or reduced axes that are not the last, where consecutive outputs read consecutive
  // elements) a thread takes each output element and loops over its row.
  const bool suffix = !loops.empty() && loops.front() + loops.size() == r;
  const std::optional<int64_t> static_count =
      suffix ? std::optional<int64_t>(ir::Shape(std::vector<ir::Dim>(type(in).shape.dims().begin() +
                                                                         int64_t(loops.front()),
                                                                     type(in).shape.dims().end()))
                                          .numel())
             : std::nullopt;
  warp_rows_ = target_ == Target::Cuda && suffix && (ct == "float" || ct == "double") &&
               (!static_count || *static_count >= 32);
  if (warp_rows_ && static_count && *static_count > kMaxCachedRow)
    block_rows_ = block_items_ = true;
  std::vector<std::string> row_dims;
  std::vector<bool> row_one;
  for (size_t k : loops) {
    row_dims.push_back(dim(in, k));
    row_one.push_back(dim_is_one(in, k));
  }
  // `body` accumulates the row's element x; `combine` names the warp or block combine of the
  // partial results of the row's lanes ("sum", "max", ...).
  auto loop_nest = [&](const std::function<void(const std::string&)>& body) {
    if (warp_rows_) {
      const std::string j = fresh("j");
      line("#pragma unroll 4");  // loads in flight
      open(row_loop(j, count));
      const Index tail = decompose(j, row_dims, row_one);
      for (size_t q = 0; q < loops.size(); ++q) in_idx[loops[q]] = tail[q];
    } else {
      for (size_t k : loops)
        open(fmt::format("for (int64_t {} = 0; {} < {}; ++{})", in_idx[k], in_idx[k], dim(in, k),
                         in_idx[k]));
      if (loops.empty()) open("");
    }
    std::string x = elem(in, in_idx);
    body(storage_type(type(in).dtype) == ct ? x : "(" + ct + ")" + x);
    for (size_t k = 0; k < (warp_rows_ ? 1 : std::max<size_t>(loops.size(), 1)); ++k) close();
  };
  std::string acc = fresh("acc");
  bool is_max = op == "ReduceMax", is_min = op == "ReduceMin";
  std::string init = is_max   ? (ct == "int64_t" ? "INT64_MIN" : "(" + ct + ")(-INFINITY)")
                     : is_min ? (ct == "int64_t" ? "INT64_MAX" : "(" + ct + ")INFINITY")
                     : op == "ReduceProd" ? literal(1, ct)
                                          : literal(0, ct);
  std::string result;
  if (op == "ReduceLogSumExp") {
    std::string m = fresh("m");
    line(fmt::format("{} {} = ({})(-INFINITY);", ct, m, ct));
    loop_nest([&](const std::string& x) { line(fmt::format("{} = eqf_max({}, {});", m, m, x)); });
    row_combine("max", m);
    line(fmt::format("{} {} = {};", ct, acc, literal(0, ct)));
    loop_nest(
        [&](const std::string& x) { line(fmt::format("{} += eqf_exp({} - {});", acc, x, m)); });
    row_combine("sum", acc);
    result = fmt::format("{} + eqf_log({})", m, acc);
  } else {
    line(fmt::format("{} {} = {};", ct, acc, init));
    loop_nest([&](const std::string& x) {
      if (is_max)
        line(fmt::format("{} = eqf_max({}, {});", acc, acc, x));
      else if (is_min)
        line(fmt::format("{} = eqf_min({}, {});", acc, acc, x));
      else if (op == "ReduceProd")
        line(fmt::format("{} *= {};", acc, x));
      else if (op == "ReduceSumSquare" || op == "ReduceL2")
        line(fmt::format("{} += {} * {};", acc, x, x));
      else if (op == "ReduceL1")
        line(fmt::format("{} += eqf_abs({});", acc, x));
      else
        line(fmt::format("{} += {};", acc, x));
    });
    row_combine(is_max ? "max" : is_min ? "min" : op == "ReduceProd" ? "prod" : "sum", acc);
    result = acc;
    if (op == "ReduceMean") result = fmt::format("{} / ({})({})", acc, ct, count);
    if (op == "ReduceL2") result = fmt::format("eqf_sqrt({})", acc);
    if (op == "ReduceLogSum") result = fmt::format("eqf_log({})", acc);
  }
  // Every lane holds the combined result; one stores it.
  if (warp_rows_) open(block_rows_ ? "if (threadIdx.x == 0)" : "if (lane == 0)");
  std::string st = storage_type(type(out).dtype);
  line(fmt::format("{}[i] = eqf_store<{}, {}>({});", ptr(out), st, ct, result));
  if (warp_rows_) close();
  return numel(out);
}

std::string Writer::body_softmax(const Stage& s) {
  const ir::Node& n = g_.node(s.node);
  ir::OpContext ctx = ir::make_context(g_, n);
  ValueId in = n.inputs[0], out = s.output;
  size_t r = rank(in);
  int64_t axis = ctx.attr_int("axis");
  size_t a = size_t(axis < 0 ? axis + int64_t(r) : axis);
  std::vector<std::string> dims;
  std::vector<bool> one;
  std::string rows = "1";
  for (size_t k = 0; k < r; ++k)
    if (k != a) {
      dims.push_back(dim(in, k));
      one.push_back(dim_is_one(in, k));
      rows = imul(rows, dim(in, k));
    }
  Index rest = decompose("i", dims, one);
  Index idx;
  std::string j = fresh("j");
  for (size_t k = 0, o = 0; k < r; ++k) idx.push_back(k == a ? j : rest[o++]);
  std::string ct = compute_type({type(out).dtype});
  std::string m = fresh("m"), sum = fresh("s");
  RowPasses row = row_passes(j, dim(in, a), ir::Shape({type(in).shape[a]}).numel(), ct);
  line(fmt::format("{} {} = ({})(-INFINITY);", ct, m, ct));
  open_row(row);
  line(fmt::format("{} = eqf_max({}, ({}){});", m, m, ct,
                   row_element(
                       row, true, [&] { return elem(in, idx); }, ct)));
  close_row(row);
  row_combine("max", m);
  line(fmt::format("{} {} = 0;", ct, sum));
  open_row(row);
  line(fmt::format("{} += eqf_exp(({}){} - {});", sum, ct,
                   row_element(
                       row, false, [&] { return elem(in, idx); }, ct),
                   m));
  close_row(row);
  row_combine("sum", sum);
  bool log = n.op_type == "LogSoftmax";
  if (!log)
    line(fmt::format("const {} inv_{} = ({})1 / {};", ct, sum, ct, sum));
  else
    line(fmt::format("const {} log_{} = eqf_log({});", ct, sum, sum));
  open_row(row);
  std::string x = row_element(
      row, false, [&] { return elem(in, idx); }, ct);
  line(
      log ? fmt::format("{}[{}] = ({}){} - {} - log_{};", ptr(out), linear(out, idx), ct, x, m, sum)
          : fmt::format("{}[{}] = eqf_exp(({}){} - {}) * inv_{};", ptr(out), linear(out, idx), ct,
                        x, m, sum));
  close_row(row);
  return rows;
}

std::string Writer::body_layernorm(const Stage& s) {
  const ir::Node& n = g_.node(s.node);
  ir::OpContext ctx = ir::make_context(g_, n);
  ValueId in = n.inputs[0], out = s.output;
  size_t r = rank(in);
  int64_t axis = ctx.attr_int("axis");
  size_t a = size_t(axis < 0 ? axis + int64_t(r) : axis);
  double eps = ctx.attr_float("epsilon");
  std::vector<std::string> lead, trail;
  std::vector<bool> lead_one, trail_one;
  std::string rows = "1", cols = "1";
  for (size_t k = 0; k < r; ++k) {
    (k < a ? lead : trail).push_back(dim(in, k));
    (k < a ? lead_one : trail_one).push_back(dim_is_one(in, k));
    (k < a ? rows : cols) = imul(k < a ? rows : cols, dim(in, k));
  }
  Index head = decompose("i", lead, lead_one);
  std::string ct = compute_type({type(out).dtype});
  std::string j = fresh("j"), mean = fresh("mean"), var = fresh("var");
  const std::vector<ir::Dim>& in_dims = type(in).shape.dims();
  RowPasses row = row_passes(
      j, cols, ir::Shape(std::vector<ir::Dim>(in_dims.begin() + int64_t(a), in_dims.end())).numel(),
      ct);
  auto row_index = [&]() {
    Index tail = decompose(j, trail, trail_one);
    Index idx = head;
    idx.insert(idx.end(), tail.begin(), tail.end());
    return std::pair{idx, tail};
  };
  line(fmt::format("{} {} = 0;", ct, mean));
  open_row(row);
  line(fmt::format("{} += ({}){};", mean, ct,
                   row_element(
                       row, true, [&] { return elem(in, row_index().first); }, ct)));
  close_row(row);
  row_combine("sum", mean);
  line(fmt::format("{} /= ({})({});", mean, ct, cols));
  line(fmt::format("{} {} = 0;", ct, var));
  open_row(row);
  {
    std::string d = fresh("dv");
    line(fmt::format("const {} {} = ({}){} - {};", ct, d, ct,
                     row_element(
                         row, false, [&] { return elem(in, row_index().first); }, ct),
                     mean));
    line(fmt::format("{} += {} * {};", var, d, d));
  }
  close_row(row);
  row_combine("sum", var);
  std::string inv = fresh("inv");
  line(fmt::format("const {} {} = ({})1 / eqf_sqrt({} / ({})({}) + {});", ct, inv, ct, var, ct,
                   cols, literal(eps, ct)));
  open_row(row);
  {
    const auto [idx, tail] = row_index();
    const std::string x = row_element(
        row, false, [&, &at = idx] { return elem(in, at); }, ct);
    std::string y = fmt::format("(({}){} - {}) * {}", ct, x, mean, inv);
    if (n.inputs.size() > 1 && n.inputs[1] != ir::kNoValue)
      y = fmt::format("{} * ({}){}", y, ct, elem(n.inputs[1], broadcast_index(n.inputs[1], tail)));
    if (n.inputs.size() > 2 && n.inputs[2] != ir::kNoValue)
      y = fmt::format("{} + ({}){}", y, ct, elem(n.inputs[2], broadcast_index(n.inputs[2], tail)));
    line(fmt::format("{}[{}] = {};", ptr(out), linear(out, idx), y));
  }
  close_row(row);
  return rows;
}

// softmax(S)·V with S = pointwise(Q·K), never stored. An item is a tile of query rows (of one
// batch entry); the keys come in blocks. Each block's K and V are loaded into a local tile
// once per item (through `elem`, so layout ops on Q, K and V fold into these loads), each row's
// scores for the block are computed and put through the pointwise work between Q·K and the
// Softmax, and folded into the row's running maximum m, sum l and row of sums acc, rescaling
// what came before by exp(m_old - m_new): FlashAttention's online softmax.
// On the CPU an item is 32 rows, a block 64 keys, and the loops over keys and over V's row
// vectorize. On CUDA an item is a thread block of 8 warps, a warp per row; the block's threads
// load a block of 32 keys' K and V into shared memory together, a lane's score is its key's,
// and the lanes share out V's row.
std::string Writer::body_attention(const Stage& s) {
  const ir::Node& pv = g_.node(s.node);
  const ir::Node& qk = g_.node(s.attention->scores);
  const ir::Node& sm = g_.node(s.attention->softmax);
  const ValueId out = s.output, q = qk.inputs[0], k = qk.inputs[1], v = pv.inputs[1];
  const ValueId scores = qk.outputs[0], logits = sm.inputs[0];
  const bool cuda = target_ == Target::Cuda;
  const std::optional<DType> mma = attention_mma_type(s);
  const int tile_rows = mma ? 16 * kAttentionWarps : cuda ? kAttentionWarps : 32;
  const int block = cuda ? 32 : 64;
  const size_t r = rank(out);
  const ir::Dim& queries = type(out).shape[r - 2];
  // Items: the output's batch dims, then tiles of query rows.
  std::vector<std::string> dims;
  std::vector<bool> one;
  std::string items = "1";
  for (size_t a = 0; a + 2 < r; ++a) {
    dims.push_back(dim(out, a));
    one.push_back(dim_is_one(out, a));
    items = imul(items, dim(out, a));
  }
  const std::string rows = dim(queries);
  std::string tiles = queries.is_static()
                          ? std::to_string((queries.value() + tile_rows - 1) / tile_rows)
                          : fmt::format("(({} + {}) / {})", rows, tile_rows - 1, tile_rows);
  dims.push_back(tiles);
  one.push_back(tiles == "1");
  items = imul(items, tiles);
  Index item = decompose("i", dims, one);
  const Index batch(item.begin(), item.end() - 1);
  const std::string keys = dim(k, rank(k) - 1);
  const int64_t depth = type(q).shape[rank(q) - 1].value();
  const int64_t width = type(out).shape[r - 1].value();
  row_work_ = fmt::format("{} * {}", keys, (depth + width) * tile_rows);
  // The logit at query `row`, key `j`, given Q·K's element there.
  auto logit = [&](const std::string& row, const std::string& j, const std::string& dot) {
    substitute_ = {scores, dot};
    Index at = batch;
    at.push_back(row);
    at.push_back(j);
    std::string x = elem(logits, at);
    substitute_.reset();
    return x;
  };
  auto load = [&](ValueId x, const std::string& row, const std::string& col) {
    return "(float)" + elem(x, matrix_index(x, batch, row, col));
  };
  std::string r0 = fresh("r"), j0 = fresh("j"), nb = fresh("nb"), bm = fresh("bm"),
              alpha = fresh("alpha"), p = fresh("pe"), jj = fresh("jj"), d = fresh("d");
  line(fmt::format("const int64_t {} = {} * {};", r0, item.back(), tile_rows));
  if (!cuda) {
    std::string nr = fresh("nr"), qt = fresh("qt"), m = fresh("m"), l = fresh("l"),
                acc = fresh("acc"), kt = fresh("kt"), vt = fresh("vt"), sc = fresh("sc"),
                row = fresh("row");
    line(fmt::format("const int64_t {} = {} - {} < {} ? {} - {} : {};", nr, rows, r0, tile_rows,
                     rows, r0, tile_rows));
    line(fmt::format("float {}[{}][{}], {}[{}], {}[{}], {}[{}][{}];", qt, tile_rows, depth, m,
                     tile_rows, l, tile_rows, acc, tile_rows, width));
    open(fmt::format("for (int64_t {} = 0; {} < {}; ++{})", row, row, nr, row));
    line(fmt::format("{}[{}] = -INFINITY;", m, row));
    line(fmt::format("{}[{}] = 0;", l, row));
    line(fmt::format("for (int64_t {} = 0; {} < {}; ++{}) {}[{}][{}] = 0;", d, d, width, d, acc,
                     row, d));
    open(fmt::format("for (int64_t {} = 0; {} < {}; ++{})", d, d, depth, d));
    line(fmt::format("{}[{}][{}] = {};", qt, row, d, load(q, "(" + r0 + " + " + row + ")", d)));
    close();
    close();
    open(fmt::format("for (int64_t {} = 0; {} < {}; {} += {})", j0, j0, keys, j0, block));
    line(fmt::format("const int64_t {} = {} - {} < {} ? {} - {} : {};", nb, keys, j0, block, keys,
                     j0, block));
    line(fmt::format("float {}[{}][{}], {}[{}][{}];", kt, depth, block, vt, block, width));
    const std::string key = "(" + j0 + " + " + jj + ")";
    open(fmt::format("for (int64_t {} = 0; {} < {}; ++{})", jj, jj, nb, jj));
    open(fmt::format("for (int64_t {} = 0; {} < {}; ++{})", d, d, depth, d));
    line(fmt::format("{}[{}][{}] = {};", kt, d, jj, load(k, d, key)));
    close();
    open(fmt::format("for (int64_t {} = 0; {} < {}; ++{})", d, d, width, d));
    line(fmt::format("{}[{}][{}] = {};", vt, jj, d, load(v, key, d)));
    close();
    close();
    open(fmt::format("for (int64_t {} = 0; {} < {}; ++{})", row, row, nr, row));
    line(fmt::format("float {}[{}];", sc, block));
    line(fmt::format("for (int64_t {} = 0; {} < {}; ++{}) {}[{}] = 0;", jj, jj, nb, jj, sc, jj));
    open(fmt::format("for (int64_t {} = 0; {} < {}; ++{})", d, d, depth, d));
    line(fmt::format("for (int64_t {} = 0; {} < {}; ++{}) {}[{}] += {}[{}][{}] * {}[{}][{}];", jj,
                     jj, nb, jj, sc, jj, qt, row, d, kt, d, jj));
    close();
    line(fmt::format("float {} = {}[{}];", bm, m, row));
    open(fmt::format("for (int64_t {} = 0; {} < {}; ++{})", jj, jj, nb, jj));
    std::string x = logit("(" + r0 + " + " + row + ")", key, sc + "[" + jj + "]");
    line(fmt::format("{}[{}] = (float){};", sc, jj, x));
    line(fmt::format("{} = eqf_max({}, {}[{}]);", bm, bm, sc, jj));
    close();
    line(fmt::format("const float {} = {} == -INFINITY ? 1.0f : eqf_exp({}[{}] - {});", alpha, bm,
                     m, row, bm));
    line(fmt::format("{}[{}] *= {};", l, row, alpha));
    line(fmt::format("for (int64_t {} = 0; {} < {}; ++{}) {}[{}][{}] *= {};", d, d, width, d, acc,
                     row, d, alpha));
    open(fmt::format("for (int64_t {} = 0; {} < {}; ++{})", jj, jj, nb, jj));
    line(fmt::format("const float {} = {} == -INFINITY ? 0.0f : eqf_exp({}[{}] - {});", p, bm, sc,
                     jj, bm));
    line(fmt::format("{}[{}] += {};", l, row, p));
    line(fmt::format("for (int64_t {} = 0; {} < {}; ++{}) {}[{}][{}] += {} * {}[{}][{}];", d, d,
                     width, d, acc, row, d, p, vt, jj, d));
    close();
    line(fmt::format("{}[{}] = {};", m, row, bm));
    close();
    close();
    open(fmt::format("for (int64_t {} = 0; {} < {}; ++{})", row, row, nr, row));
    std::string inv = fresh("inv");
    line(fmt::format("const float {} = 1.0f / {}[{}];", inv, l, row));
    open(fmt::format("for (int64_t {} = 0; {} < {}; ++{})", d, d, width, d));
    Index at = batch;
    at.push_back("(" + r0 + " + " + row + ")");
    at.push_back(d);
    line(fmt::format("{} = {}[{}][{}] * {};", store_ref(out, linear(out, at), at), acc, row, d,
                     inv));
    close();
    close();
    return items;
  }
  if (mma) {
    body_attention_mma(s, *mma, r0, rows, keys, depth, width, load, logit, [&](const Index& tail) {
      Index at = batch;
      at.insert(at.end(), tail.begin(), tail.end());
      return store_ref(out, linear(out, at), at);
    });
    return items;
  }
  // CUDA: a block per item, warp `warp` takes query row r0 + warp.
  const int per_lane = int((width + 31) / 32);
  std::string row = fresh("row"), sq = fresh("sq"), sk = fresh("sk"), sv = fresh("sv"),
              m = fresh("m"), l = fresh("l"), acc = fresh("acc"), e = fresh("e");
  line(fmt::format("const int64_t {} = {} + warp;", row, r0));
  // K's tile is [depth][key], padded by a column so that threads storing consecutive depths
  // of one key hit distinct banks.
  line(fmt::format("__shared__ float {}[{}][{}], {}[{}][{}], {}[{}][{}];", sq, tile_rows, depth, sk,
                   depth, block + 1, sv, block, width));
  open(fmt::format("if ({} < {})", row, rows));
  open(fmt::format("for (int64_t {} = lane; {} < {}; {} += 32)", d, d, depth, d));
  line(fmt::format("{}[warp][{}] = {};", sq, d, load(q, row, d)));
  close();
  close();
  line(fmt::format("float {} = -INFINITY, {} = 0;", m, l));
  line(fmt::format("float {}[{}];", acc, per_lane));
  line(fmt::format("for (int u = 0; u < {}; ++u) {}[u] = 0;", per_lane, acc));
  open(fmt::format("for (int64_t {} = 0; {} < {}; {} += {})", j0, j0, keys, j0, block));
  line(fmt::format("const int64_t {} = {} - {} < {} ? {} - {} : {};", nb, keys, j0, block, keys, j0,
                   block));
  line("__syncthreads();  // the previous block's tiles are used up");
  // K's and V's blocks, each element loaded once by one thread; consecutive threads take
  // consecutive depths (widths) of a key, which lie next to each other in a projection's output.
  for (bool is_k : {true, false}) {
    const int64_t along = is_k ? depth : width, count = block * along;
    open(fmt::format("for (int {} = threadIdx.x; {} < {}; {} += blockDim.x)", e, e, count, e));
    std::string x = fresh("x");
    line(fmt::format("const int64_t {} = {} / {}, {} = {} % {};", jj, e, along, d, e, along));
    line(fmt::format("float {} = 0;", x));
    open(fmt::format("if ({} < {})", jj, nb));
    const std::string key = "(" + j0 + " + " + jj + ")";
    line(fmt::format("{} = {};", x, is_k ? load(k, d, key) : load(v, key, d)));
    close();
    line(is_k ? fmt::format("{}[{}][{}] = {};", sk, d, jj, x)
              : fmt::format("{}[{}][{}] = {};", sv, jj, d, x));
    close();
  }
  line("__syncthreads();");
  open(fmt::format("if ({} < {})", row, rows));  // the same for a warp's lanes
  std::string j = fresh("j"), sc = fresh("sc"), dot = fresh("dot");
  line(fmt::format("const int64_t {} = {} + lane;", j, j0));
  line(fmt::format("float {} = -INFINITY;", sc));
  open(fmt::format("if ({} < {})", j, keys));
  line(fmt::format("float {} = 0;", dot));
  line(fmt::format("for (int {} = 0; {} < {}; ++{}) {} += {}[warp][{}] * {}[{}][lane];", d, d,
                   depth, d, dot, sq, d, sk, d));
  std::string x = logit(row, j, dot);
  line(fmt::format("{} = (float){};", sc, x));
  close();
  line(fmt::format("const float {} = eqf_max({}, eqf_warp_max({}));", bm, m, sc));
  line(
      fmt::format("const float {} = {} == -INFINITY ? 1.0f : eqf_exp({} - {});", alpha, bm, m, bm));
  line(fmt::format("const float {} = {} == -INFINITY ? 0.0f : eqf_exp({} - {});", p, bm, sc, bm));
  line(fmt::format("{} = {} * {} + eqf_warp_sum({});", l, l, alpha, p));
  line(fmt::format("for (int u = 0; u < {}; ++u) {}[u] *= {};", per_lane, acc, alpha));
  std::string pj = fresh("pj");
  open(fmt::format("for (int {} = 0; {} < {}; ++{})", jj, jj, nb, jj));
  line(fmt::format("const float {} = __shfl_sync(0xffffffffu, {}, {});", pj, p, jj));
  line(
      fmt::format("for (int u = 0; u < {}; ++u) if (lane + 32 * u < {}) {}[u] += {} * "
                  "{}[{}][lane + 32 * u];",
                  per_lane, width, acc, pj, sv, jj));
  close();
  line(fmt::format("{} = {};", m, bm));
  close();
  close();
  open(fmt::format("if ({} < {})", row, rows));
  std::string inv = fresh("inv");
  line(fmt::format("const float {} = 1.0f / {};", inv, l));
  open(fmt::format("for (int u = 0; u < {}; ++u)", per_lane));
  line(fmt::format("const int64_t {} = lane + 32 * u;", d));
  line(fmt::format("if ({} >= {}) break;", d, width));
  Index at = batch;
  at.push_back(row);
  at.push_back(d);
  line(fmt::format("{} = {}[u] * {};", store_ref(out, linear(out, at), at), acc, inv));
  close();
  close();
  line("__syncthreads();  // the next item's rows overwrite the shared tiles");
  return items;
}

std::optional<DType> Writer::attention_mma_type(const Stage& s) const {
  if (target_ != Target::Cuda || !plan_.tensor_cores || s.kind != StageKind::Attention)
    return std::nullopt;
  const ir::Node& qk = g_.node(s.attention->scores);
  const ValueId q = qk.inputs[0], k = qk.inputs[1], v = g_.node(s.node).inputs[1];
  // Under --precision the operands are rounded to it where they are loaded, as they would be
  // where stored; a model of 16-bit operands multiplies in their type.
  if (plan_.precision != DType::f32) return plan_.precision;
  const DType t = type(q).dtype;
  if ((t != DType::bf16 && t != DType::f16) || type(k).dtype != t || type(v).dtype != t)
    return std::nullopt;
  return t;
}

// softmax(S)·V on tensor cores (FlashAttention-2's loop), for 16-bit Q, K and V: an item is
// 128 query rows, 16 for each of the block's 8 warps. Each warp keeps its rows of Q as the A
// fragments of mma.m16n8k16 (loaded once per item), and per block of kMmaKeys keys, which the
// block's threads put in shared memory as 16-bit pairs (K by pairs of depths, V by pairs of
// keys: the B fragments' pairs), computes its 16 x 64 scores S = Q·K in f32 accumulators, puts
// each through the logit's pointwise work, folds the block into each row's running maximum and
// sum, rescales its output accumulators, and multiplies P (S's accumulators rounded to 16 bits,
// already laid out as A fragments) by V into them. Rows and columns past the extents, and
// depths and widths padded to whole steps of 16, are zeros in the fragments, keys past the end
// -INFINITY in S. A lane holds rows g and g + 8 of its warp's 16 (g = lane / 4), so a row's
// maximum and sum combine over the lane's group of 4 by shuffles.
void Writer::body_attention_mma(
    const Stage& s, DType type, const std::string& r0, const std::string& rows,
    const std::string& keys, int64_t depth, int64_t width,
    const std::function<std::string(ValueId, const std::string&, const std::string&)>& load,
    const std::function<std::string(const std::string&, const std::string&, const std::string&)>&
        logit,
    const std::function<std::string(const Index&)>& store) {
  uses_mma = true;
  const ir::Node& qk = g_.node(s.attention->scores);
  const ValueId q = qk.inputs[0], k = qk.inputs[1], v = g_.node(s.node).inputs[1];
  const std::string half = type == DType::bf16 ? "bf16" : "f16";
  const int64_t dp = (depth + 15) / 16 * 16, wp = (width + 15) / 16 * 16;
  const int64_t k_row = dp / 2 + 4, v_row = wp + 8;  // padded: lanes read distinct banks
  const int64_t steps = dp / 16, tiles = kMmaKeys / 8, out_tiles = wp / 8;
  auto pack = [&](const std::string& lo, const std::string& hi) {
    return fmt::format("eqf_pack_{}({}, {})", half, lo, hi);
  };
  // `x` = the element at (row, col) where `valid`, else 0 (the loads print inside the branch).
  auto guarded = [&](const std::string& x, const std::string& valid, ValueId from,
                     const std::string& row, const std::string& col) {
    line(fmt::format("float {} = 0;", x));
    open(fmt::format("if ({})", valid));
    line(fmt::format("{} = {};", x, load(from, row, col)));
    close();
  };
  std::string g = fresh("g"), tg = fresh("tg"), rw = fresh("rw"), active = fresh("active"),
              sk = fresh("sk"), sv = fresh("sv"), qa = fresh("qa"), o = fresh("o"), m = fresh("m"),
              l = fresh("l"), j0 = fresh("j"), nb = fresh("nb"), e = fresh("e");
  line(fmt::format("const int {} = lane >> 2, {} = lane & 3;", g, tg));
  line(fmt::format("const int64_t {} = {} + warp * 16;  // the warp's first row", rw, r0));
  line(fmt::format("const bool {} = {} < {};  // the same for the warp's lanes", active, rw, rows));
  line(fmt::format("__shared__ uint32_t {}[{}][{}], {}[{}][{}];", sk, kMmaKeys, k_row, sv,
                   kMmaKeys / 2, v_row));
  line(fmt::format("uint32_t {}[{}][4];", qa, steps));
  line(fmt::format("float {}[{}][4], {}[2] = {{-INFINITY, -INFINITY}}, {}[2] = {{0, 0}};", o,
                   out_tiles, m, l));
  line("#pragma unroll");
  line(fmt::format("for (int u = 0; u < {}; ++u) {}[u][0] = {}[u][1] = {}[u][2] = {}[u][3] = 0;",
                   out_tiles, o, o, o, o));
  // Q's A fragments: register fr of step ks holds row g + 8 (fr & 1), depths 2 tg + 8 (fr >> 1)
  // and one more, of the step's 16.
  open(fmt::format("if ({})", active));
  line("#pragma unroll");
  open(fmt::format("for (int ks = 0; ks < {}; ++ks)", steps));
  line("#pragma unroll");
  open("for (int fr = 0; fr < 4; ++fr)");
  std::string row = fresh("row"), col = fresh("col"), lo = fresh("lo"), hi = fresh("hi");
  line(fmt::format(
      "const int64_t {} = {} + {} + 8 * (fr & 1), {} = ks * 16 + 2 * {} + 8 * (fr >> 1);", row, rw,
      g, col, tg));
  guarded(lo, fmt::format("{} < {} && {} < {}", row, rows, col, depth), q, row, col);
  guarded(hi, fmt::format("{} < {} && {} + 1 < {}", row, rows, col, depth), q, row,
          "(" + col + " + 1)");
  line(fmt::format("{}[ks][fr] = {};", qa, pack(lo, hi)));
  close();
  close();
  close();
  open(fmt::format("for (int64_t {} = 0; {} < {}; {} += {})", j0, j0, keys, j0, kMmaKeys));
  line(fmt::format("const int64_t {} = {} - {} < {} ? {} - {} : {};", nb, keys, j0, kMmaKeys, keys,
                   j0, kMmaKeys));
  line("__syncthreads();  // the previous block's tiles are used up");
  // K's block by key and pair of depths; consecutive threads take consecutive depths of a key.
  {
    std::string jj = fresh("jj"), pd = fresh("pd"), key = "(" + j0 + " + " + jj + ")";
    open(fmt::format("for (int {} = threadIdx.x; {} < {}; {} += blockDim.x)", e, e,
                     kMmaKeys * dp / 2, e));
    line(fmt::format("const int {} = {} / {}, {} = 2 * ({} % {});", jj, e, dp / 2, pd, e, dp / 2));
    lo = fresh("lo"), hi = fresh("hi");
    guarded(lo, fmt::format("{} < {} && {} < {}", jj, nb, pd, depth), k, pd, key);
    guarded(hi, fmt::format("{} < {} && {} + 1 < {}", jj, nb, pd, depth), k, "(" + pd + " + 1)",
            key);
    line(fmt::format("{}[{}][{} / 2] = {};", sk, jj, pd, pack(lo, hi)));
    close();
  }
  // V's block by pair of keys and width; consecutive threads take consecutive widths.
  {
    std::string pj = fresh("pj"), w = fresh("w");
    open(fmt::format("for (int {} = threadIdx.x; {} < {}; {} += blockDim.x)", e, e,
                     kMmaKeys / 2 * wp, e));
    line(fmt::format("const int {} = 2 * ({} / {}), {} = {} % {};", pj, e, wp, w, e, wp));
    lo = fresh("lo"), hi = fresh("hi");
    guarded(lo, fmt::format("{} < {} && {} < {}", pj, nb, w, width), v, "(" + j0 + " + " + pj + ")",
            w);
    guarded(hi, fmt::format("{} + 1 < {} && {} < {}", pj, nb, w, width), v,
            "(" + j0 + " + " + pj + " + 1)", w);
    line(fmt::format("{}[{} / 2][{}] = {};", sv, pj, w, pack(lo, hi)));
    close();
  }
  line("__syncthreads();");
  open(fmt::format("if ({})", active));
  // S = Q·K: n-tile nt holds keys 8 nt + 2 tg + (fr & 1) of rows g + 8 (fr >> 1).
  std::string sc = fresh("s"), mx = fresh("mx"), alpha = fresh("alpha"), pa = fresh("pa");
  line(fmt::format("float {}[{}][4];", sc, tiles));
  line("#pragma unroll");
  open(fmt::format("for (int nt = 0; nt < {}; ++nt)", tiles));
  line(fmt::format("{}[nt][0] = {}[nt][1] = {}[nt][2] = {}[nt][3] = 0;", sc, sc, sc, sc));
  line("#pragma unroll");
  open(fmt::format("for (int ks = 0; ks < {}; ++ks)", steps));
  line(fmt::format(
      "const uint32_t b[2] = {{{}[nt * 8 + {}][ks * 8 + {}], {}[nt * 8 + {}][ks * 8 + 4 "
      "+ {}]}};",
      sk, g, tg, sk, g, tg));
  line(fmt::format("eqf_mma_{}({}[nt], {}[ks], b);", half, sc, qa));
  close();
  close();
  // The logits, and each row's maximum over the block.
  line(fmt::format("float {}[2] = {{{}[0], {}[1]}};", mx, m, m));
  line("#pragma unroll");
  open(fmt::format("for (int nt = 0; nt < {}; ++nt)", tiles));
  line("#pragma unroll");
  open("for (int fr = 0; fr < 4; ++fr)");
  row = fresh("row");
  std::string key = fresh("key"), x = fresh("x");
  line(fmt::format(
      "const int64_t {} = {} + {} + 8 * (fr >> 1), {} = {} + nt * 8 + 2 * {} + (fr & 1);", row, rw,
      g, key, j0, tg));
  line(fmt::format("float {} = -INFINITY;", x));
  open(fmt::format("if ({} < {} && {} < {})", row, rows, key, keys));
  line(fmt::format("{} = (float){};", x, logit(row, key, sc + "[nt][fr]")));
  close();
  line(fmt::format("{}[nt][fr] = {};", sc, x));
  line(fmt::format("{}[fr >> 1] = eqf_max({}[fr >> 1], {});", mx, mx, x));
  close();
  close();
  line(fmt::format("float {}[2];", alpha));
  line("#pragma unroll");
  open("for (int h = 0; h < 2; ++h)");
  line(fmt::format("{}[h] = eqf_max({}[h], __shfl_xor_sync(0xffffffffu, {}[h], 1));", mx, mx, mx));
  line(fmt::format("{}[h] = eqf_max({}[h], __shfl_xor_sync(0xffffffffu, {}[h], 2));", mx, mx, mx));
  line(
      fmt::format("{}[h] = {}[h] == -INFINITY ? 1.0f : eqf_exp({}[h] - {}[h]);", alpha, mx, m, mx));
  line(fmt::format("{}[h] = {}[h];", m, mx));
  line(fmt::format("{}[h] *= {}[h];", l, alpha));
  close();
  line("#pragma unroll");
  open(fmt::format("for (int u = 0; u < {}; ++u)", out_tiles));
  line("#pragma unroll");
  line(fmt::format("for (int fr = 0; fr < 4; ++fr) {}[u][fr] *= {}[fr >> 1];", o, alpha));
  close();
  // P, rounded to 16 bits, as A fragments: step ks's registers are n-tiles 2 ks (registers 0,
  // 1) and 2 ks + 1 (registers 2, 3), rows g and g + 8. The sums add what P·V multiplies.
  line(fmt::format("uint32_t {}[{}][4];", pa, tiles / 2));
  line("#pragma unroll");
  open(fmt::format("for (int nt = 0; nt < {}; ++nt)", tiles));
  line("#pragma unroll");
  open("for (int h = 0; h < 2; ++h)");
  std::string p0 = fresh("p"), p1 = fresh("p");
  line(fmt::format("const eqf_{} {} = {}[h] == -INFINITY ? 0.0f : eqf_exp({}[nt][2 * h] - {}[h]);",
                   half, p0, m, sc, m));
  line(fmt::format(
      "const eqf_{} {} = {}[h] == -INFINITY ? 0.0f : eqf_exp({}[nt][2 * h + 1] - {}[h]);", half, p1,
      m, sc, m));
  line(fmt::format("{}[h] += (float){} + (float){};", l, p0, p1));
  line(fmt::format("{}[nt >> 1][(nt & 1) * 2 + h] = (uint32_t){}.bits | (uint32_t){}.bits << 16;",
                   pa, p0, p1));
  close();
  close();
  // O += P·V: n-tile u holds widths 8 u + 2 tg + (fr & 1).
  line("#pragma unroll");
  open(fmt::format("for (int ks = 0; ks < {}; ++ks)", tiles / 2));
  line("#pragma unroll");
  open(fmt::format("for (int u = 0; u < {}; ++u)", out_tiles));
  line(fmt::format(
      "const uint32_t b[2] = {{{}[ks * 8 + {}][u * 8 + {}], {}[ks * 8 + 4 + {}][u * 8 + "
      "{}]}};",
      sv, tg, g, sv, tg, g));
  line(fmt::format("eqf_mma_{}({}[u], {}[ks], b);", half, o, pa));
  close();
  close();
  close();  // active
  close();  // key blocks
  open(fmt::format("if ({})", active));
  line("#pragma unroll");
  open("for (int h = 0; h < 2; ++h)");
  line(fmt::format("{}[h] += __shfl_xor_sync(0xffffffffu, {}[h], 1);", l, l));
  line(fmt::format("{}[h] += __shfl_xor_sync(0xffffffffu, {}[h], 2);", l, l));
  line(fmt::format("{}[h] = 1.0f / {}[h];", l, l));
  close();
  line("#pragma unroll");
  open(fmt::format("for (int u = 0; u < {}; ++u)", out_tiles));
  line("#pragma unroll");
  open("for (int fr = 0; fr < 4; ++fr)");
  row = fresh("row");
  col = fresh("col");
  line(fmt::format("const int64_t {} = {} + {} + 8 * (fr >> 1), {} = u * 8 + 2 * {} + (fr & 1);",
                   row, rw, g, col, tg));
  open(fmt::format("if ({} < {} && {} < {})", row, rows, col, width));
  line(fmt::format("{} = {}[u][fr] * {}[fr >> 1];", store({row, col}), o, l));
  close();
  close();
  close();
  close();
}

// MatMul and Gemm operand geometry: element (m, k) of A and (k, n) of B at an output index.
struct Contraction {
  ValueId a, b;
  bool gemm = false, trans_a = false, trans_b = false;
  double alpha = 1, beta = 1;
  ValueId c = ir::kNoValue;
};

Contraction contraction(const ir::Graph& g, const ir::Node& n) {
  Contraction c;
  c.a = n.inputs[0];
  c.b = n.inputs[1];
  if (n.op_type == "Gemm") {
    ir::OpContext ctx = ir::make_context(g, n);
    c.gemm = true;
    c.trans_a = ctx.attr_int("transA") != 0;
    c.trans_b = ctx.attr_int("transB") != 0;
    c.alpha = ctx.attr_float("alpha");
    c.beta = ctx.attr_float("beta");
    if (n.inputs.size() > 2) c.c = n.inputs[2];
  }
  return c;
}

std::string Writer::body_matmul_element(const Stage& s) {
  const ir::Node& n = g_.node(s.node);
  Contraction c = contraction(g_, n);
  ValueId out = s.output;
  size_t ro = rank(out), ra = rank(c.a), rb = rank(c.b);
  Index idx = decompose_value("i", out);
  std::string k = fresh("k");
  std::string ct = compute_type({type(out).dtype});
  Index ia, ib;
  std::string K;
  if (c.gemm) {
    std::string m = idx[0], nn = idx[1];
    ia = c.trans_a ? Index{k, m} : Index{m, k};
    ib = c.trans_b ? Index{nn, k} : Index{k, nn};
    K = dim(c.a, c.trans_a ? 0 : 1);
  } else {
    K = dim(c.a, ra - 1);
    size_t batch = ro - (ra >= 2 ? 1 : 0) - (rb >= 2 ? 1 : 0);
    Index bidx(idx.begin(), idx.begin() + long(batch));
    if (ra >= 2) {
      ia = matrix_index(c.a, bidx, idx[batch], k);
    } else {
      ia = {k};
    }
    if (rb >= 2) {
      ib = matrix_index(c.b, bidx, k, idx[ro - 1]);
    } else {
      ib = {k};
    }
  }
  std::string acc = fresh("acc");
  line(fmt::format("{} {} = 0;", ct, acc));
  open(fmt::format("for (int64_t {} = 0; {} < {}; ++{})", k, k, K, k));
  line(fmt::format("{} += ({}){} * ({}){};", acc, ct, elem(c.a, ia), ct, elem(c.b, ib)));
  close();
  std::string v = acc;
  if (c.gemm) {
    v = fmt::format("{} * {}", literal(c.alpha, ct), acc);
    if (c.c != ir::kNoValue && c.beta != 0)
      v += fmt::format(" + {} * ({}){}", literal(c.beta, ct), ct,
                       elem(c.c, broadcast_index(c.c, idx)));
  }
  store_output(out, "i", idx, v);
  return numel(out);
}

// The CPU form. Where B's rows are contiguous, one item per block of `mb` output rows, in
// register tiles: two vectors of columns at a time, their mb x 2 vectors of sums in registers
// (named variables of the compilers' vector extension) over all of K, so each load of B feeds
// mb multiply-adds. Where B is transposed (Gemm transB), one item per row, a dot product per
// column.
std::string Writer::body_matmul_rows(const Stage& s) {
  const ir::Node& n = g_.node(s.node);
  Contraction c = contraction(g_, n);
  ValueId out = s.output;
  size_t ro = rank(out), ra = rank(c.a), rb = rank(c.b);
  const bool b_rows = !(c.gemm && c.trans_b);  // B's rows (along N) are contiguous
  const ir::Dim& row_dim = type(out).shape[ro - 2];
  // Rows per item: two vectors of sums per row, kTileAccumulators in all.
  int64_t mb = b_rows && row_dim.is_static() ? kTileAccumulators / 2 : 1;
  while (row_dim.is_static() && row_dim.value() % mb != 0) mb /= 2;
  std::vector<std::string> rdims;
  std::vector<bool> rone;
  for (size_t k = 0; k + 1 < ro; ++k) {
    rdims.push_back(k + 2 == ro && mb > 1 ? fmt::format("({} / {})", dim(out, k), mb)
                                          : dim(out, k));
    rone.push_back(dim_is_one(out, k) && !(k + 2 == ro && mb > 1));
  }
  std::string rows = "1";
  for (const std::string& d : rdims) rows = imul(rows, d);
  Index ridx = decompose("i", rdims, rone);
  std::string ct = compute_type({type(out).dtype});
  std::string N = dim(out, ro - 1);
  std::string m = ridx.empty() ? "0" : ridx.back();
  if (mb > 1) {
    line(fmt::format("const int64_t m0 = {} * {};", m, mb));
    m = "m0";
    ridx.back() = m;
  }
  std::string K, sak, sam, sbk, sbn, abase, bbase;
  if (c.gemm) {
    K = dim(c.a, c.trans_a ? 0 : 1);
    abase = linear(c.a, c.trans_a ? Index{"0", m} : Index{m, "0"});
    sak = c.trans_a ? dim(c.a, 1) : "1";
    sam = c.trans_a ? "1" : K;
    bbase = "0";
    sbk = c.trans_b ? "1" : dim(c.b, 1);
    sbn = c.trans_b ? dim(c.b, 1) : "1";
  } else {
    K = dim(c.a, ra - 1);
    size_t batch = ro - 2;
    const Index batch_index(ridx.begin(), ridx.begin() + long(batch));
    abase = linear(c.a, matrix_index(c.a, batch_index, m, "0"));
    sak = "1";
    sam = K;
    bbase = linear(c.b, matrix_index(c.b, batch_index, "0", "0"));
    sbk = dim(c.b, rb - 1);
    sbn = "1";
  }
  row_work_ = imul(imul(N, K), std::to_string(mb));
  line(fmt::format("const {}* a = {} + {};", buffer_type(c.a), ptr(c.a), abase));
  line(fmt::format("const {}* b = {} + {};", buffer_type(c.b), ptr(c.b), bbase));
  // Element (row m + r, col) once, from an accumulator in the compute type, whatever the
  // buffer's type.
  auto store = [&](int64_t r, const std::string& col, const std::string& acc) {
    std::string row = iadd(m, std::to_string(r));
    std::string v = acc;
    if (c.gemm) {
      v = fmt::format("{} * {}", literal(c.alpha, ct), acc);
      if (c.c != ir::kNoValue && c.beta != 0)
        v += fmt::format(" + {} * ({}){}", literal(c.beta, ct), ct,
                         elem(c.c, broadcast_index(c.c, Index{row, col})));
    }
    Index at = ridx;
    at.back() = row;
    at.push_back(col);
    std::string lin = iadd(imul(mb > 1 ? fmt::format("(i * {} + {})", mb, r) : "i", N), col);
    store_output(out, lin, at, v);
  };
  if (b_rows) {
    // Tiles of two vectors of columns by mb rows.
    vector_variants(ct, [&](int lanes) {
      const int vectors = 2, tile = vectors * lanes;
      auto acc = [](int64_t r, int h) { return fmt::format("acc{}_{}", r, h); };
      open(fmt::format("for (int64_t n0 = 0; n0 < {}; n0 += {})", N, tile));
      line(fmt::format("const int64_t nb = {} - n0 < {} ? {} - n0 : {};", N, tile, N, tile));
      for (int64_t r = 0; r < mb; ++r)
        for (int h = 0; h < vectors; ++h) line(fmt::format("vec {} = (vec){{}};", acc(r, h)));
      auto reduction = [&](bool whole) {
        open(fmt::format("for (int64_t k = 0; k < {}; ++k)", K));
        line(fmt::format("const {}* br = b + {} + n0;", buffer_type(c.b), imul("k", sbk)));
        for (int h = 0; h < vectors; ++h) {
          if (whole && buffer_type(c.b) == ct) {
            line(fmt::format("vec x{}; memcpy(&x{}, br + {}, sizeof(vec));", h, h, h * lanes));
            continue;
          }
          std::string elements;
          for (int u = 0; u < lanes; ++u) {
            int q = h * lanes + u;
            elements += (u ? ", " : "") +
                        (whole ? fmt::format("({})br[{}]", ct, q)
                               : fmt::format("({} < nb ? ({})br[{}] : ({})0)", q, ct, q, ct));
          }
          line(fmt::format("const vec x{} = {{{}}};", h, elements));
        }
        for (int64_t r = 0; r < mb; ++r) {
          line(fmt::format("const {} a{} = ({})a[{}];", ct, r, ct,
                           iadd(imul(std::to_string(r), sam), imul("k", sak))));
          for (int h = 0; h < vectors; ++h) line(fmt::format("{} += a{} * x{};", acc(r, h), r, h));
        }
        close();
      };
      open(fmt::format("if (nb == {})", tile));
      reduction(true);
      close();
      open("else");
      reduction(false);
      close();
      // Each vector's elements stored (and their epilogue computed) by a loop, not unrolled:
      // the epilogue is printed once per vector.
      for (int64_t r = 0; r < mb; ++r)
        for (int h = 0; h < vectors; ++h) {
          std::string u = fresh("u"), e = fresh("e");
          // Through an array: indexing the vector itself by a variable would keep it in memory
          // for the whole reduction.
          line(fmt::format("{} {}[{}];", ct, e, lanes));
          line(fmt::format("memcpy({}, &{}, sizeof(vec));", e, acc(r, h)));
          open(fmt::format("for (int {} = 0; {} < {} && {} + {} < nb; ++{})", u, u, lanes,
                           h * lanes, u, u));
          store(r, fmt::format("(n0 + {} + {})", h * lanes, u), fmt::format("{}[{}]", e, u));
          close();
        }
      close();
    });
  } else {
    open(fmt::format("for (int64_t n = 0; n < {}; ++n)", N));
    line(fmt::format("const {}* br = b + {};", buffer_type(c.b), imul("n", sbn)));
    line(fmt::format("{} acc = 0;", ct));
    line("#pragma omp simd reduction(+ : acc)");
    line(fmt::format("for (int64_t k = 0; k < {}; ++k) acc += ({})a[{}] * ({})br[k];", K, ct,
                     imul("k", sak), ct));
    store(0, "n", "acc");
    close();
  }
  return rows;
}

std::vector<ir::structured::WindowAxis> window_of(const ir::Graph& g, const ir::Node& n,
                                                  const std::vector<int64_t>& kernel) {
  ir::OpContext ctx = ir::make_context(g, n);
  const ir::TensorType& x = *ctx.input_types[0];
  std::vector<ir::Dim> spatial(x.shape.dims().begin() + 2, x.shape.dims().end());
  bool ceil_mode = ctx.has_attr("ceil_mode") && ctx.attr_int("ceil_mode") != 0;
  return ir::structured::window_axes(ctx, spatial, kernel, ceil_mode);
}

std::string Writer::body_conv(const Stage& s) {
  const ir::Node& n = g_.node(s.node);
  ir::OpContext ctx = ir::make_context(g_, n);
  ValueId x = n.inputs[0], w = n.inputs[1], out = s.output;
  size_t sp = rank(x) - 2;
  std::vector<int64_t> kernel;
  for (size_t k = 0; k < sp; ++k) {
    if (!type(w).shape[k + 2].is_static())
      throw Error("codegen: Conv '" + n.name + "': the kernel size must be static",
                  Error::Kind::Unsupported);
    kernel.push_back(type(w).shape[k + 2].value());
  }
  auto win = window_of(g_, n, kernel);
  int64_t group = ctx.attr_int("group");
  Index idx = decompose_value("i", out);
  std::string ct = compute_type({type(out).dtype});
  std::string cg = dim(w, 1);
  std::string mg = fmt::format("({} / {})", dim(w, 0), group);
  std::string gv = fresh("grp");
  line(fmt::format("const int64_t {} = {} / {};", gv, idx[1], mg));
  std::string acc = fresh("acc");
  line(fmt::format("{} {} = 0;", ct, acc));
  std::string c = fresh("c");
  open(fmt::format("for (int64_t {} = 0; {} < {}; ++{})", c, c, cg, c));
  Index xi = {idx[0], iadd(imul(gv, cg), c)}, wi = {idx[1], c};
  for (size_t k = 0; k < sp; ++k) {
    std::string kk = fresh("q"), pos = fresh("y");
    open(fmt::format("for (int64_t {} = 0; {} < {}; ++{})", kk, kk, kernel[k], kk));
    line(fmt::format("const int64_t {} = {} * {} - {} + {} * {};", pos, idx[2 + k], win[k].stride,
                     win[k].pad_begin, kk, win[k].dilation));
    line(fmt::format("if ({} < 0 || {} >= {}) continue;", pos, pos, dim(x, 2 + k)));
    xi.push_back(pos);
    wi.push_back(kk);
  }
  line(fmt::format("{} += ({}){} * ({}){};", acc, ct, elem(x, xi), ct, elem(w, wi)));
  for (size_t k = 0; k <= sp; ++k) close();
  std::string v = acc;
  if (n.inputs.size() > 2 && n.inputs[2] != ir::kNoValue)
    v = fmt::format("{} + ({}){}", acc, ct, elem(n.inputs[2], Index{idx[1]}));
  store_output(out, "i", idx, v);
  return numel(out);
}

// The CPU form of a 2-D convolution, in register tiles: one item per (n, block of `mb` output
// channels of one group, output row). Along the row, a tile of one vector of outputs keeps its
// mb vectors of sums in registers (named variables of the compilers' vector extension, so that
// no compiler has to prove an array can live in registers) over every (channel, tap): each
// input vector feeds mb multiply-adds and each weight a whole vector. A tile whose every tap
// lies inside the input row loads its inputs directly; an edge tile (padding, the row's end)
// loads the valid ones and zeros the rest. Operands are contiguous buffers.
std::string Writer::body_conv_tiles(const Stage& s) {
  const ir::Node& n = g_.node(s.node);
  ir::OpContext ctx = ir::make_context(g_, n);
  ValueId x = n.inputs[0], w = n.inputs[1], out = s.output;
  const int64_t kh_size = type(w).shape[2].value(), kw_size = type(w).shape[3].value();
  auto win = window_of(g_, n, {kh_size, kw_size});
  const int64_t group = ctx.attr_int("group");
  const int64_t mg = type(w).shape[0].value() / group;
  int64_t mb = kTileAccumulators;
  while (mg % mb != 0) mb /= 2;
  const int64_t taps = kh_size * kw_size;
  const int64_t sh = win[0].stride, ph = win[0].pad_begin, dh = win[0].dilation;
  const int64_t sw = win[1].stride, pw = win[1].pad_begin, dw = win[1].dilation;
  std::string ct = compute_type({type(out).dtype});
  std::string OW = dim(out, 3), H = dim(x, 2), W = dim(x, 3), C = dim(x, 1), Cg = dim(w, 1);
  std::string blocks = fmt::format("({} / {})", dim(out, 1), mb);
  Index r = decompose("i", {dim(out, 0), blocks, dim(out, 2)},
                      {dim_is_one(out, 0), mb == 1 && dim_is_one(out, 1), dim_is_one(out, 2)});
  row_work_ = imul(imul(OW, Cg), std::to_string(mb * taps));
  line(fmt::format("const int64_t m0 = {} * {};", r[1], mb));
  line(fmt::format("const int64_t grp = m0 / {};", mg));
  line(fmt::format("const {}* xg = {} + ({} * {} + grp * {}) * {} * {};", buffer_type(x), ptr(x),
                   r[0], C, Cg, H, W));
  line(fmt::format("const {}* wm = {} + m0 * {} * {};", buffer_type(w), ptr(w), Cg, taps));
  std::vector<std::string> bias(size_t(mb), "0");
  if (n.inputs.size() > 2 && n.inputs[2] != ir::kNoValue)
    for (int64_t k = 0; k < mb; ++k)
      bias[size_t(k)] = "(" + ct + ")" + elem(n.inputs[2], Index{iadd("m0", std::to_string(k))});
  vector_variants(ct, [&](int lanes) {
    open(fmt::format("for (int64_t q0 = 0; q0 < {}; q0 += {})", OW, lanes));
    line(fmt::format("const int64_t qb = {} - q0 < {} ? {} - q0 : {};", OW, lanes, OW, lanes));
    for (int64_t k = 0; k < mb; ++k)
      line(fmt::format("vec acc{} = (vec){{}} + {};", k, bias[size_t(k)]));
    // Inside: the first tap of the first output and the last tap of the last lie in the row.
    line(fmt::format(
        "const bool inside = qb == {} && q0 * {} - {} >= 0 && (q0 + {}) * {} - {} + {} < {};",
        lanes, sw, pw, lanes - 1, sw, pw, (kw_size - 1) * dw, W));
    auto reduction = [&](bool inside) {
      open(fmt::format("for (int64_t c = 0; c < {}; ++c)", Cg));
      line(fmt::format("const {}* xc = xg + c * {} * {};", buffer_type(x), H, W));
      line(fmt::format("const {}* wc = wm + c * {};", buffer_type(w), taps));
      open(fmt::format("for (int64_t kh = 0; kh < {}; ++kh)", kh_size));
      line(fmt::format("const int64_t ih = {} * {} - {} + kh * {};", r[2], sh, ph, dh));
      line(fmt::format("if (ih < 0 || ih >= {}) continue;", H));
      line(fmt::format("const {}* xr = xc + ih * {};", buffer_type(x), W));
      open(fmt::format("for (int64_t kw = 0; kw < {}; ++kw)", kw_size));
      line(fmt::format("const int64_t off = q0 * {} - {} + kw * {};", sw, pw, dw));
      if (inside && sw == 1 && buffer_type(x) == ct) {
        line("vec xv; memcpy(&xv, xr + off, sizeof(vec));");
      } else {
        std::string elements;
        for (int u = 0; u < lanes; ++u) {
          std::string p = fmt::format("off + {}", int64_t(u) * sw);
          elements += (u ? ", " : "") +
                      (inside ? fmt::format("({})xr[{}]", ct, p)
                              : fmt::format("({} < qb && {} >= 0 && {} < {} ? ({})xr[{}] : ({})0)",
                                            u, p, p, W, ct, p, ct));
        }
        line(fmt::format("const vec xv = {{{}}};", elements));
      }
      for (int64_t k = 0; k < mb; ++k)
        line(fmt::format("acc{} += ({})wc[{} + kh * {} + kw] * xv;", k, ct,
                         imul(std::to_string(k), imul(Cg, std::to_string(taps))), kw_size));
      close();
      close();
      close();
    };
    open("if (inside)");
    reduction(true);
    close();
    open("else");
    reduction(false);
    close();
    // Each channel's elements stored (and their epilogue computed) by a loop, not unrolled.
    for (int64_t k = 0; k < mb; ++k) {
      std::string u = fresh("u"), e = fresh("e");
      line(fmt::format("{} {}[{}];", ct, e, lanes));  // see body_matmul_rows
      line(fmt::format("memcpy({}, &acc{}, sizeof(vec));", e, k));
      open(fmt::format("for (int {} = 0; {} < qb; ++{})", u, u, u));
      std::string m = iadd("m0", std::to_string(k));
      Index at = {r[0], m, r[2], fmt::format("(q0 + {})", u)};
      store_output(out, linear(out, at), at, fmt::format("{}[{}]", e, u));
      close();
    }
    close();
  });
  return fmt::format("{} * {} * {}", dim(out, 0), blocks, dim(out, 2));
}

// CUDA: a 2-D convolution as an implicit GEMM per group, C[m][p] = sum over k of A[m][k] B[k][p]:
// m an output channel of the group, p an output pixel (image, row and column flattened), k an
// input channel and tap. A is the weights as stored (row m is contiguous in k); B is the input
// read at the tap, zero in the padding, and never materialized. An item is one block's tile of
// `tile.m` channels by `tile.p` pixels of C. For each slice of kConvTileK k, the block copies
// A's and B's slices into shared memory and each of its 256 threads accumulates its
// (tile.m / 16) x (tile.p / 16) outputs in registers, while the next slice is already being
// loaded into registers. The epilogue (bias, the merged pointwise stage) is computed where the
// tile stores.
std::string Writer::body_conv_gemm(const Stage& s, ConvTile tile) {
  const int64_t tile_m = tile.m, tile_p = tile.p;
  const ir::Node& n = g_.node(s.node);
  ir::OpContext ctx = ir::make_context(g_, n);
  ValueId x = n.inputs[0], w = n.inputs[1], out = s.output;
  const auto& ws = type(w).shape;
  const int64_t kh_size = ws[2].value(), kw_size = ws[3].value(), cg = ws[1].value();
  auto win = window_of(g_, n, {kh_size, kw_size});
  const int64_t group = ctx.attr_int("group"), mg = ws[0].value() / group;
  const int64_t taps = kh_size * kw_size, K = cg * taps;
  const int64_t per_thread_m = tile_m / 16, per_thread_p = tile_p / 16;
  const int64_t a_loads = tile_m * kConvTileK / 256, b_loads = kConvTileK * tile_p / 256;
  const int64_t m_tiles = (mg + tile_m - 1) / tile_m;
  const bool whole_m = mg % tile_m == 0, whole_k = K % kConvTileK == 0;
  const std::string OW = dim(out, 3), H = dim(x, 2), W = dim(x, 3), C = dim(x, 1);
  const std::string pixels = "(" + imul(dim(out, 2), OW) + ")";
  const std::string P = "(" + imul(dim(out, 0), pixels) + ")";
  const std::string p_tiles = fmt::format("(({} + {}) / {})", P, tile_p - 1, tile_p);
  Index item = decompose("i", {std::to_string(group), p_tiles, std::to_string(m_tiles)},
                         {group == 1, false, m_tiles == 1});
  const std::string grp = item[0], pt = item[1], mt = item[2];
  const std::string xt = buffer_type(x), wt = buffer_type(w);
  line(fmt::format("const int64_t m_first = {};",
                   iadd(imul(grp, std::to_string(mg)), imul(mt, std::to_string(tile_m)))));
  if (!whole_m)
    line(fmt::format("const int64_t m_in_group = {};", imul(mt, std::to_string(tile_m))));
  line(fmt::format("const int64_t p_first = {} * {};", pt, tile_p));
  // 16-bit operands multiply on tensor cores (`mma`): the slices are stored as 16-bit values,
  // A's by channel and B's by pixel, k along each row (padded to 24, so that the 8 rows a
  // fragment read touches fall in distinct banks), where mma.sync's fragments take them in
  // pairs. Otherwise the slices are floats, k by channel and k by pixel.
  const std::optional<DType> mma = conv_mma_type(s);
  // What a thread loads for the next slice: floats, or the 16-bit values' bits as stored.
  const char* reg = mma ? "uint16_t" : "float";
  const char* zero = mma ? "0" : "0.0f";
  if (mma) {
    uses_mma = true;
    line(fmt::format("__shared__ __align__(16) uint16_t As[{}][24];", tile_m));
    line(fmt::format("__shared__ __align__(16) uint16_t Bs[{}][24];", tile_p));
  } else {
    line(fmt::format("__shared__ __align__(16) float As[{}][{}];", kConvTileK, tile_m + 4));
    line(fmt::format("__shared__ __align__(16) float Bs[{}][{}];", kConvTileK, tile_p));
  }
  line("const int tx = threadIdx.x;");
  // What this thread loads: A's column ak of rows am + 16 u, B's pixel bp of k rows bk + 4 u.
  line(fmt::format("const int ak = tx % {}, am = tx / {};", kConvTileK, kConvTileK));
  line(fmt::format("const int bp = tx % {}, bk = tx / {};", tile_p, tile_p));
  line(fmt::format("const {}* wa = {} + (m_first + am) * {};", wt, ptr(w), K));
  line(fmt::format("const int64_t p = p_first + bp;"));
  line(fmt::format("const bool p_in = p < {};", P));
  line(fmt::format("const int64_t img = p / {}, in_img = p % {};", pixels, pixels));
  line(fmt::format("const int64_t ih0 = in_img / {} * {} - {}, iw0 = in_img % {} * {} - {};", OW,
                   win[0].stride, win[0].pad_begin, OW, win[1].stride, win[1].pad_begin));
  line(fmt::format("const {}* xb = {} + {} * {} * {};", xt, ptr(x),
                   iadd(imul("img", C), imul(grp, std::to_string(cg))), H, W));
  line(fmt::format("{} ra[{}], rb[{}];", reg, a_loads, b_loads));
  auto load = [&](const std::string& k0) {
    line("#pragma unroll");
    open(fmt::format("for (int u = 0; u < {}; ++u)", a_loads));
    line(fmt::format("const int k = {} + ak;", k0));
    std::string ok = whole_k ? "" : fmt::format("k < {}", K);
    if (!whole_m)
      ok += fmt::format("{}m_in_group + am + 16 * u < {}", ok.empty() ? "" : " && ", mg);
    std::string a = fmt::format(
        fmt::runtime(mma ? "wa[16 * u * {} + k].bits" : "(float)wa[16 * u * {} + k]"), K);
    line(ok.empty() ? fmt::format("ra[u] = {};", a)
                    : fmt::format("ra[u] = {} ? {} : {};", ok, a, zero));
    close();
    line("#pragma unroll");
    open(fmt::format("for (int u = 0; u < {}; ++u)", b_loads));
    line(fmt::format("const int k = {} + bk + {} * u;", k0, 256 / tile_p));
    line(fmt::format("{} v = {};", reg, zero));
    open(whole_k ? "if (p_in)" : fmt::format("if (p_in && k < {})", K));
    line(fmt::format("const int c = k / {}, tap = k % {};", taps, taps));
    line(fmt::format("const int64_t ih = ih0 + tap / {} * {}, iw = iw0 + tap % {} * {};", kw_size,
                     win[0].dilation, kw_size, win[1].dilation));
    line(
        fmt::format("if (ih >= 0 && ih < {} && iw >= 0 && iw < {}) v = {}xb[(c * {} + ih) * "
                    "{} + iw]{};",
                    H, W, mma ? "" : "(float)", H, W, mma ? ".bits" : ""));
    close();
    line("rb[u] = v;");
    close();
  };
  load("0");
  // Tensor cores: the 8 warps split the tile into warp tiles of mi x ni fragments (16 channels by
  // 8 pixels each); a lane holds 4 accumulators of each fragment, at rows (channels) frag_row
  // and frag_row + 8 and columns (pixels) 2 frag_col and 2 frag_col + 1 (PTX's m16n8k16
  // layout).
  const int64_t warp_m = std::min<int64_t>(32, tile_m / 2), warps_m = tile_m / warp_m;
  const int64_t warp_p = tile_p / (8 / warps_m), mi = warp_m / 16, ni = warp_p / 8;
  if (mma) {
    line(fmt::format("float acc[{}][{}][4];", mi, ni));
    line("#pragma unroll");
    open(fmt::format("for (int r = 0; r < {}; ++r)", mi));
    line("#pragma unroll");
    line(
        fmt::format("for (int c = 0; c < {}; ++c) acc[r][c][0] = acc[r][c][1] = acc[r][c][2] = "
                    "acc[r][c][3] = 0.0f;",
                    ni));
    close();
    line("const int frag_row = lane >> 2, frag_col = lane & 3;");
    line(fmt::format("const int warp_m0 = warp / {} * {}, warp_p0 = warp % {} * {};", 8 / warps_m,
                     warp_m, 8 / warps_m, warp_p));
  } else {
    line(fmt::format("float acc[{}][{}];", per_thread_m, per_thread_p));
    line("#pragma unroll");
    open(fmt::format("for (int r = 0; r < {}; ++r)", per_thread_m));
    line("#pragma unroll");
    line(fmt::format("for (int c = 0; c < {}; ++c) acc[r][c] = 0.0f;", per_thread_p));
    close();
    line("const int ty = tx / 16, tn = tx % 16;");
  }
  open(fmt::format("for (int k0 = 0; k0 < {}; k0 += {})", K, kConvTileK));
  line("#pragma unroll");
  line(mma ? fmt::format("for (int u = 0; u < {}; ++u) As[am + 16 * u][ak] = ra[u];", a_loads)
           : fmt::format("for (int u = 0; u < {}; ++u) As[ak][am + 16 * u] = ra[u];", a_loads));
  line("#pragma unroll");
  line(mma ? fmt::format("for (int u = 0; u < {}; ++u) Bs[bp][bk + {} * u] = rb[u];", b_loads,
                         256 / tile_p)
           : fmt::format("for (int u = 0; u < {}; ++u) Bs[bk + {} * u][bp] = rb[u];", b_loads,
                         256 / tile_p));
  line("__syncthreads();");
  open(fmt::format("if (k0 + {} < {})", kConvTileK, K));
  load(fmt::format("k0 + {}", kConvTileK));
  close();
  if (mma) {
    // One k step of 16: A's fragments (rows frag_row and + 8, k 2 frag_col and + 8, in pairs)
    // and B's (k the same, pixel frag_row), then mi x ni products.
    line(fmt::format("uint32_t fa[{}][4], fb[{}][2];", mi, ni));
    line("#pragma unroll");
    open(fmt::format("for (int r = 0; r < {}; ++r)", mi));
    line("const int row = warp_m0 + 16 * r + frag_row;");
    line("fa[r][0] = *(const uint32_t*)&As[row][2 * frag_col];");
    line("fa[r][1] = *(const uint32_t*)&As[row + 8][2 * frag_col];");
    line("fa[r][2] = *(const uint32_t*)&As[row][2 * frag_col + 8];");
    line("fa[r][3] = *(const uint32_t*)&As[row + 8][2 * frag_col + 8];");
    close();
    line("#pragma unroll");
    open(fmt::format("for (int c = 0; c < {}; ++c)", ni));
    line("const int col = warp_p0 + 8 * c + frag_row;");
    line("fb[c][0] = *(const uint32_t*)&Bs[col][2 * frag_col];");
    line("fb[c][1] = *(const uint32_t*)&Bs[col][2 * frag_col + 8];");
    close();
    line("#pragma unroll");
    open(fmt::format("for (int r = 0; r < {}; ++r)", mi));
    line("#pragma unroll");
    line(fmt::format("for (int c = 0; c < {}; ++c) eqf_mma_{}(acc[r][c], fa[r], fb[c]);", ni,
                     mma == DType::f16 ? "f16" : "bf16"));
    close();
    line("__syncthreads();  // the slices are used up");
    close();
    conv_mma_store(s, mi, ni, P, pixels, OW, whole_m, mg);
    return fmt::format("{} * {} * {}", group, p_tiles, m_tiles);
  }
  line("#pragma unroll");
  open(fmt::format("for (int kk = 0; kk < {}; ++kk)", kConvTileK));
  line(fmt::format("float a[{}], b[{}];", per_thread_m, per_thread_p));
  // `count` consecutive floats of row kk of a shared tile into `to`, in 16-byte reads (8-byte
  // for two).
  auto read_row = [&](const std::string& to, const std::string& tile, const std::string& thread,
                      int64_t count) {
    const int64_t width = count == 2 ? 2 : 4;
    line("#pragma unroll");
    open(fmt::format("for (int q = 0; q < {}; ++q)", count / width));
    line(fmt::format("const float{} v = *(const float{}*)&{}[kk][{} * {} + {} * q];", width, width,
                     tile, thread, count, width));
    line(width == 2 ? fmt::format("{}[2 * q] = v.x, {}[2 * q + 1] = v.y;", to, to)
                    : fmt::format("{0}[4 * q] = v.x, {0}[4 * q + 1] = v.y, {0}[4 * q + 2] = v.z, "
                                  "{0}[4 * q + 3] = v.w;",
                                  to));
    close();
  };
  read_row("b", "Bs", "tn", per_thread_p);
  read_row("a", "As", "ty", per_thread_m);
  line("#pragma unroll");
  open(fmt::format("for (int r = 0; r < {}; ++r)", per_thread_m));
  line("#pragma unroll");
  line(fmt::format("for (int c = 0; c < {}; ++c) acc[r][c] += a[r] * b[c];", per_thread_p));
  close();
  close();
  line("__syncthreads();  // the slices are used up");
  close();
  // Each thread's outputs: channels ty * per_thread_m + r, pixels tn * per_thread_p + c.
  line("#pragma unroll");
  open(fmt::format("for (int r = 0; r < {}; ++r)", per_thread_m));
  if (!whole_m) line(fmt::format("if (m_in_group + ty * {} + r >= {}) break;", per_thread_m, mg));
  line(fmt::format("const int64_t m = m_first + ty * {} + r;", per_thread_m));
  const std::string bias = conv_tile_bias(s);
  line("#pragma unroll");
  open(fmt::format("for (int c = 0; c < {}; ++c)", per_thread_p));
  line(fmt::format("const int64_t q = p_first + tn * {} + c;", per_thread_p));
  line(fmt::format("if (q >= {}) break;", P));
  conv_tile_store(s, pixels, OW, fmt::format("acc[r][c] + {}", bias));
  close();
  close();
  return fmt::format("{} * {} * {}", group, p_tiles, m_tiles);
}

// A convolution tile's bias at output channel `m` (a float expression; "0.0f" without one).
std::string Writer::conv_tile_bias(const Stage& s) {
  const ir::Node& n = g_.node(s.node);
  if (n.inputs.size() > 2 && n.inputs[2] != ir::kNoValue)
    return "(float)" + elem(n.inputs[2], Index{"m"});
  return "0.0f";
}

// Stores `value` at output channel `m` and flat pixel `q` of a convolution tile, through the
// merged epilogue.
void Writer::conv_tile_store(const Stage& s, const std::string& pixels, const std::string& OW,
                             const std::string& value) {
  line(fmt::format("const int64_t q_img = q / {}, q_in = q % {};", pixels, pixels));
  line(fmt::format("const int64_t q_row = q_in / {}, q_col = q_in % {};", OW, OW));
  Index at = {"q_img", "m", "q_row", "q_col"};
  store_output(s.output, linear(s.output, at), at, value);
}

// The tensor-core tile's outputs: fragment (r, c)'s accumulator e of this lane is channel
// warp_m0 + 16 r + frag_row (+ 8 for e >= 2) and pixel warp_p0 + 8 c + 2 frag_col (+ 1 for odd
// e), stored with the bias through the epilogue as body_conv_gemm's other form stores.
void Writer::conv_mma_store(const Stage& s, int64_t mi, int64_t ni, const std::string& P,
                            const std::string& pixels, const std::string& OW, bool whole_m,
                            int64_t mg) {
  line("#pragma unroll");
  open(fmt::format("for (int r = 0; r < {}; ++r)", mi));
  line("#pragma unroll");
  open("for (int e = 0; e < 4; e += 2)");
  line("const int row = warp_m0 + 16 * r + frag_row + (e ? 8 : 0);");
  if (!whole_m) line(fmt::format("if (m_in_group + row >= {}) continue;", mg));
  line("const int64_t m = m_first + row;");
  const std::string bias = conv_tile_bias(s);
  line("#pragma unroll");
  open(fmt::format("for (int c = 0; c < {}; ++c)", ni));
  line("#pragma unroll");
  open("for (int h = 0; h < 2; ++h)");
  line("const int64_t q = p_first + warp_p0 + 8 * c + 2 * frag_col + h;");
  line(fmt::format("if (q >= {}) continue;", P));
  conv_tile_store(s, pixels, OW, fmt::format("acc[r][c][e + h] + {}", bias));
  close();
  close();
  close();
  close();
}

std::optional<DType> Writer::conv_mma_type(const Stage& s) const {
  if (target_ != Target::Cuda || !plan_.tensor_cores || s.kind != StageKind::Conv)
    return std::nullopt;
  const ir::Node& n = g_.node(s.node);
  const Buffer* x = plan_.buffer(n.inputs[0]);
  const Buffer* w = plan_.buffer(n.inputs[1]);
  if (!x || !w || x->dtype != w->dtype || (x->dtype != DType::bf16 && x->dtype != DType::f16))
    return std::nullopt;
  return x->dtype;
}

std::vector<ConvTile> Writer::conv_gemm_tiles(const Stage& s) const {
  if (target_ != Target::Cuda || s.kind != StageKind::Conv) return {};
  const ir::Node& n = g_.node(s.node);
  const DType t = type(s.output).dtype;
  const auto& ws = type(n.inputs[1]).shape;
  if (!ws.is_static()) return {};
  return cost::conv_tiles(static_cast<int64_t>(rank(n.inputs[0])) - 2,
                          t == DType::f32 || t == DType::bf16 || t == DType::f16,
                          ws[0].value() / ir::make_context(g_, n).attr_int("group"));
}

bool Writer::cudnn_conv(const Stage& s) const {
  if (target_ != Target::Cuda || hosted_ || s.kind != StageKind::Conv) return false;
  const ir::Node& n = g_.node(s.node);
  const ValueId x = n.inputs[0], w = n.inputs[1];
  if (rank(x) != 4 || !plan_.buffer(s.output)) return false;
  for (ValueId v : {x, w})
    if (!plan_.buffer(v) || plan_.buffer(v)->slice_of) return false;
  // The buffers' types: under --precision, f32 values are stored at 16 bits.
  const DType t = plan_.buffer(s.output)->dtype;
  if ((t != DType::f32 && t != DType::f16 && t != DType::bf16) || plan_.buffer(x)->dtype != t ||
      plan_.buffer(w)->dtype != t)
    return false;
  const auto& ws = type(w).shape;
  for (size_t k = 0; k < 4; ++k)
    if (!ws[k].is_static()) return false;
  ir::OpContext ctx = ir::make_context(g_, n);
  // SAME padding of a symbolic image depends on its size; cuDNN takes one fixed padding.
  const bool fixed_pads = !ctx.has_attr("auto_pad") || ctx.attr_string("auto_pad") == "NOTSET" ||
                          ctx.attr_string("auto_pad") == "VALID";
  if (!fixed_pads && !(type(x).shape[2].is_static() && type(x).shape[3].is_static())) return false;
  for (const auto& axis : window_of(g_, n, {ws[2].value(), ws[3].value()}))
    if (axis.pad_begin != axis.pad_end) return false;
  return true;
}

std::optional<Writer::FusedConv> Writer::cudnn_fused(const Stage& s, const Stage* epilogue,
                                                     ValueId written) const {
  const ir::Node& n = g_.node(s.node);
  const Buffer* out = plan_.buffer(written);
  if (n.inputs.size() < 3 || n.inputs[2] == ir::kNoValue || !out) return std::nullopt;
  const DType t = plan_.buffer(s.output)->dtype;
  const Buffer* bias = plan_.buffer(n.inputs[2]);
  if (!bias || bias->slice_of || bias->dtype != t || out->slice_of || out->dtype != t)
    return std::nullopt;
  FusedConv f;
  if (!epilogue) return f;  // conv + bias
  if (written != epilogue->output) return std::nullopt;
  const ir::Node* e = &g_.node(epilogue->node);
  ValueId inner = epilogue->output;
  if (e->op_type == "Relu") {
    f.relu = true;
    inner = e->inputs[0];
    if (inner == s.output) return f;  // relu(conv + bias)
    if (plan_.buffer(inner) || g_.value(inner).producer == ir::kNoNode) return std::nullopt;
    e = &g_.node(g_.value(inner).producer);
  }
  if (e->op_type != "Add" || e->inputs.size() != 2) return std::nullopt;
  const ValueId z = e->inputs[0] == s.output ? e->inputs[1] : e->inputs[0];
  if ((e->inputs[0] == s.output) == (e->inputs[1] == s.output)) return std::nullopt;
  const Buffer* zb = plan_.buffer(z);
  if (!zb || zb->slice_of || zb->dtype != t || !(type(z).shape == type(s.output).shape) ||
      epilogue->in_place_of == z || s.in_place_of == z)
    return std::nullopt;
  f.z = z;
  return f;
}

// The CUDA form after cuDNN: element i of the raw convolution (`raw`, a kernel parameter), plus
// the bias, stored through the epilogue.
std::string Writer::body_conv_finish(const Stage& s) {
  const ir::Node& n = g_.node(s.node);
  ValueId out = s.output;
  Index idx = decompose_value("i", out);
  std::string v = "(float)raw[i]";
  if (n.inputs.size() > 2 && n.inputs[2] != ir::kNoValue)
    v += " + (float)" + elem(n.inputs[2], Index{idx[1]});
  store_output(out, "i", idx, v);
  return numel(out);
}

std::string Writer::cudnn_conv_call(const Stage& s, size_t index, ValueId written,
                                    const std::string& kernels, const std::string& finish,
                                    const std::optional<FusedConv>& fused) {
  uses_cudnn = true;
  const ir::Node& n = g_.node(s.node);
  const ValueId x = n.inputs[0], w = n.inputs[1], out = s.output;
  const auto& ws = type(w).shape;
  auto win = window_of(g_, n, {ws[2].value(), ws[3].value()});
  const size_t o = plan_.buffer_of.at(written);
  const std::string t = storage_type(plan_.buffers[o].dtype);
  const DType dt = plan_.buffer(out)->dtype;
  const std::string raw_type = storage_type(dt);
  // The launches write through the lambda's `out` instead of the stage's buffer, so that the
  // choice can time both forms on scratch memory (the stage may write in place over a value it
  // reads).
  auto redirect = [&](std::string code) {
    const std::string from = fmt::format("(D, p{}", o);
    for (size_t at = code.find(from); at != std::string::npos; at = code.find(from, at + 1))
      if (at + from.size() < code.size() && !std::isdigit(code[at + from.size()]))  // not p{o}7
        code.replace(at, from.size(), "(D, out");
    return code;
  };
  auto dims = [&](ValueId v) {
    return fmt::format("{{(int)({}), (int)({}), (int)({}), (int)({})}}", dim(v, 0), dim(v, 1),
                       dim(v, 2), dim(v, 3));
  };
  const char* cudnn_type = dt == DType::f32   ? "CUDNN_DATA_FLOAT"
                           : dt == DType::f16 ? "CUDNN_DATA_HALF"
                                              : "CUDNN_DATA_BFLOAT16";
  auto indent = [](std::string code) {
    for (size_t at = code.find('\n'); at != std::string::npos; at = code.find('\n', at + 3))
      code.insert(at + 1, "  ");
    return code;
  };
  // The fused form's call: y = act(conv + z + bias) into `out`; none where it does not apply.
  const std::string fused_call =
      fused ? fmt::format("return eqf_cudnn_fused(c, {}, {}, {}, {}, out, st);", ptr(x), ptr(w),
                          fused->z == ir::kNoValue ? "(const void*)0" : ptr(fused->z),
                          ptr(n.inputs[2]))
            : "(void)out, (void)c;\n      return -1;";
  return fmt::format(
      "  {{  // stage {}: {} '{}' in its kernels, or (EQFUSE_CUDNN) cuDNN and a finish kernel{}\n"
      "    {}\n"
      "    auto kernels = [&]({}* out) -> int {{\n      {}\n      return 0;\n    }};\n"
      "#if defined(EQFUSE_CUDNN)\n"
      "    static EqfConvChoices choices;\n"
      "    const EqfConv conv = {{{}, {}, {}, {{{}, {}}}, {{{}, {}}}, {{{}, {}}}, {}, {}, {}}};\n"
      "    auto library = [&]({}* out, const EqfConvChoice* c) -> int {{\n"
      "      void* scratch = eqf_conv_scratch((size_t)({}) * sizeof({}));\n"
      "      if (!scratch || eqf_cudnn_forward(c, {}, {}, scratch, st)) return -1;\n"
      "      const {}* raw = (const {}*)scratch;\n"
      "      {}\n      return 0;\n    }};\n"
      "    auto fused = [&]({}* out, const EqfConvChoice* c) -> int {{\n      {}\n    }};\n"
      "    if (eqf_conv_run({}, &choices, conv, (size_t)({}) * sizeof({}), p{}, st, kernels, "
      "library, fused))\n      return -1;\n"
      "#else\n    if (kernels(p{})) return -1;\n#endif\n  }}\n",
      index, n.op_type, g_.value(out).name,
      !fused                     ? ""
      : fused->relu              ? (fused->z == ir::kNoValue ? ", or cuDNN's relu(conv + bias)"
                                                             : ", or cuDNN's relu(conv + z + bias)")
      : fused->z == ir::kNoValue ? ", or cuDNN's conv + bias"
                                 : ", or cuDNN's conv + z + bias",
      record_event(index), t, indent(redirect(kernels)), dims(x), dims(w), dims(out),
      win[0].pad_begin, win[1].pad_begin, win[0].stride, win[1].stride, win[0].dilation,
      win[1].dilation, ir::make_context(g_, n).attr_int("group"), cudnn_type,
      !fused        ? 0
      : fused->relu ? 2
                    : 1,
      t, numel(out), raw_type, ptr(x), ptr(w), raw_type, raw_type, redirect(finish), t, fused_call,
      index, numel(written), t, o, o);
}

std::string Writer::body_pool(const Stage& s) {
  const ir::Node& n = g_.node(s.node);
  ir::OpContext ctx = ir::make_context(g_, n);
  ValueId x = n.inputs[0], out = s.output;
  size_t sp = rank(x) - 2;
  auto kernel = ctx.attr_ints("kernel_shape");
  auto win = window_of(g_, n, kernel);
  bool is_max = n.op_type == "MaxPool";
  bool include_pad = !is_max && ctx.attr_int("count_include_pad") != 0;
  Index idx = decompose_value("i", out);
  std::string ct = compute_type({type(out).dtype});
  std::string acc = fresh("acc"), cnt = fresh("cnt");
  line(fmt::format("{} {} = {};", ct, acc, is_max ? "(" + ct + ")(-INFINITY)" : "0"));
  line(fmt::format("int64_t {} = 0;", cnt));
  Index xi = {idx[0], idx[1]};
  for (size_t k = 0; k < sp; ++k) {
    std::string kk = fresh("q"), pos = fresh("y");
    open(fmt::format("for (int64_t {} = 0; {} < {}; ++{})", kk, kk, kernel[k], kk));
    line(fmt::format("const int64_t {} = {} * {} - {} + {} * {};", pos, idx[2 + k], win[k].stride,
                     win[k].pad_begin, kk, win[k].dilation));
    if (include_pad)
      line(fmt::format("if ({} >= {} + {}) continue;", pos, dim(x, 2 + k), win[k].pad_end));
    xi.push_back(pos);
  }
  if (include_pad) line(fmt::format("++{};", cnt));
  std::string inside;
  for (size_t k = 0; k < sp; ++k)
    inside +=
        fmt::format("{}{} >= 0 && {} < {}", k ? " && " : "", xi[2 + k], xi[2 + k], dim(x, 2 + k));
  open(fmt::format("if ({})", inside));
  std::string v = elem(x, xi);
  if (is_max)
    line(fmt::format("{} = eqf_max({}, ({}){});", acc, acc, ct, v));
  else
    line(fmt::format("{} += ({}){};", acc, ct, v));
  if (!include_pad) line(fmt::format("++{};", cnt));
  close();
  for (size_t k = 0; k < sp; ++k) close();
  line(is_max ? fmt::format("{}[i] = {};", ptr(out), acc)
              : fmt::format("{}[i] = {} / ({})({} > 0 ? {} : 1);", ptr(out), acc, ct, cnt, cnt));
  return numel(out);
}

std::optional<Writer::LibraryGemm> Writer::library_gemm(const Stage& s) {
  const ir::Node& n = g_.node(s.node);
  Contraction c = contraction(g_, n);
  ValueId out = s.output;
  for (ValueId v : {c.a, c.b, out})
    if (type(v).dtype != DType::f32) return std::nullopt;
  // Buffers: both operands of one type (f32, or f16/bf16 under --precision); the output f32 or
  // the operands' type.
  DType ab = plan_.buffer(c.a)->dtype, ob = plan_.buffer(out)->dtype;
  if (plan_.buffer(c.b)->dtype != ab || (ob != DType::f32 && ob != ab)) return std::nullopt;
  size_t ro = rank(out), ra = rank(c.a), rb = rank(c.b);
  if (ra < 2 || rb < 2) return std::nullopt;
  LibraryGemm g;
  g.operand_type = ab;
  g.out_type = ob;
  g.m = dim(out, ro - 2);
  g.n = dim(out, ro - 1);
  g.k = c.gemm ? dim(c.a, c.trans_a ? 0 : 1) : dim(c.a, ra - 1);
  // Batch: every batch dim of an operand equals the output's, or the operand has none that is
  // not 1 (it is shared by the whole batch, stride 0).
  g.batch = "1";
  for (size_t k = 0; k + 2 < ro; ++k) g.batch = imul(g.batch, dim(out, k));
  auto stride_of = [&](ValueId v, const std::string& matrix) -> std::optional<std::string> {
    size_t r = rank(v), off = ro - r;
    bool all_one = true, all_equal = true;
    for (size_t k = 0; k + 2 < r; ++k) {
      all_one = all_one && dim_is_one(v, k);
      all_equal = all_equal && type(v).shape[k] == type(out).shape[off + k];
    }
    if (all_one) return std::string("0");
    if (all_equal && r == ro) return matrix;
    return std::nullopt;
  };
  auto sa = stride_of(c.a, imul(g.m, g.k)), sb = stride_of(c.b, imul(g.k, g.n));
  if (!sa || !sb) return std::nullopt;
  g.stride_a = *sa;
  g.stride_b = *sb;
  // A batch of row-major A's against one B is one product of the stacked rows.
  if (g.batch != "1" && g.stride_b == "0" && g.stride_a != "0" && !c.trans_a) {
    g.m = imul(g.batch, g.m);
    g.batch = "1";
    g.stride_a = "0";
  }
  g.trans_a = c.trans_a;
  g.trans_b = c.trans_b;
  g.lda = c.trans_a ? g.m : g.k;  // row-major leading dims
  g.ldb = c.trans_b ? g.k : g.n;
  g.a = ptr(c.a);
  g.b = ptr(c.b);
  g.out = ptr(out);
  g.alpha = literal(c.alpha, "float");
  used_.clear();
  return g;
}

std::string cuda_data_type(DType t) {
  return t == DType::bf16 ? "CUDA_R_16BF" : t == DType::f16 ? "CUDA_R_16F" : "CUDA_R_32F";
}

std::string Writer::cublas_expression(const LibraryGemm& g) const {
  // Row-major C = A B is column-major C^T = B^T A^T: cuBLAS gets B first. f32 operands go to
  // SGEMM; 16-bit ones (--precision) to GemmEx, accumulating in f32 on tensor cores.
  if (hosted_)  // EqfHost::gemm, types as ONNX codes
    return fmt::format(
        "H->gemm(H->ctx, {}, {}, n, m, k, alpha, {}, {}, (int64_t)({}), (int64_t)({}), {}, {}, "
        "(int64_t)({}), (int64_t)({}), {}, {}, n, m * n, batch)",
        int(g.trans_b), int(g.trans_a), g.b, ir::onnx_dtype_code(g.operand_type), g.ldb, g.stride_b,
        g.a, ir::onnx_dtype_code(g.operand_type), g.lda, g.stride_a, g.out,
        ir::onnx_dtype_code(g.out_type));
  if (g.operand_type == DType::f32)
    return fmt::format(
        "cublasSgemmStridedBatched(eqf_cublas(st), {}, {}, (int)n, (int)m, (int)k, &alpha, {}, "
        "(int)({}), (long long)({}), {}, (int)({}), (long long)({}), &beta, {}, (int)n, (long "
        "long)(m * n), (int)batch) != CUBLAS_STATUS_SUCCESS",
        g.trans_b ? "CUBLAS_OP_T" : "CUBLAS_OP_N", g.trans_a ? "CUBLAS_OP_T" : "CUBLAS_OP_N", g.b,
        g.ldb, g.stride_b, g.a, g.lda, g.stride_a, g.out);
  return fmt::format(
      "cublasGemmStridedBatchedEx(eqf_cublas(st), {}, {}, (int)n, (int)m, (int)k, &alpha, {}, "
      "{}, (int)({}), (long long)({}), {}, {}, (int)({}), (long long)({}), &beta, {}, {}, "
      "(int)n, (long long)(m * n), (int)batch, CUBLAS_COMPUTE_32F, CUBLAS_GEMM_DEFAULT) != "
      "CUBLAS_STATUS_SUCCESS",
      g.trans_b ? "CUBLAS_OP_T" : "CUBLAS_OP_N", g.trans_a ? "CUBLAS_OP_T" : "CUBLAS_OP_N", g.b,
      cuda_data_type(g.operand_type), g.ldb, g.stride_b, g.a, cuda_data_type(g.operand_type), g.lda,
      g.stride_a, g.out, cuda_data_type(g.out_type));
}

std::string Writer::cublas_call(const Stage& s, size_t index, const LibraryGemm& g) {
  const ir::Node& n = g_.node(s.node);
  return fmt::format(
      "  {{  // stage {}: {} '{}' as cuBLAS {} (strided batched)\n"
      "    {}\n"
      "    const float alpha = {}, beta = 0.0f;\n"
      "    (void)beta;\n"
      "    const int64_t m = {}, n = {}, k = {}, batch = {};\n"
      "    if (m > 0 && n > 0 && batch > 0 &&\n"
      "        {})\n"
      "      return -1;\n  }}\n",
      index, n.op_type, g_.value(s.output).name, g.operand_type == DType::f32 ? "SGEMM" : "GemmEx",
      record_event(index), g.alpha, g.m, g.n, g.k, g.batch, cublas_expression(g));
}

std::optional<Writer::LtEpilogue> Writer::cublaslt_epilogue(const Stage& s, size_t index) const {
  if (target_ != Target::Cuda || hosted_) return std::nullopt;
  const Contraction c = contraction(g_, g_.node(s.node));
  const Buffer* out = plan_.buffer(s.output);
  const DType t = out->dtype;
  const ir::Shape& shape = type(s.output).shape;
  if (shape.rank() == 0) return std::nullopt;
  // A stored value cuBLASLt may read: one element per column of the product (its bias), or the
  // product's shape (its C).
  auto stored = [&](ValueId v) {
    const Buffer* b = plan_.buffer(v);
    return b && !b->slice_of && b->dtype == t;
  };
  auto is_bias = [&](ValueId v) {
    const ir::Shape& vs = type(v).shape;
    if (!stored(v) || vs.rank() == 0 || !(vs.dims().back() == shape.dims().back())) return false;
    for (size_t k = 0; k + 1 < vs.rank(); ++k)
      if (!dim_is_one(v, k)) return false;
    return true;
  };
  auto is_matrix = [&](ValueId v) { return stored(v) && type(v).shape == shape; };
  LtEpilogue e;
  if (c.c != ir::kNoValue && c.beta != 0) {  // the Gemm's own beta C
    if (is_bias(c.c) && c.beta == 1)
      e.bias = c.c;
    else if (is_matrix(c.c))
      e.c = c.c, e.beta = c.beta;
    else
      return std::nullopt;
  }
  // The pointwise stage after the product, where it computes act(product + terms): an Add tree
  // over the product, at most one bias and at most one matrix, under nothing or a Relu.
  if (const Stage* next = epilogue_after(index)) {
    LtEpilogue m = e;
    int products = 0;
    std::function<bool(ValueId)> terms = [&](ValueId v) -> bool {
      if (v == s.output) return ++products == 1;
      if (plan_.buffer(v)) {
        if (m.bias == ir::kNoValue && is_bias(v)) return m.bias = v, true;
        if (m.c == ir::kNoValue && is_matrix(v)) return m.c = v, m.beta = 1, true;
        return false;
      }
      const ir::NodeId p = g_.value(v).producer;
      if (p == ir::kNoNode || g_.node(p).op_type != "Add" || g_.node(p).inputs.size() != 2)
        return false;
      return terms(g_.node(p).inputs[0]) && terms(g_.node(p).inputs[1]);
    };
    const ir::Node& top = g_.node(next->node);
    ValueId sum = next->output;
    bool ok = stored(next->output) && written_buffer(next->output) == next->output &&
              type(next->output).shape == shape;
    if (ok && top.op_type == "Relu") {
      m.relu = true;
      sum = top.inputs[0];
    } else if (ok && top.op_type != "Add") {
      ok = false;
    }
    if (ok && sum == next->output) {  // the stage's own Add
      ok = top.inputs.size() == 2 && terms(top.inputs[0]) && terms(top.inputs[1]);
    } else if (ok) {
      ok = terms(sum);
    }
    if (ok && products == 1) {
      m.merged = next;
      e = m;
    }
  }
  if (!e.merged && e.bias == ir::kNoValue && e.c == ir::kNoValue) return std::nullopt;
  return e;
}

std::string Writer::cublaslt_call(const Stage& s, size_t index, const LibraryGemm& g,
                                  const LtEpilogue& e) {
  const ir::Node& n = g_.node(s.node);
  const char* epilogue = e.bias != ir::kNoValue
                             ? (e.relu ? "CUBLASLT_EPILOGUE_RELU_BIAS" : "CUBLASLT_EPILOGUE_BIAS")
                         : e.relu ? "CUBLASLT_EPILOGUE_RELU"
                                  : "CUBLASLT_EPILOGUE_DEFAULT";
  std::string what;
  if (e.c != ir::kNoValue)
    what += e.beta == 1 ? fmt::format(" + '{}'", g_.value(e.c).name)
                        : fmt::format(" + {} * '{}'", e.beta, g_.value(e.c).name);
  if (e.bias != ir::kNoValue) what += fmt::format(" + bias '{}'", g_.value(e.bias).name);
  if (e.relu)
    what = "relu(product" + what + ")";
  else
    what = "product" + what;
  if (e.merged)
    what += fmt::format(", stage {}'s {} -> '{}'", index + 1, g_.node(e.merged->node).op_type,
                        g_.value(e.merged->output).name);
  const std::string c = e.c != ir::kNoValue ? ptr(e.c) : "0";
  const std::string bias = e.bias != ir::kNoValue ? ptr(e.bias) : "0";
  const std::string d = ptr(e.merged ? e.merged->output : s.output);  // D
  used_.clear();
  // Column-major, as for cuBLAS: D^T = B^T A^T, the bias one element per row of D^T.
  return fmt::format(
      "  int eqf_unfused_s{} = 0;  // 1: cuBLASLt took no algorithm; cuBLAS, then the kernels\n"
      "  {{  // stage {}: {} '{}' as cuBLASLt: {}\n"
      "    {}\n"
      "    const float alpha = {}, beta = 0.0f;\n"
      "    const int64_t m = {}, n = {}, k = {}, batch = {};\n"
      "    static EqfLtChoices lt;\n"
      "    if (m > 0 && n > 0 && batch > 0) {{\n"
      "      const int r = eqf_lt_gemm(&lt, st, {}, {}, n, m, k, alpha, {}, (int64_t)({}), "
      "(long long)({}), {}, (int64_t)({}), (long long)({}), {}, {}, {}, {}, {}, batch, {}, {});\n"
      "      if (r < 0) return -1;\n"
      "      if (r > 0) {{\n"
      "        eqf_unfused_s{} = 1;\n"
      "        if ({}) return -1;\n"
      "      }}\n"
      "    }}\n"
      "  }}\n",
      index, index, n.op_type, g_.value(s.output).name, what, record_event(index), g.alpha, g.m,
      g.n, g.k, g.batch, int(g.trans_b), int(g.trans_a), g.b, g.ldb, g.stride_b, g.a, g.lda,
      g.stride_a, cuda_data_type(g.operand_type), literal(e.beta, "float"), c, d,
      cuda_data_type(g.out_type), bias, epilogue, index, cublas_expression(g));
}

std::string Writer::cblas_call(const Stage& s, size_t index) {
  auto g = library_gemm(s);
  if (!g || g->operand_type != DType::f32 || g->out_type != DType::f32) return "";
  const ir::Node& n = g_.node(s.node);
  return fmt::format(
      "  {{  // stage {}: {} '{}' as CBLAS SGEMM, one call per batch entry\n"
      "    const int64_t m = {}, n = {}, k = {}, batch = {};\n"
      "    for (int64_t b = 0; b < batch && m > 0 && n > 0; ++b)\n"
      "      cblas_sgemm(CblasRowMajor, {}, {}, (int)m, (int)n, (int)k, {}, {} + b * ({}), "
      "(int)({}), {} + b * ({}), (int)({}), 0.0f, {} + b * m * n, (int)n);\n  }}\n",
      index, n.op_type, g_.value(s.output).name, g->m, g->n, g->k, g->batch,
      g->trans_a ? "CblasTrans" : "CblasNoTrans", g->trans_b ? "CblasTrans" : "CblasNoTrans",
      g->alpha, g->a, g->stride_a, g->lda, g->b, g->stride_b, g->ldb, g->out);
}

std::string Writer::body_gemm_epilogue(const Stage& s) {
  Contraction c = contraction(g_, g_.node(s.node));
  ValueId out = s.output;
  Index idx = decompose_value("i", out);
  std::string cv = elem(c.c, broadcast_index(c.c, idx));
  line(fmt::format("{}[i] = {}[i] + {} * (float){};", ptr(out), ptr(out), literal(c.beta, "float"),
                   cv));
  return numel(out);
}

Writer::Parameters Writer::parameters(ValueId output) const {
  std::vector<ValueId> params = {output};
  for (ValueId v : used_)
    if (v != output) params.push_back(v);
  Parameters r{"EqfDims D", "D", "&D"};
  for (ValueId v : params) {
    std::string t = buffer_type(v);
    std::string p = fmt::format("p{}", plan_.buffer_of.at(v));
    // A stage writing in place over one of its operands: the two pointers alias.
    const char* restrict = in_place_ && (v == output || v == *in_place_) ? "" : " __restrict__";
    r.signature += v == output ? fmt::format(", {}*{} {}", t, restrict, p)
                               : fmt::format(", const {}*{} {}", t, restrict, p);
    r.args += ", " + p;
    r.addresses += ", &" + p;
  }
  return r;
}

std::string Writer::dims_prologue() const {
  std::string dims = "  (void)D;\n";
  for (size_t k = 0; k < plan_.dims.size(); ++k)
    dims += fmt::format("  const int64_t d{} = D.d[{}];\n  (void)d{};\n", k, k, k);
  return dims;
}

std::string Writer::cpu_function(const std::string& name, const std::string& head, ValueId output,
                                 const std::string& items, const std::string& work,
                                 std::string& functions) {
  std::string body = std::move(out_);
  used_.insert(output);
  Parameters params = parameters(output);
  functions += head + fmt::format("static void {}({}) {{\n{}  const int64_t n = {};\n", name,
                                  params.signature, dims_prologue(), items);
  functions += std::string("#pragma omp parallel for schedule(static) if (n > 1 && n * ") + work +
               " >= 32768)\n";
  functions += "  for (int64_t i = 0; i < n; ++i) {\n" + body + "  }\n}\n\n";
  return params.args;
}

void Writer::begin_body() {
  row_work_.clear();
  out_.clear();
  used_.clear();
  scopes_.clear();
  scopes_.emplace_back();
  counter_ = 0;
  depth_ = 2;
}

void Writer::stage(size_t index, std::string& functions, std::string& calls) {
  const Stage& s = plan_.stages[index];
  // Printed inside the contraction before it, or a Concat its producers wrote.
  if (lt_fallback_ == index) {  // computed by the cuBLASLt call before it, else its kernel
    lt_fallback_.reset();
    std::string own;
    stage(index, functions, own);
    calls += fmt::format("  if (eqf_unfused_s{}) {{\n{}  }} else {{\n    {}\n  }}\n", index - 1,
                         own, target_ == Target::Cuda ? record_event(index) : "");
    return;
  }
  if (merged_stage_ == index || s.written_by_producers) {
    if (merged_stage_ == index) merged_stage_.reset();
    if (s.written_by_producers)
      functions += fmt::format("// stage {}: Concat -> '{}': its producers wrote their slices\n\n",
                               index, g_.value(s.output).name);
    if (target_ == Target::Cuda) calls += "  " + record_event(index) + "\n";
    return;
  }
  begin_body();
  in_place_ = s.in_place_of;
  std::string items;
  bool rows_form = false;
  warp_rows_ =
      target_ == Target::Cuda && (s.kind == StageKind::Softmax || s.kind == StageKind::LayerNorm);
  block_rows_ = false;  // row_passes decides
  // A thread block per item (its threads share tiles in shared memory).
  const std::vector<ConvTile> conv_tiles = conv_gemm_tiles(s);
  block_items_ = target_ == Target::Cuda && (s.kind == StageKind::Attention || !conv_tiles.empty());
  const bool contraction_stage = s.kind == StageKind::MatMul || s.kind == StageKind::Gemm;
  std::string library;
  std::optional<LtEpilogue> lt;
  if (target_ == Target::Cuda && contraction_stage) {
    if (auto g = library_gemm(s)) {
      lt = cublaslt_epilogue(s, index);
      library = lt ? cublaslt_call(s, index, *g, *lt) : cublas_call(s, index, *g);
      uses_cublaslt = uses_cublaslt || lt;
      if (lt && lt->merged) lt_fallback_ = index + 1;
    }
  }
  // CUDA pointwise stages take a group of 4 consecutive elements per thread, so that where the
  // stage reads or writes a value at its own element (`p[i]`), the compiler makes one 128-bit load
  // or store of the four: every buffer is 16-byte aligned (the arena's slots and the weights'
  // offsets by the plan; their bases and the caller's inputs and outputs by the run function's
  // check).
  const bool groups_of_4 = target_ == Target::Cuda && s.kind == StageKind::Pointwise &&
                           library.empty() && !plan_.buffer(s.output)->slice_of;
  group4_ = groups_of_4;
  group_loads_.clear();
  // A contraction in loops of our own computes its epilogue where it stores.
  const Stage* epilogue = library.empty() ? epilogue_after(index) : nullptr;
  // The C++ twin keeps its own loops and, under EQFUSE_CBLAS (cpu_backend.h with
  // EQFUSE_BLAS=1; a written tree's -DEQFUSE_CBLAS=ON), calls CBLAS instead: each build
  // compiles only the functions its form calls.
  std::string blas_calls, blas_functions;
  if (target_ == Target::Cpu && contraction_stage) {
    blas_calls = cblas_call(s, index);
    uses_cblas = uses_cblas || !blas_calls.empty();
    Contraction c = contraction(g_, g_.node(s.node));
    if (!blas_calls.empty() && c.c != ir::kNoValue && c.beta != 0) {
      std::string epilogue_items = body_gemm_epilogue(s);  // out += beta * C after the call
      std::string args =
          cpu_function(fmt::format("s{}e", index),
                       fmt::format("// stage {}: the Gemm epilogue after CBLAS\n", index), s.output,
                       epilogue_items, "1", blas_functions);
      blas_calls += fmt::format("  s{}e({});\n", index, args);
    }
    // Under CBLAS the epilogue stays a stage of its own.
    if (!blas_calls.empty() && epilogue) stage(index + 1, blas_functions, blas_calls);
    begin_body();
    in_place_ = s.in_place_of;
  }
  epilogue_ = epilogue;
  if (!library.empty()) {
    uses_cublas = true;
    calls += library;
    Contraction c = contraction(g_, g_.node(s.node));
    if (c.c == ir::kNoValue || c.beta == 0) return;
    items = body_gemm_epilogue(s);  // out += beta * C, a kernel after the library call
  } else {
    switch (s.kind) {
      case StageKind::Pointwise:
        items = body_pointwise(s);
        break;
      case StageKind::Reduce:
        items = body_reduce(s);
        break;
      case StageKind::Softmax:
        items = body_softmax(s);
        break;
      case StageKind::LayerNorm:
        items = body_layernorm(s);
        break;
      case StageKind::MatMul:
      case StageKind::Gemm: {
        const ir::Node& n = g_.node(s.node);
        rows_form = target_ == Target::Cpu && (s.kind == StageKind::Gemm ||
                                               (rank(n.inputs[0]) >= 2 && rank(n.inputs[1]) >= 2));
        items = rows_form ? body_matmul_rows(s) : body_matmul_element(s);
        break;
      }
      case StageKind::Conv: {
        const ir::Node& n = g_.node(s.node);
        const auto& ws = type(n.inputs[1]).shape;
        rows_form = target_ == Target::Cpu && rank(n.inputs[0]) == 4 && ws[0].is_static() &&
                    ws[2].is_static() && ws[3].is_static();
        items = rows_form             ? body_conv_tiles(s)
                : !conv_tiles.empty() ? body_conv_gemm(s, conv_tiles[0])
                                      : body_conv(s);
        break;
      }
      case StageKind::Pool:
        items = body_pool(s);
        break;
      case StageKind::Attention:
        items = body_attention(s);
        break;
    }
  }
  const ir::Value& ov = g_.value(s.output);
  std::string what = s.node == ir::kNoNode ? "copy" : g_.node(s.node).op_type;
  std::string head = fmt::format(
      "// stage {}: {} {} -> '{}' {}{}\n", index, stage_kind_name(s.kind), what, ov.name,
      ov.type.str(),
      s.in_place_of ? fmt::format(", in place over '{}'", g_.value(*s.in_place_of).name) : "");
  // With its epilogue, the stage writes the epilogue's value; the contraction's stays in
  // registers.
  const ValueId written = written_buffer(epilogue ? epilogue->output : s.output);
  if (epilogue) {
    head += fmt::format("//   with stage {}'s epilogue {} -> '{}' where it stores\n", index + 1,
                        g_.node(epilogue->node).op_type, g_.value(epilogue->output).name);
    merged_stage_ = index + 1;
  }
  if (written != (epilogue ? epilogue->output : s.output))
    head += fmt::format("//   into its slice of Concat '{}'\n", g_.value(written).name);
  epilogue_ = nullptr;
  std::string name = fmt::format("s{}", index);
  if (target_ == Target::Cpu) {
    std::string own;
    std::string args = cpu_function(name, head, written, items,
                                    !row_work_.empty()               ? row_work_
                                    : s.kind != StageKind::Pointwise ? "64"
                                                                     : "1",
                                    own);
    std::string call = fmt::format("  {}({});\n", name, args);
    if (blas_calls.empty()) {
      functions += own;
      calls += call;
    } else {
      functions += "#if defined(EQFUSE_CBLAS)\n" + blas_functions + "#else\n" + own + "#endif\n";
      calls += "#if defined(EQFUSE_CBLAS)\n" + blas_calls + "#else\n" + call + "#endif\n";
    }
    return;
  }
  // Where the element count may not be a multiple of 4, the last group is partial: it loads,
  // computes and stores element by element, only the elements that exist.
  const bool partial_groups = groups_of_4 && !whole_groups_of_4(s.output);
  // cuDNN's form of the convolution: its finish kernel (bias, epilogue) after the library call,
  // printed after the stage's own kernels.
  const bool cudnn = cudnn_conv(s);
  auto finish_launch = [&] {
    begin_body();
    epilogue_ = epilogue;
    std::string finish_items = body_conv_finish(s);
    epilogue_ = nullptr;
    raw_param_ = buffer_type(s.output);
    block_items_ = false;  // a thread per element
    std::string fn;
    std::string launch = cuda_kernel(name + "_finish", head, written, finish_items, false, fn);
    functions += "#if defined(EQFUSE_CUDNN)\n" + fn + "#endif\n\n";
    return fmt::format("{{\n        const int64_t n = {};\n        {}\n      }}", finish_items,
                       launch);
  };
  if (conv_tiles.size() <= 1) {
    std::string launch = cuda_kernel(name, head, written, items, partial_groups, functions);
    if (cudnn) {
      std::string kernels = fmt::format("const int64_t n = {};\n      {}", items, launch);
      calls += cudnn_conv_call(s, index, written, kernels, finish_launch(),
                               cudnn_fused(s, epilogue, written));
      return;
    }
    calls += fmt::format("{}  {{\n    {}const int64_t n = {};\n    {}\n  }}\n",
                         lt ? fmt::format("  if (eqf_unfused_s{})\n", index) : "",
                         library.empty() ? record_event(index) + "\n    " : "", items, launch);
    return;
  }
  // A convolution in the largest tiles that fill the GPU: a kernel for each size of tile.
  std::string kernels;
  for (size_t t = 0; t < conv_tiles.size(); ++t) {
    std::string tiles = items;
    if (t > 0) {
      begin_body();
      epilogue_ = epilogue;
      tiles = body_conv_gemm(s, conv_tiles[t]);
      epilogue_ = nullptr;
    }
    std::string launch =
        cuda_kernel(t == 0 ? name : fmt::format("{}_{}x{}", name, conv_tiles[t].m, conv_tiles[t].p),
                    head, written, tiles, false, functions);
    const bool last = t + 1 == conv_tiles.size();
    kernels +=
        fmt::format("{}{}{{\n      const int64_t n = {};\n      {}\n    }}", t > 0 ? " else " : "",
                    last ? "" : fmt::format("if ({} >= {}) ", tiles, kConvFullWave), tiles, launch);
  }
  if (cudnn)
    calls += cudnn_conv_call(s, index, written, kernels, finish_launch(),
                             cudnn_fused(s, epilogue, written));
  else
    calls += "  {\n    " + record_event(index) + "\n    " + kernels + "\n  }\n";
}

std::string Writer::cuda_kernel(const std::string& name, const std::string& head, ValueId written,
                                std::string& items, bool partial_groups, std::string& functions) {
  const bool groups_of_4 = group4_;
  const bool block_items = block_items_;
  const int threads_per_item = block_items ? 256 : warp_rows_ ? 32 : 1;
  std::string body = std::move(out_);
  used_.insert(written);
  Parameters params = parameters(written);
  if (!raw_param_.empty()) {
    params.signature += ", const " + raw_param_ + "* __restrict__ raw";
    params.args += ", raw";
    params.addresses += ", &raw";
    raw_param_.clear();
  }
  std::string dims = dims_prologue();
  if (groups_of_4) {
    if (partial_groups) dims += "  const int64_t elements = " + items + ";\n";
    items = partial_groups ? "(" + items + " + 3) / 4" : "(" + items + ") / 4";
    for (ValueId v : used_)
      if (plan_.buffer(v)) {
        std::string p = fmt::format("p{}", plan_.buffer_of.at(v));
        dims += fmt::format("  {} = (decltype({}))__builtin_assume_aligned({}, 16);\n", p, p, p);
      }
    aligned_vectors = true;
  }
  {
    functions +=
        head + fmt::format("{}__global__ void {}({}) {{\n{}  const int64_t n = {};\n",
                           hosted_ ? "extern \"C\" " : "", name, params.signature, dims, items);
    if (groups_of_4) {  // four consecutive elements per thread
      std::string indented;
      for (size_t at = 0; at < body.size();) {
        size_t end = body.find('\n', at);
        indented += "  " + body.substr(at, end - at + 1);
        at = end + 1;
      }
      std::string loads, store;
      if (partial_groups) loads += "    const bool whole = t * 4 + 4 <= elements;\n";
      // `pad`: the indentation of the statements, deeper inside the partial groups' branches.
      const std::string pad = partial_groups ? "      " : "    ";
      // A vector's elements: .x .. .w of a float4, .v[0] .. .v[3] of the 16-bit vectors, as
      // "e0 = x[0], e1 = x[1], ..." with `pattern` "{lane} = x[{k}]" ({lane}, {k} filled).
      auto each_lane = [](const std::string& vec, const std::string& var,
                          const std::string& pattern) {
        std::string out;
        for (int k = 0; k < 4; ++k) {
          const std::string lane = vec == "float4" ? fmt::format("{}.{}", var, "xyzw"[k])
                                                   : fmt::format("{}.v[{}]", var, k);
          out += fmt::format(fmt::runtime(pattern), fmt::arg("lane", lane), fmt::arg("k", k));
          out += k < 3 ? ", " : ";\n";
        }
        return out;
      };
      for (size_t b : group_loads_) {
        const std::string vec = group_vector(plan_.buffers[b].dtype);
        std::string vector_load =
            fmt::format("{}const {} g{}v = *(const {}*)(p{} + t * 4);\n", pad, vec, b, vec, b) +
            pad +
            each_lane(vec, fmt::format("g{}v", b), fmt::format("g{}[{{k}}] = (float){{lane}}", b));
        loads += fmt::format("    float g{}[4];\n", b);
        if (partial_groups)
          loads += fmt::format(
              "    if (whole) {{\n{}    }} else {{\n"
              "      for (int k = 0; k < 4; ++k) g{}[k] = t * 4 + k < elements ? "
              "(float)p{}[t * 4 + k] : 0.0f;\n    }}\n",
              vector_load, b, b);
        else
          loads += vector_load;
      }
      const bool grouped_store = indented.find("go[k] = ") != std::string::npos;
      if (grouped_store) {
        const size_t o = plan_.buffer_of.at(written);
        const std::string vec = group_vector(plan_.buffers[o].dtype);
        loads += "    float go[4];\n";
        store = fmt::format("{}{}{} gov;\n{}{}{}*({}*)(p{} + t * 4) = gov;\n{}",
                            partial_groups ? "    if (whole) {\n" : "", pad, vec, pad,
                            each_lane(vec, "gov", "{lane} = go[{k}]"), pad, vec, o,
                            partial_groups
                                ? fmt::format("    }} else {{\n      for (int k = 0; k < 4; ++k)\n"
                                              "        if (t * 4 + k < elements) p{}[t * 4 + k] = "
                                              "go[k];\n    }}\n",
                                              o)
                                : "");
      }
      functions +=
          "  for (int64_t t = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; t < n;\n"
          "       t += (int64_t)gridDim.x * blockDim.x) {\n" +
          loads +
          "#pragma unroll\n"
          "    for (int k = 0; k < 4; ++k) {\n"
          "      const int64_t i = t * 4 + k;\n" +
          (partial_groups ? "      if (!whole && i >= elements) break;\n" : "") + indented +
          "    }\n" + store + "  }\n}\n\n";
    } else if (block_items)  // a block per item; the loop bound is the same for all its threads
      functions +=
          "  const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;\n  (void)lane;\n  "
          "(void)warp;\n"
          "  for (int64_t i = blockIdx.x; i < n; i += gridDim.x) {\n" +
          body + "  }\n}\n\n";
    else if (warp_rows_)  // a warp per item; the loop bound is the same for the warp's 32 lanes
      functions +=
          "  const int lane = threadIdx.x & 31;\n"
          "  for (int64_t i = (blockIdx.x * (int64_t)blockDim.x + threadIdx.x) / 32; i < n;\n"
          "       i += (int64_t)gridDim.x * blockDim.x / 32) {\n" +
          body + "  }\n}\n\n";
    else
      functions +=
          "  for (int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; i < n;\n"
          "       i += (int64_t)gridDim.x * blockDim.x) {\n" +
          body + "  }\n}\n\n";
    std::string launch =
        hosted_ ? fmt::format(
                      "if (n > 0) {{\n      void* a[] = {{{}}};\n"
                      "      if (H->launch(H->ctx, \"{}\", eqf_grid(n * {}), 256, a)) return -1;\n"
                      "    }}",
                      params.addresses, name, threads_per_item)
                : fmt::format("if (n > 0) {}<<<eqf_grid(n * {}), 256, 0, st>>>({});", name,
                              threads_per_item, params.args);
    return launch;
  }
}

// Tensor cores for 16-bit attention (body_attention_mma): D += A·B for one warp, mma.sync's
// m16n8k16 shape with f32 accumulators; A (16 x 16) and B (16 x 8) hold two 16-bit elements per
// register, the lower index in the low half, laid out across the lanes as PTX's ISA states for
// that shape. The CPU emulator of the tests (EQF_CUDA_EMULATOR) computes the same product from
// those layouts.
constexpr const char* kMmaHelpers = R"eqf(#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ < 800
#error "eqfuse: 16-bit attention and convolution tiles use mma.sync.m16n8k16 (sm_80 or newer): write the tree with eqfuse compile --arch for this GPU"
#endif
__device__ __forceinline__ uint32_t eqf_pack_bf16(float lo, float hi) {
  return (uint32_t)eqf_float_to_bf16(lo) | (uint32_t)eqf_float_to_bf16(hi) << 16;
}
__device__ __forceinline__ uint32_t eqf_pack_f16(float lo, float hi) {
  return (uint32_t)eqf_float_to_f16(lo) | (uint32_t)eqf_float_to_f16(hi) << 16;
}
#if defined(EQF_CUDA_EMULATOR)
#define eqf_mma_bf16(d, a, b) eqf_emu::mma_m16n8k16(d, a, b, false)
#define eqf_mma_f16(d, a, b) eqf_emu::mma_m16n8k16(d, a, b, true)
#else
__device__ __forceinline__ void eqf_mma_bf16(float* d, const uint32_t* a, const uint32_t* b) {
  asm volatile(
      "mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32 {%0, %1, %2, %3}, {%4, %5, %6, %7}, "
      "{%8, %9}, {%0, %1, %2, %3};\n"
      : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3])
      : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b[0]), "r"(b[1]));
}
__device__ __forceinline__ void eqf_mma_f16(float* d, const uint32_t* a, const uint32_t* b) {
  asm volatile(
      "mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32 {%0, %1, %2, %3}, {%4, %5, %6, %7}, "
      "{%8, %9}, {%0, %1, %2, %3};\n"
      : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3])
      : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b[0]), "r"(b[1]));
}
#endif

)eqf";

// The table through which hosted CUDA host code reaches the GPU: codegen::EqfHost
// (codegen/cuda_backend.h), which says what each entry does; the two must agree.
constexpr const char* kHostTable = R"(
struct EqfHost {
  void* ctx;
  int (*launch)(void* ctx, const char* kernel, unsigned grid, unsigned block, void** args);
  int (*gemm)(void* ctx, int trans_a, int trans_b, int64_t m, int64_t n, int64_t k, float alpha,
              const void* a, int a_type, int64_t lda, int64_t stride_a, const void* b,
              int b_type, int64_t ldb, int64_t stride_b, void* c, int c_type, int64_t ldc,
              int64_t stride_c, int64_t batch);
  void (*record)(void* ctx, int stage);
};

)";

// Host code of the products with an epilogue in cuBLASLt (Writer::cublaslt_call): one handle and
// workspace per process, as the cuBLAS handle is (one run at a time); each call site keeps its
// descriptors and the heuristic's first algorithm for up to 4 shapes. f32 products compute in
// f32 (CUBLAS_COMPUTE_32F: no TF32, as everywhere in eqfuse), 16-bit ones accumulate in f32.
// EQFUSE_CUBLASLT=0 (read once per process) leaves every product to cuBLAS and the kernels.
constexpr const char* kCublasLtRuntime = R"(#include <cublasLt.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

struct EqfLtChoice {
  int64_t shape[8];  // m, n, k, batch, and the alignments of A, B, C and D in bytes
  int state;         // 0 none yet, 1 ready, 2 cuBLASLt took no algorithm or failed
  cublasLtMatmulDesc_t op;
  cublasLtMatrixLayout_t a, b, d;
  cublasLtMatmulAlgo_t algo;
  size_t workspace;
};
struct EqfLtChoices {
  EqfLtChoice at[4];
  int next;
};
static const size_t kEqfLtWorkspace = (size_t)32 << 20;

static cublasLtHandle_t eqf_cublaslt(void) {
  static cublasLtHandle_t h = 0;
  if (!h) {
    cublasLtHandle_t made = 0;
    if (cublasLtCreate(&made) == CUBLAS_STATUS_SUCCESS) h = made;
  }
  return h;
}
static void* eqf_lt_workspace(void) {
  static void* w = 0;
  if (!w && cudaMalloc(&w, kEqfLtWorkspace) != cudaSuccess) w = 0;
  return w;
}
// EQFUSE_CUBLASLT: 0 off, 1 (the default) on, "strict" on and a product cuBLASLt does not run
// fails the run (the tests use it to know that cuBLASLt ran).
static int eqf_lt_mode(void) {
  static int mode = -1;
  if (mode < 0) {
    const char* v = getenv("EQFUSE_CUBLASLT");
    mode = v && strcmp(v, "0") == 0 ? 0 : v && strcmp(v, "strict") == 0 ? 2 : 1;
  }
  return mode;
}
static int eqf_lt_layout(cublasLtMatrixLayout_t* l, cudaDataType t, int64_t rows, int64_t cols,
                         int64_t ld, int64_t batch, long long stride) {
  const int32_t count = (int32_t)batch;
  const int64_t offset = (int64_t)stride;
  *l = 0;
  return cublasLtMatrixLayoutCreate(l, t, (uint64_t)rows, (uint64_t)cols, ld) !=
             CUBLAS_STATUS_SUCCESS ||
         cublasLtMatrixLayoutSetAttribute(*l, CUBLASLT_MATRIX_LAYOUT_BATCH_COUNT, &count,
                                          sizeof count) != CUBLAS_STATUS_SUCCESS ||
         cublasLtMatrixLayoutSetAttribute(*l, CUBLASLT_MATRIX_LAYOUT_STRIDED_BATCH_OFFSET, &offset,
                                          sizeof offset) != CUBLAS_STATUS_SUCCESS;
}
static void eqf_lt_release(EqfLtChoice* c) {
  if (c->op) cublasLtMatmulDescDestroy(c->op);
  if (c->a) cublasLtMatrixLayoutDestroy(c->a);
  if (c->b) cublasLtMatrixLayoutDestroy(c->b);
  if (c->d) cublasLtMatrixLayoutDestroy(c->d);
  memset(c, 0, sizeof *c);
}
// The descriptors and algorithm of one shape; state 2 where cuBLASLt has none.
// The alignment of `p` in bytes, up to 256 (cuBLASLt's default assumption, which generated
// buffers need not meet: arena slots and weights are 64-byte aligned, inputs and outputs 16).
static uint32_t eqf_lt_alignment(const void* p) {
  uint32_t a = 256;
  while (a > 1 && ((uintptr_t)p & (a - 1))) a >>= 1;
  return a;
}
// The algorithm the heuristic ranks first for these layouts, for pointers of the given
// alignments.
static void eqf_lt_prepare(EqfLtChoice* c, int ta, int tb, int64_t m, int64_t n, int64_t k,
                           cudaDataType ab, int64_t lda, long long sa, int64_t ldb, long long sb,
                           cudaDataType dt, int64_t batch, const void* bias, int epilogue) {
  c->state = 2;
  const int32_t op_a = ta ? CUBLAS_OP_T : CUBLAS_OP_N, op_b = tb ? CUBLAS_OP_T : CUBLAS_OP_N;
  const uint32_t ep = (uint32_t)epilogue;
  cublasLtHandle_t h = eqf_cublaslt();
  if (!h || !eqf_lt_workspace() ||
      cublasLtMatmulDescCreate(&c->op, CUBLAS_COMPUTE_32F, CUDA_R_32F) != CUBLAS_STATUS_SUCCESS ||
      cublasLtMatmulDescSetAttribute(c->op, CUBLASLT_MATMUL_DESC_TRANSA, &op_a, sizeof op_a) !=
          CUBLAS_STATUS_SUCCESS ||
      cublasLtMatmulDescSetAttribute(c->op, CUBLASLT_MATMUL_DESC_TRANSB, &op_b, sizeof op_b) !=
          CUBLAS_STATUS_SUCCESS ||
      cublasLtMatmulDescSetAttribute(c->op, CUBLASLT_MATMUL_DESC_EPILOGUE, &ep, sizeof ep) !=
          CUBLAS_STATUS_SUCCESS ||
      (bias && cublasLtMatmulDescSetAttribute(c->op, CUBLASLT_MATMUL_DESC_BIAS_POINTER, &bias,
                                              sizeof bias) != CUBLAS_STATUS_SUCCESS) ||
      eqf_lt_layout(&c->a, ab, ta ? k : m, ta ? m : k, lda, batch, sa) ||
      eqf_lt_layout(&c->b, ab, tb ? n : k, tb ? k : n, ldb, batch, sb) ||
      eqf_lt_layout(&c->d, dt, m, n, m, batch, (long long)(m * n)))
    return;
  cublasLtMatmulPreference_t pref = 0;
  const uint64_t most = kEqfLtWorkspace;
  cublasLtMatmulHeuristicResult_t found;
  int count = 0;
  const uint32_t align[4] = {(uint32_t)c->shape[4], (uint32_t)c->shape[5], (uint32_t)c->shape[6],
                             (uint32_t)c->shape[7]};
  if (cublasLtMatmulPreferenceCreate(&pref) == CUBLAS_STATUS_SUCCESS &&
      cublasLtMatmulPreferenceSetAttribute(pref, CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES, &most,
                                           sizeof most) == CUBLAS_STATUS_SUCCESS &&
      cublasLtMatmulPreferenceSetAttribute(pref, CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_A_BYTES,
                                           &align[0], sizeof align[0]) == CUBLAS_STATUS_SUCCESS &&
      cublasLtMatmulPreferenceSetAttribute(pref, CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_B_BYTES,
                                           &align[1], sizeof align[1]) == CUBLAS_STATUS_SUCCESS &&
      cublasLtMatmulPreferenceSetAttribute(pref, CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_C_BYTES,
                                           &align[2], sizeof align[2]) == CUBLAS_STATUS_SUCCESS &&
      cublasLtMatmulPreferenceSetAttribute(pref, CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_D_BYTES,
                                           &align[3], sizeof align[3]) == CUBLAS_STATUS_SUCCESS &&
      cublasLtMatmulAlgoGetHeuristic(h, c->op, c->a, c->b, c->d, c->d, pref, 1, &found, &count) ==
          CUBLAS_STATUS_SUCCESS &&
      count > 0) {
    c->algo = found.algo;
    c->workspace = found.workspaceSize;
    c->state = 1;
  }
  if (pref) cublasLtMatmulPreferenceDestroy(pref);
}
// Column-major D = epilogue(alpha op(A) op(B) + beta C + bias), C (read where beta != 0) laid out
// as D, the bias one element per row of D, `epilogue` a cublasLtEpilogue_t. Returns 0 done, or 1
// where the caller runs its other form: cuBLASLt takes no algorithm for the shape, or failed
// (said once on stderr, and the shape keeps the other form), or a new shape arrives while the
// stream is being captured into a CUDA graph (nothing is chosen or allocated inside a graph);
// -1 instead of 1 under EQFUSE_CUBLASLT=strict.
static int eqf_lt_run(EqfLtChoices* cs, cudaStream_t st, int ta, int tb, int64_t m, int64_t n,
                       int64_t k, float alpha, const void* a, int64_t lda, long long sa,
                       const void* b, int64_t ldb, long long sb, cudaDataType ab, float beta,
                       const void* c, void* d, cudaDataType dt, int64_t batch, const void* bias,
                       int epilogue) {
  if (!eqf_lt_mode()) return 1;
  const int64_t shape[8] = {m,
                            n,
                            k,
                            batch,
                            eqf_lt_alignment(a),
                            eqf_lt_alignment(b),
                            eqf_lt_alignment(c ? c : d),
                            eqf_lt_alignment(d)};
  if (bias && eqf_lt_alignment(bias) < 16) return 1;
  EqfLtChoice* ch = 0;
  for (int q = 0; q < 4 && !ch; ++q)
    if (cs->at[q].state && memcmp(cs->at[q].shape, shape, sizeof shape) == 0) ch = &cs->at[q];
  if (!ch) {
    cudaStreamCaptureStatus capturing = cudaStreamCaptureStatusNone;
    if (cudaStreamIsCapturing(st, &capturing) != cudaSuccess ||
        capturing != cudaStreamCaptureStatusNone)
      return 1;
    ch = &cs->at[cs->next];
    cs->next = (cs->next + 1) % 4;
    eqf_lt_release(ch);
    memcpy(ch->shape, shape, sizeof shape);
    eqf_lt_prepare(ch, ta, tb, m, n, k, ab, lda, sa, ldb, sb, dt, batch, bias, epilogue);
  }
  if (ch->state != 1) return 1;
  int status = 0;
  if (bias)
    status = (int)cublasLtMatmulDescSetAttribute(ch->op, CUBLASLT_MATMUL_DESC_BIAS_POINTER, &bias,
                                                 sizeof bias);
  if (status == 0)
    status = (int)cublasLtMatmul(eqf_cublaslt(), ch->op, &alpha, a, ch->a, b, ch->b, &beta,
                                 c ? c : d, ch->d, d, ch->d, &ch->algo, eqf_lt_workspace(),
                                 ch->workspace, st);
  if (status == 0) return 0;
  fprintf(stderr,
          "eqfuse: cuBLASLt failed (status %d) on a %lld x %lld x %lld product; cuBLAS and "
          "the kernels run it instead\n",
          status, (long long)m, (long long)n, (long long)k);
  ch->state = 2;
  return 1;
}
static int eqf_lt_gemm(EqfLtChoices* cs, cudaStream_t st, int ta, int tb, int64_t m, int64_t n,
                       int64_t k, float alpha, const void* a, int64_t lda, long long sa,
                       const void* b, int64_t ldb, long long sb, cudaDataType ab, float beta,
                       const void* c, void* d, cudaDataType dt, int64_t batch, const void* bias,
                       int epilogue) {
  const int r = eqf_lt_run(cs, st, ta, tb, m, n, k, alpha, a, lda, sa, b, ldb, sb, ab, beta, c, d,
                           dt, batch, bias, epilogue);
  return r != 0 && eqf_lt_mode() == 2 ? -1 : r;
}

)";

// The host code of convolutions through cuDNN (printed where a stage may take it; compiled in
// builds with -DEQFUSE_CUDNN). At the first run of each binding of its shape (not while the
// stream captures a graph), a convolution stage times the (up to 3) algorithms cuDNN's
// heuristics rank best, each plus its finish kernel, against its generated kernels, on scratch
// memory, and keeps the fastest for that shape;
// EQFUSE_CONV=kernels or =cudnn (read once per process) forces one, EQFUSE_CONV_REPORT=1 prints
// each choice. f32 convolutions take only FMA algorithms (no TF32, as everywhere in eqfuse); f16
// and bf16 ones tensor cores, accumulating in f32. The cuDNN handle, its workspace and the scratch
// memory are the process's, as the cuBLAS handle is: one run at a time.
constexpr const char* kCudnnRuntime = R"(#if defined(EQFUSE_CUDNN)
#include <cudnn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

// A convolution as cuDNN takes it: NCHW shapes of x, w and y, the window, groups, element type,
// and the stage's fused form: 0 none, 1 y = conv + z + bias, 2 y = relu(conv + z + bias).
struct EqfConv {
  int x[4], w[4], y[4], pad[2], stride[2], dilation[2], groups;
  cudnnDataType_t type;
  int fused;
};
// One binding's choice: 0 none yet, 1 the generated kernels, 2 cuDNN with `algo` and the finish
// kernel, 3 cuDNN's fused convolution with `algo`.
struct EqfConvChoice {
  EqfConv conv;
  int state;
  int fusable;  // conv.fused where cuDNN took the fused form's descriptors, else 0
  cudnnTensorDescriptor_t x, y, bias;
  cudnnFilterDescriptor_t w;
  cudnnConvolutionDescriptor_t desc;
  cudnnActivationDescriptor_t act;
  cudnnConvolutionFwdAlgo_t algo;
  size_t workspace;
};
// A stage's choices for up to 8 bindings (then the oldest is replaced).
struct EqfConvChoices {
  EqfConvChoice at[8];
  int next;
};

static cudnnHandle_t eqf_cudnn(cudaStream_t st) {
  static cudnnHandle_t h = 0;
  if (!h) {
    cudnnHandle_t made = 0;
    if (cudnnCreate(&made) != CUDNN_STATUS_SUCCESS) return 0;
    h = made;
  }
  return cudnnSetStream(h, st) == CUDNN_STATUS_SUCCESS ? h : 0;
}

// Device memory that only grows. An outgrown buffer stays allocated: a captured CUDA graph may
// still name it.
static void* eqf_grow(void** buffer, size_t* have, size_t bytes) {
  if (bytes > *have) {
    void* p = 0;
    if (cudaMalloc(&p, bytes) != cudaSuccess) return 0;
    *buffer = p;
    *have = bytes;
  }
  return *buffer;
}
// cuDNN's raw output, read by the finish kernels.
static void* eqf_conv_scratch(size_t bytes) {
  static void* buffer = 0;
  static size_t have = 0;
  return eqf_grow(&buffer, &have, bytes + 1);
}
static void* eqf_conv_workspace(size_t bytes) {
  static void* buffer = 0;
  static size_t have = 0;
  return eqf_grow(&buffer, &have, bytes + 1);
}

// EQFUSE_CONV: 0 time the forms (unset or "auto"), 1 "kernels", 2 "cudnn" (the fused form
// where the stage has one), 3 "cudnn-unfused" (cuDNN and the finish kernel).
static int eqf_conv_mode(void) {
  const char* m = getenv("EQFUSE_CONV");
  return !m                          ? 0
         : !strcmp(m, "kernels")       ? 1
         : !strcmp(m, "cudnn")         ? 2
         : !strcmp(m, "cudnn-unfused") ? 3
                                       : 0;
}

static void eqf_conv_forget(EqfConvChoice* c) {
  if (c->x) cudnnDestroyTensorDescriptor(c->x);
  if (c->y) cudnnDestroyTensorDescriptor(c->y);
  if (c->bias) cudnnDestroyTensorDescriptor(c->bias);
  if (c->act) cudnnDestroyActivationDescriptor(c->act);
  if (c->w) cudnnDestroyFilterDescriptor(c->w);
  if (c->desc) cudnnDestroyConvolutionDescriptor(c->desc);
  memset(c, 0, sizeof *c);
}

// cuDNN's descriptors of c->conv, and in `candidates` the algorithms its heuristics rank best
// (up to 3; f32: only those without tensor cores) that need at most 1 GiB of workspace; how
// many there are.
static int eqf_cudnn_prepare(EqfConvChoice* c, cudnnConvolutionFwdAlgoPerf_t* candidates,
                             cudaStream_t st) {
  const EqfConv* v = &c->conv;
  cudnnHandle_t h = eqf_cudnn(st);
  if (!h || cudnnCreateTensorDescriptor(&c->x) || cudnnCreateTensorDescriptor(&c->y) ||
      cudnnCreateFilterDescriptor(&c->w) || cudnnCreateConvolutionDescriptor(&c->desc))
    return 0;
  const int f32 = v->type == CUDNN_DATA_FLOAT;
  if (cudnnSetTensor4dDescriptor(c->x, CUDNN_TENSOR_NCHW, v->type, v->x[0], v->x[1], v->x[2],
                                 v->x[3]) ||
      cudnnSetTensor4dDescriptor(c->y, CUDNN_TENSOR_NCHW, v->type, v->y[0], v->y[1], v->y[2],
                                 v->y[3]) ||
      cudnnSetFilter4dDescriptor(c->w, v->type, CUDNN_TENSOR_NCHW, v->w[0], v->w[1], v->w[2],
                                 v->w[3]) ||
      cudnnSetConvolution2dDescriptor(c->desc, v->pad[0], v->pad[1], v->stride[0], v->stride[1],
                                      v->dilation[0], v->dilation[1], CUDNN_CROSS_CORRELATION,
                                      CUDNN_DATA_FLOAT) ||
      cudnnSetConvolutionGroupCount(c->desc, v->groups) ||
      cudnnSetConvolutionMathType(c->desc, f32 ? CUDNN_FMA_MATH : CUDNN_TENSOR_OP_MATH))
    return 0;
  // The fused form's bias (one per output channel, in y's type) and activation; without them
  // the other forms remain. The fused call takes only CUDNN_NOT_PROPAGATE_NAN (as TensorFlow's
  // and PyTorch's fused paths set it): there a NaN reaching the ReLU may come out as 0, where the
  // generated kernels keep it.
  c->fusable =
      v->fused && !cudnnCreateTensorDescriptor(&c->bias) &&
              !cudnnCreateActivationDescriptor(&c->act) &&
              !cudnnSetTensor4dDescriptor(c->bias, CUDNN_TENSOR_NCHW, v->type, 1, v->y[1], 1, 1) &&
              !cudnnSetActivationDescriptor(
                  c->act, v->fused == 2 ? CUDNN_ACTIVATION_RELU : CUDNN_ACTIVATION_IDENTITY,
                  CUDNN_NOT_PROPAGATE_NAN, 0.0)
          ? v->fused
          : 0;
  cudnnConvolutionFwdAlgoPerf_t perf[8];
  int found = 0, kept = 0;
  if (cudnnGetConvolutionForwardAlgorithm_v7(h, c->x, c->w, c->desc, c->y, 8, &found, perf))
    return 0;
  for (int k = 0; k < found && kept < 3; ++k) {
    if (perf[k].status != CUDNN_STATUS_SUCCESS || perf[k].memory > ((size_t)1 << 30)) continue;
    if (f32 && perf[k].mathType != CUDNN_FMA_MATH) continue;
    if (!eqf_conv_workspace(perf[k].memory)) continue;
    candidates[kept++] = perf[k];
  }
  return kept;
}

// Makes `perf`'s algorithm the one c runs.
static int eqf_cudnn_use(EqfConvChoice* c, const cudnnConvolutionFwdAlgoPerf_t* perf) {
  c->algo = perf->algo;
  c->workspace = perf->memory;
  return cudnnSetConvolutionMathType(c->desc, perf->mathType) != CUDNN_STATUS_SUCCESS;
}

static int eqf_cudnn_forward(const EqfConvChoice* c, const void* x, const void* w, void* y,
                             cudaStream_t st) {
  const float one = 1.0f, zero = 0.0f;
  cudnnHandle_t h = eqf_cudnn(st);
  return !h || cudnnConvolutionForward(h, &one, c->x, x, c->w, w, c->desc, c->algo,
                                       eqf_conv_workspace(c->workspace), c->workspace, &zero,
                                       c->y, y) != CUDNN_STATUS_SUCCESS;
}

// y = act(conv(x, w) + z + bias) in one call (z null: none).
static int eqf_cudnn_fused(const EqfConvChoice* c, const void* x, const void* w, const void* z,
                           const void* bias, void* y, cudaStream_t st) {
  const float one = 1.0f, z_scale = z ? 1.0f : 0.0f;
  cudnnHandle_t h = eqf_cudnn(st);
  return !h || cudnnConvolutionBiasActivationForward(
                   h, &one, c->x, x, c->w, w, c->desc, c->algo, eqf_conv_workspace(c->workspace),
                   c->workspace, &z_scale, c->y, z ? z : y, c->bias, bias, c->act, c->y,
                   y) != CUDNN_STATUS_SUCCESS;
}

// Whether the chosen cuDNN form agrees with the generated kernels, each run once into `trial`
// and copied back: max |a - b| at most 1e-3 (f32) or 1e-2 (16 bits) of max |a|. Where it does
// not, it says so and the stage keeps its kernels (EQFUSE_CONV_CHECK=fail: the run fails).
template <typename T, typename K, typename F>
static int eqf_conv_check(int stage, EqfConvChoice* c, T* trial, size_t bytes, K kernels, F form,
                          cudaStream_t st) {
  T* a = (T*)malloc(bytes + 1);
  T* b = (T*)malloc(bytes + 1);
  const int ran = a && b && !kernels(trial) && cudaStreamSynchronize(st) == cudaSuccess &&
                  cudaMemcpy(a, trial, bytes, cudaMemcpyDeviceToHost) == cudaSuccess &&
                  !form(trial) && cudaStreamSynchronize(st) == cudaSuccess &&
                  cudaMemcpy(b, trial, bytes, cudaMemcpyDeviceToHost) == cudaSuccess;
  float scale = 0, error = 0;
  for (size_t i = 0; ran && i < bytes / sizeof(T); ++i) {
    const float u = (float)a[i], v = (float)b[i], d = fabsf(u - v);
    if (u != u && v != v) continue;  // NaN in both
    scale = fmaxf(scale, fabsf(u));
    error = d != d ? INFINITY : fmaxf(error, d);
  }
  free(a);
  free(b);
  if (ran && error <= (c->conv.type == CUDNN_DATA_FLOAT ? 1e-3f : 1e-2f) * scale) return 0;
  fprintf(stderr,
          "eqfuse: stage %d: cuDNN's %s differs from the generated kernels (max error %g, largest "
          "value %g%s): the stage keeps its kernels\n",
          stage, c->state == 3 ? "fused convolution" : "convolution", error, scale,
          ran ? "" : ", a run failed");
  c->state = 1;
  const char* check = getenv("EQFUSE_CONV_CHECK");
  return check && !strcmp(check, "fail") ? -1 : 0;
}

// The least time of 3 runs of `run` after a first, in ms; negative where a run fails.
template <typename F>
static float eqf_conv_time(F run, cudaStream_t st) {
  cudaEvent_t a, b;
  cudaEventCreate(&a);
  cudaEventCreate(&b);
  float best = run() == 0 ? 1e30f : -1.0f;
  for (int r = 0; r < 3 && best >= 0; ++r) {
    cudaEventRecord(a, st);
    const int failed = run();
    cudaEventRecord(b, st);
    cudaEventSynchronize(b);
    float ms = 0;
    cudaEventElapsedTime(&ms, a, b);
    best = failed ? -1.0f : ms < best ? ms : best;
  }
  cudaEventDestroy(a);
  cudaEventDestroy(b);
  return best;
}

// Runs convolution stage `stage` in the form chosen for `conv`, choosing first where this
// binding has no choice yet: `kernels(out)`, `library(out, choice)` (cuDNN and the finish
// kernel) or `fused(out, choice)` (cuDNN's fused convolution, where conv.fused). A cuDNN form
// chosen by timing is checked against the kernels (eqf_conv_check); a forced one is not.
template <typename T, typename K, typename L, typename F>
static int eqf_conv_run(int stage, EqfConvChoices* cs, const EqfConv& conv, size_t out_bytes,
                        T* out, cudaStream_t st, K kernels, L library, F fused) {
  static const int mode = eqf_conv_mode();  // read once per process
  if (mode == 1) return kernels(out);
  EqfConvChoice* c = 0;
  for (int k = 0; k < 8 && !c; ++k)
    if (cs->at[k].state && !memcmp(&cs->at[k].conv, &conv, sizeof conv)) c = &cs->at[k];
  // The chosen cuDNN form.
  auto form = [&](T* o) { return c->state == 3 ? fused(o, c) : library(o, c); };
  if (!c) {
    cudaStreamCaptureStatus capturing = cudaStreamCaptureStatusNone;
    if (cudaStreamIsCapturing(st, &capturing) != cudaSuccess ||
        capturing != cudaStreamCaptureStatusNone)
      return kernels(out);  // no choosing inside a graph
    c = &cs->at[cs->next];
    cs->next = (cs->next + 1) % 8;
    eqf_conv_forget(c);
    c->conv = conv;
    c->state = 1;
    cudnnConvolutionFwdAlgoPerf_t candidates[3];
    const int count = eqf_cudnn_prepare(c, candidates, st);
    // The fused form takes ReLU with any algorithm, the identity only with PRECOMP_GEMM.
    auto fusable = [&](int k) {
      return c->fusable == 2 ||
             (c->fusable == 1 &&
              candidates[k].algo == CUDNN_CONVOLUTION_FWD_ALGO_IMPLICIT_PRECOMP_GEMM);
    };
    float ms_kernels = -1, ms_library = -1;
    int fastest = -1;  // cuDNN's fastest algorithm here
    T* trial = 0;
    if (count > 0 && mode >= 2) {
      int k = 0, state = 2;
      for (int j = 0; j < count && mode == 2 && state == 2; ++j)
        if (fusable(j)) k = j, state = 3;
      c->state = eqf_cudnn_use(c, &candidates[k]) ? 1 : state;
      fastest = (int)candidates[k].algo;
    } else if (count > 0 && cudaMalloc((void**)&trial, out_bytes + 1) == cudaSuccess) {
      ms_kernels = eqf_conv_time([&] { return kernels(trial); }, st);
      int best = -1, best_state = 1;
      for (int k = 0; k < count; ++k) {
        if (eqf_cudnn_use(c, &candidates[k])) continue;
        const float ms = eqf_conv_time([&] { return library(trial, c); }, st);
        if (ms >= 0 && (ms_library < 0 || ms < ms_library)) ms_library = ms, best = k, best_state = 2;
        if (!fusable(k)) continue;
        const float ms_fused = eqf_conv_time([&] { return fused(trial, c); }, st);
        if (ms_fused >= 0 && (ms_library < 0 || ms_fused < ms_library))
          ms_library = ms_fused, best = k, best_state = 3;
      }
      if (best >= 0) fastest = (int)candidates[best].algo;
      if (best >= 0 && (ms_kernels < 0 || ms_library < ms_kernels) &&
          !eqf_cudnn_use(c, &candidates[best])) {
        c->state = best_state;
        // (Kernels that failed to run leave nothing to check against.)
        if (ms_kernels >= 0 && eqf_conv_check(stage, c, trial, out_bytes, kernels, form, st)) {
          cudaFree(trial);
          return -1;
        }
      }
      cudaFree(trial);
    }
    const char* report = getenv("EQFUSE_CONV_REPORT");
    if (report && *report && strcmp(report, "0"))
      fprintf(stderr,
              "eqfuse: stage %d: conv x %dx%dx%dx%d w %dx%dx%dx%d: cuDNN algo %d %.4f ms, kernels "
              "%.4f ms -> %s\n",
              stage, conv.x[0], conv.x[1], conv.x[2], conv.x[3], conv.w[0], conv.w[1], conv.w[2],
              conv.w[3], fastest, ms_library, ms_kernels,
              c->state == 3 ? "cuDNN fused" : c->state == 2 ? "cuDNN" : "kernels");
  }
  if (c->state == 3) {
    if (!fused(out, c)) return 0;
    // E.g. cuDNN refuses the form where it was forced untried.
    fprintf(stderr,
            "eqfuse: stage %d: cuDNN's fused convolution failed: cuDNN and the finish kernel from "
            "now on\n",
            stage);
    c->state = 2;
  }
  return c->state == 1 ? kernels(out) : library(out, c);
}
#endif

)";

std::string dims_struct(const KernelPlan& plan) {
  return fmt::format("struct EqfDims {{\n  int64_t d[{}];\n}};\n\n",
                     std::max<size_t>(plan.dims.size(), 1));
}

// Weights that are not floating point (indices, masks), with their bytes where the graph has
// them and they are small: what a run with seeded weights must keep, since random bits make no
// valid index.
std::string fixed_weights(const KernelPlan& plan) {
  constexpr size_t kMaxEmbedded = 64 * 1024;
  std::string arrays, cases;
  size_t count = 0;
  for (ValueId v : plan.weights) {
    const Buffer& b = *plan.buffer(v);
    if (b.dtype == DType::f32 || b.dtype == DType::f16 || b.dtype == DType::bf16 ||
        b.dtype == DType::f64)
      continue;
    std::optional<ir::Tensor> data;
    try {
      if (auto t = plan.graph.weight_data(v); t && t->byte_size() <= kMaxEmbedded) data = *t;
    } catch (const Error&) {  // a structure-only model: no bytes to embed
    }
    std::string name = "nullptr";
    if (data) {
      name = fmt::format("eqf_fixed{}", count);
      std::string bytes;
      const auto* raw = reinterpret_cast<const unsigned char*>(data->raw());
      for (size_t i = 0; i < data->byte_size(); ++i)
        bytes += fmt::format("{}{}", i % 24 ? " " : "\n  ", unsigned(raw[i])) + ",";
      arrays += fmt::format("static const unsigned char {}[] = {{{}\n}};  // {}\n", name,
                            bytes.empty() ? "0" : bytes, plan.graph.value(v).name);
    }
    cases += fmt::format("    case {}: *bytes = {}; *data = {}; return {};\n", count, b.bytes.str(),
                         name, b.offset);
    ++count;
  }
  return arrays + fmt::format(
                      "extern \"C\" int eqfuse_num_fixed_weights(void) {{ return {}; }}\n\n"
                      "extern \"C\" int64_t eqfuse_fixed_weight(int k, int64_t* bytes, const "
                      "unsigned char** data) {{\n"
                      "  (void)bytes;\n  (void)data;\n"
                      "  switch (k) {{\n{}    default: return -1;\n  }}\n}}\n\n",
                      count, cases);
}

// The model's interface as functions (host code in both targets): names, dtypes (ONNX codes),
// ranks and dims of inputs and outputs, and which input dim binds each run-time dim.
std::string model_description(const KernelPlan& plan) {
  const ir::Graph& g = plan.graph;
  auto sym = [&](const ir::Dim& d) {
    if (d.is_static()) return std::to_string(d.value());
    return d.sym().c_expr([&](const std::string& s) { return plan.dim_ident(s); });
  };
  std::string dims;
  for (size_t k = 0; k < plan.dims.size(); ++k)
    dims += fmt::format("  const int64_t d{} = dims[{}];\n  (void)d{};\n", k, k, k);
  std::string text;
  for (const char* side : {"input", "output"}) {
    const auto& values = std::string(side) == "input" ? g.inputs() : g.outputs();
    std::string names, types, ranks, shapes;
    for (size_t k = 0; k < values.size(); ++k) {
      const ir::Value& v = g.value(values[k]);
      std::string quoted;
      for (char c : v.name)
        quoted += (c == '"' || c == '\\') ? std::string("\\") + c : std::string(1, c);
      names += fmt::format("    case {}: return \"{}\";\n", k, quoted);
      types += fmt::format("    case {}: return {};\n", k, ir::onnx_dtype_code(v.type.dtype));
      ranks += fmt::format("    case {}: return {};\n", k, v.type.shape.rank());
      shapes += fmt::format("    case {}:\n", k);
      for (size_t a = 0; a < v.type.shape.rank(); ++a)
        shapes += fmt::format("      out[{}] = {};\n", a, sym(v.type.shape[a]));
      shapes += "      return;\n";
    }
    text += fmt::format("extern \"C\" int eqfuse_num_{}s(void) {{ return {}; }}\n", side,
                        values.size());
    text += fmt::format(
        "extern \"C\" const char* eqfuse_{}_name(int k) {{\n  switch (k) {{\n{}"
        "    default: return 0;\n  }}\n}}\n",
        side, names);
    text += fmt::format(
        "extern \"C\" int eqfuse_{}_dtype(int k) {{\n  switch (k) {{\n{}"
        "    default: return 0;\n  }}\n}}\n",
        side, types);
    text += fmt::format(
        "extern \"C\" int eqfuse_{}_rank(int k) {{\n  switch (k) {{\n{}"
        "    default: return -1;\n  }}\n}}\n",
        side, ranks);
    text += fmt::format(
        "extern \"C\" void eqfuse_{}_dims(int k, const int64_t* dims, int64_t* "
        "out) {{\n  (void)dims;\n  (void)out;\n{}  switch (k) {{\n{}    default:\n"
        "      return;\n  }}\n}}\n",
        side, dims, shapes);
  }
  std::string sources;
  for (size_t d = 0; d < plan.dims.size(); ++d) {
    for (size_t i = 0; i < g.inputs().size(); ++i) {
      const auto& shape = g.value(g.inputs()[i]).type.shape;
      bool found = false;
      for (size_t a = 0; a < shape.rank() && !found; ++a)
        if (!shape[a].is_static() && shape[a].symbol_name() == plan.dims[d]) {
          sources += fmt::format("    case {}: *input = {}; *axis = {}; return 0;  // {}\n", d, i,
                                 a, plan.dims[d]);
          found = true;
        }
      if (found) break;
    }
  }
  std::string names;
  for (size_t d = 0; d < plan.dims.size(); ++d)
    names += fmt::format("    case {}: return \"{}\";\n", d, plan.dims[d]);
  text += fmt::format(
      "extern \"C\" const char* eqfuse_dim_name(int d) {{\n  switch (d) {{\n{}"
      "    default: return 0;\n  }}\n}}\n",
      names);
  text += fmt::format(
      "extern \"C\" int eqfuse_dim_source(int d, int* input, int* axis) {{\n"
      "  (void)input;\n  (void)axis;\n"
      "  switch (d) {{\n{}    default: return -1;\n  }}\n}}\n",
      sources);
  text += fmt::format("extern \"C\" int64_t eqfuse_weights_bytes(void) {{ return {}; }}\n\n",
                      plan.weight_bytes);
  text += fixed_weights(plan);
  auto [rtol, atol] = precision_tolerance(plan.precision);
  text += fmt::format(
      "extern \"C\" int eqfuse_precision(void) {{ return {}; }}\n\n"
      "extern \"C\" void eqfuse_tolerance(double* rtol, double* atol) {{\n"
      "  *rtol = {};\n  *atol = {};\n}}\n\n",
      ir::onnx_dtype_code(plan.precision), rtol, atol);
  return text;
}

}  // namespace

std::string_view target_name(Target target) {
  return target == Target::Cpu ? "cpu" : "cuda";
}

std::string kernel_api_text(Target target) {
  std::string stream = target == Target::Cuda ? ", void* stream" : "";
  return fmt::format(
      "// Bytes of scratch memory a run needs at these dims (the arena, 64-byte aligned).\n"
      "extern \"C\" int64_t eqfuse_arena_bytes(const int64_t* dims);\n"
      "// Number of run-time dims (the order of `dims`).\n"
      "extern \"C\" int eqfuse_num_dims(void);\n"
      "// Runs the model: inputs and outputs in the model's order, the weights blob and an arena\n"
      "// of eqfuse_arena_bytes(dims) bytes{}. Returns 0, or an error code (CUDA: -2 when a\n"
      "// buffer, input, output, weights or arena, is not 16-byte aligned; cudaMalloc's are).\n"
      "extern \"C\" int eqfuse_run(const int64_t* dims, const void* const* inputs,\n"
      "                            void* const* outputs, const void* weights, void* arena{});\n"
      "// The model's interface: inputs and outputs (name, ONNX dtype code, rank, dims at a\n"
      "// binding of the run-time dims), where each run-time dim is read (input, axis), and the\n"
      "// size of the weights blob.\n"
      "extern \"C\" int eqfuse_num_inputs(void);\n"
      "extern \"C\" const char* eqfuse_input_name(int k);\n"
      "extern \"C\" int eqfuse_input_dtype(int k);\n"
      "extern \"C\" int eqfuse_input_rank(int k);\n"
      "extern \"C\" void eqfuse_input_dims(int k, const int64_t* dims, int64_t* out);\n"
      "extern \"C\" int eqfuse_num_outputs(void);\n"
      "extern \"C\" const char* eqfuse_output_name(int k);\n"
      "extern \"C\" int eqfuse_output_dtype(int k);\n"
      "extern \"C\" int eqfuse_output_rank(int k);\n"
      "extern \"C\" void eqfuse_output_dims(int k, const int64_t* dims, int64_t* out);\n"
      "extern \"C\" const char* eqfuse_dim_name(int d);\n"
      "extern \"C\" int eqfuse_dim_source(int d, int* input, int* axis);\n"
      "extern \"C\" int64_t eqfuse_weights_bytes(void);\n"
      "// Weights that are not floating point (indices, masks): their offset in the weights blob\n"
      "// (returned), size, and bytes (null where the tree does not hold them: write zeros). A "
      "run\n"
      "// with seeded weights keeps them, since random bits make no valid index.\n"
      "extern \"C\" int eqfuse_num_fixed_weights(void);\n"
      "extern \"C\" int64_t eqfuse_fixed_weight(int k, int64_t* bytes, const unsigned char** "
      "data);\n"
      "// What f32 weights and intermediates are stored in (ONNX dtype code: 1 f32, 10 f16, 16\n"
      "// bf16; eqfuse compile --precision), and the tolerance the outputs are checked at.\n"
      "extern \"C\" int eqfuse_precision(void);\n"
      "extern \"C\" void eqfuse_tolerance(double* rtol, double* atol);\n"
      "{}",
      target == Target::Cuda ? " (all device pointers), on `stream`" : "", stream,
      target == Target::Cuda
          ? "// The same run with each stage timed (CUDA events): stage_ms gets one time per "
            "stage.\n"
            "extern \"C\" int eqfuse_num_stages(void);\n"
            "extern \"C\" int eqfuse_profile(const int64_t* dims, const void* const* inputs,\n"
            "                                void* const* outputs, const void* weights, void* "
            "arena,\n                                void* stream, float* stage_ms);\n"
          : "");
}

namespace {

// The unit of print_kernels (in `host`), or with `hosted` the two of print_cuda_hosted.
HostedCuda print_units(const KernelPlan& plan, Target target, bool hosted) {
  const ir::Graph& g = plan.graph;
  std::string header =
      fmt::format("// Generated by eqfuse for target {}: {} stages in {} kernels. Do not edit.\n",
                  target_name(target), plan.stages.size(), plan.steps.size());
  HostedCuda units;
  std::string& text = units.host;
  text = header + prelude_text();
  if (target == Target::Cuda)
    text +=
        "\nstatic unsigned eqf_grid(int64_t n) {\n  int64_t b = (n + 255) / 256;\n"
        "  return (unsigned)(b < 65536 ? b : 65536);\n}\n";
  text += "\n" + dims_struct(plan);
  Writer w(plan, target, hosted);
  std::string functions, calls;
  for (size_t i = 0; i < plan.stages.size(); ++i) w.stage(i, functions, calls);
  if (w.uses_mma) functions = kMmaHelpers + functions;
  if (hosted) {
    units.device = header + prelude_text() + "\n" + dims_struct(plan) + functions;
    text += kHostTable;
  }
  if (w.uses_cblas) text += "#if defined(EQFUSE_CBLAS)\n#include <cblas.h>\n#endif\n\n";
  if (w.uses_cublas && !hosted)
    text +=
        "#include <cublas_v2.h>\n\n// One cuBLAS handle per process, on the run's stream.\n"
        "static cublasHandle_t eqf_cublas(cudaStream_t st) {\n  static cublasHandle_t h = 0;\n"
        "  if (!h) cublasCreate(&h);\n  cublasSetStream(h, st);\n  return h;\n}\n\n";
  if (w.uses_cublaslt && !hosted) text += kCublasLtRuntime;
  if (w.uses_cudnn && !hosted) text += kCudnnRuntime;
  if (!hosted) text += functions;

  std::string dims;
  for (size_t k = 0; k < plan.dims.size(); ++k)
    dims += fmt::format("  const int64_t d{} = dims[{}];  // {}\n  (void)d{};\n", k, k,
                        plan.dims[k], k);
  auto sym = [&](const ir::SymInt& x) {
    return x.c_expr([&](const std::string& s) { return plan.dim_ident(s); });
  };
  text +=
      fmt::format("extern \"C\" int eqfuse_num_dims(void) {{ return {}; }}\n\n", plan.dims.size());
  text += "extern \"C\" int64_t eqfuse_arena_bytes(const int64_t* dims) {\n  (void)dims;\n" + dims +
          "  return " + sym(plan.arena.total) + ";\n}\n\n";
  text += model_description(plan);
  std::string stream = target == Target::Cuda ? ", void* stream" : "";
  if (hosted)
    text +=
        "extern \"C\" int eqfuse_run_hosted(const int64_t* dims, const void* const* inputs,\n"
        "                                   void* const* outputs, const void* weights, void* "
        "arena,\n                                   const EqfHost* H) {\n";
  else if (target == Target::Cuda)
    text +=
        "// With `prof` (stages + 1 events), an event is recorded before each stage and at the "
        "end.\nstatic int eqf_run(const int64_t* dims, const void* const* inputs, void* const* "
        "outputs,\n                   const void* weights, void* arena, void* stream, "
        "cudaEvent_t* prof) {\n";
  else
    text +=
        "extern \"C\" int eqfuse_run(const int64_t* dims, const void* const* inputs,\n"
        "                            void* const* outputs, const void* weights, void* arena" +
        stream + ") {\n";
  text += "  (void)dims;\n  (void)inputs;\n  (void)outputs;\n  (void)weights;\n  (void)arena;\n";
  if (w.aligned_vectors) {  // every buffer 16-byte aligned, or no run
    std::string bits = "(uintptr_t)weights | (uintptr_t)arena";
    for (size_t k = 0; k < g.inputs().size(); ++k)
      bits += fmt::format(" | (uintptr_t)inputs[{}]", k);
    for (size_t k = 0; k < g.outputs().size(); ++k)
      bits += fmt::format(" | (uintptr_t)outputs[{}]", k);
    text += fmt::format("  if (({}) & 15) return -2;\n", bits);
  }
  text += dims;
  text += "  EqfDims D;\n";
  for (size_t k = 0; k < std::max<size_t>(plan.dims.size(), 1); ++k)
    text += fmt::format("  D.d[{}] = {};\n", k, k < plan.dims.size() ? fmt::format("d{}", k) : "0");
  if (target == Target::Cuda && !hosted) text += "  cudaStream_t st = (cudaStream_t)stream;\n";
  // The buffers the calls name (a contraction's value kept in registers for its epilogue is
  // none of them).
  std::set<size_t> named;
  static const std::regex buffer_name(R"(\bp(\d+)\b)");
  for (auto it = std::sregex_iterator(calls.begin(), calls.end(), buffer_name);
       it != std::sregex_iterator(); ++it)
    named.insert(std::stoul((*it)[1]));
  bool any_arena = false, any_weight = false;
  for (size_t b : named) {
    any_arena = any_arena || plan.buffers.at(b).storage == Storage::Arena;
    any_weight = any_weight || plan.buffers.at(b).storage == Storage::Weight;
  }
  if (any_arena) text += "  unsigned char* A = (unsigned char*)arena;\n";
  if (any_weight) text += "  const unsigned char* W = (const unsigned char*)weights;\n";
  for (size_t b = 0; b < plan.buffers.size(); ++b) {
    if (!named.count(b)) continue;
    const Buffer& buf = plan.buffers[b];
    std::string t = storage_type(buf.dtype);
    std::string where;
    switch (buf.storage) {
      case Storage::Input:
        where = fmt::format("(const {}*)inputs[{}]", t, buf.index);
        break;
      case Storage::Output:
        where = fmt::format("({}*)outputs[{}]", t, buf.index);
        break;
      case Storage::Weight:
        where = fmt::format("(const {}*)(W + {})", t, buf.offset);
        break;
      case Storage::Arena:
        where = fmt::format("({}*)(A + {})", t, sym(plan.arena.slot_offset[buf.index]));
        break;
    }
    bool ro = buf.storage == Storage::Input || buf.storage == Storage::Weight;
    text += fmt::format("  {}{}* p{} = {};  // {}\n  (void)p{};\n", ro ? "const " : "", t, b, where,
                        g.value(buf.value).name, b);
  }
  text += calls;
  if (target == Target::Cpu) {
    text += "  return 0;\n}\n";
    return units;
  }
  if (hosted) {
    text += fmt::format("  if (H->record) H->record(H->ctx, {});\n  return 0;\n}}\n",
                        plan.stages.size());
    text += fmt::format("\nextern \"C\" int eqfuse_num_stages(void) {{ return {}; }}\n",
                        plan.stages.size());
    return units;
  }
  text += fmt::format("  if (prof) cudaEventRecord(prof[{}], st);\n", plan.stages.size());
  text += "  return (int)cudaGetLastError();\n}\n\n";
  text +=
      "extern \"C\" int eqfuse_run(const int64_t* dims, const void* const* inputs,\n"
      "                            void* const* outputs, const void* weights, void* arena,\n"
      "                            void* stream) {\n"
      "  return eqf_run(dims, inputs, outputs, weights, arena, stream, 0);\n}\n\n";
  text += fmt::format(
      "extern \"C\" int eqfuse_num_stages(void) {{ return {}; }}\n\n"
      "extern \"C\" int eqfuse_profile(const int64_t* dims, const void* const* inputs,\n"
      "                                void* const* outputs, const void* weights, void* arena,\n"
      "                                void* stream, float* stage_ms) {{\n"
      "  cudaEvent_t ev[{}];\n"
      "  for (int k = 0; k < {}; ++k) cudaEventCreate(&ev[k]);\n"
      "  int rc = eqf_run(dims, inputs, outputs, weights, arena, stream, ev);\n"
      "  cudaEventSynchronize(ev[{}]);\n"
      "  for (int k = 0; k < {}; ++k) cudaEventElapsedTime(&stage_ms[k], ev[k], ev[k + 1]);\n"
      "  for (int k = 0; k < {}; ++k) cudaEventDestroy(ev[k]);\n"
      "  return rc;\n}}\n",
      plan.stages.size(), plan.stages.size() + 1, plan.stages.size() + 1, plan.stages.size(),
      plan.stages.size(), plan.stages.size() + 1);
  return units;
}

}  // namespace

std::string print_kernels(const KernelPlan& plan, Target target) {
  return print_units(plan, target, false).host;
}

HostedCuda print_cuda_hosted(const KernelPlan& plan) {
  return print_units(plan, Target::Cuda, true);
}

}  // namespace eqfuse::codegen
