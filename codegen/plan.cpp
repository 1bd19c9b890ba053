#include "codegen/plan.h"

#include <fmt/format.h>

#include <algorithm>
#include <cctype>
#include <cstring>
#include <filesystem>
#include <set>
#include <tuple>

#include "codegen/decompose.h"
#include "codegen/lowering.h"
#include "codegen/winograd.h"
#include "ir/kernel_body.h"
#include "ir/op_table.h"
#include "ir/ops/window.h"
#include "ir/shape_values.h"
#include "support/error.h"

namespace eqfuse::codegen {

namespace {

using ir::NodeId;
using ir::ValueId;

[[noreturn]] void unsupported(const ir::Node& n, const std::string& why) {
  throw Error(fmt::format("codegen: {} '{}': {}", n.op_type, n.name, why),
              Error::Kind::Unsupported);
}

ir::SymInt byte_size(const ir::Graph& g, ValueId v, ir::DType stored) {
  const ir::Value& val = g.value(v);
  if (!val.type.shape.has_rank())
    throw Error(fmt::format("codegen: value '{}' has no known rank", val.name),
                Error::Kind::Unsupported);
  ir::SymInt n = int64_t(ir::dtype_size(stored));
  for (const ir::Dim& d : val.type.shape.dims()) {
    ir::SymInt s = d.sym();
    if (!s.is_known())
      throw Error(fmt::format("codegen: value '{}' has an unknown dim ({}); give it with --dim "
                              "or a named input dim",
                              val.name, val.type.str()),
                  Error::Kind::Unsupported);
    n = n * s;
  }
  return n;
}

// Whether two types have one shape, dim by dim (symbols compared as symbols).
bool same_shape(const ir::TensorType& a, const ir::TensorType& b) {
  if (!a.shape.has_rank() || !b.shape.has_rank() || a.shape.rank() != b.shape.rank()) return false;
  for (size_t d = 0; d < a.shape.rank(); ++d)
    if (!(a.shape[d].sym() == b.shape[d].sym())) return false;
  return true;
}

// Layout ops whose output element i is their input's element i.
bool keeps_linear_index(std::string_view op_type) {
  static const std::set<std::string, std::less<>> kSameIndex = {"Reshape",   "Flatten",  "Squeeze",
                                                                "Unsqueeze", "Identity", "Dropout"};
  return kSameIndex.count(op_type) > 0;
}

// Whether input k of pointwise node n is read at the element n writes: layout ops that keep the
// row-major linear index, and elementwise operands of the output's own shape (not broadcast).
bool reads_at_own_element(const ir::Graph& g, const ir::Node& n, size_t k) {
  if (keeps_linear_index(n.op_type)) return k == 0;
  if (!n.def || (!n.def->scalar && !n.def->scalar_for_node)) return false;
  return same_shape(g.value(n.inputs[k]).type, g.value(n.outputs[0]).type);
}

// Whether the stage of `root` reads `target` only at the element it writes: every path of
// recomputed values from the stage's output down to `target` keeps the element's index. For a
// row stage (`row`: Softmax, LayerNorm) the row's input counts as read where it is written: its
// reductions read the whole row, but all of them end before the row's first write, and the
// writing pass reads the input only at the element it writes (on both targets one thread, or one
// warp, takes a row).
bool stage_reads_only_own_element(const ir::Graph& g, NodeId root, ValueId target,
                                  const std::vector<bool>& materialized, bool row) {
  std::set<std::pair<ValueId, bool>> seen;  // (value, read at the written element)
  std::vector<std::pair<ValueId, bool>> todo;
  auto push_inputs = [&](const ir::Node& n, bool aligned) {
    for (size_t k : data_inputs(n))
      if (k < n.inputs.size() && n.inputs[k] != ir::kNoValue)
        todo.push_back({n.inputs[k], aligned && reads_at_own_element(g, n, k)});
  };
  const ir::Node& stage_node = g.node(root);
  if (row && !stage_node.inputs.empty() && stage_node.inputs[0] != ir::kNoValue &&
      same_shape(g.value(stage_node.inputs[0]).type, g.value(stage_node.outputs[0]).type)) {
    todo.push_back({stage_node.inputs[0], true});
    for (size_t k : data_inputs(stage_node))
      if (k > 0 && k < stage_node.inputs.size() && stage_node.inputs[k] != ir::kNoValue)
        todo.push_back({stage_node.inputs[k], false});
  } else {
    push_inputs(stage_node, !row);
  }
  while (!todo.empty()) {
    auto [v, aligned] = todo.back();
    todo.pop_back();
    if (!seen.insert({v, aligned}).second) continue;
    if (v == target) {
      if (!aligned) return false;
      continue;
    }
    const ir::Value& val = g.value(v);
    if (materialized[v] || val.producer == ir::kNoNode) continue;
    push_inputs(g.node(val.producer), aligned);
  }
  return true;
}

// The attention stages of the live nodes: for each MatMul by V whose first operand is a
// Softmax over the last axis of S, where S is a MatMul Q·K under pointwise ops, all inside one
// top-level node (the fusion chose them together). Every value from Q·K to the Softmax's output
// must be read only on that path, at the element it makes (so the stage may hold a row of S in
// registers), and Q's and V's rows must fit a stage's tiles.
constexpr int64_t kMaxAttentionWidth = 128;

std::vector<Stage::AttentionNodes> attention_stages(const ir::Graph& g,
                                                    const std::vector<bool>& live,
                                                    const std::vector<NodeId>& origin,
                                                    std::map<ValueId, size_t>& of_output) {
  const auto& nodes = g.nodes();
  std::vector<std::vector<NodeId>> readers(g.values().size());
  for (size_t i = 0; i < nodes.size(); ++i)
    if (live[i])
      for (ValueId in : nodes[i].inputs)
        if (in != ir::kNoValue) readers[in].push_back(NodeId(i));
  std::vector<bool> is_output(g.values().size(), false);
  for (ValueId v : g.outputs()) is_output[v] = true;
  auto f32_rank2 = [&](ValueId v) {
    const ir::TensorType& t = g.value(v).type;
    return t.dtype == ir::DType::f32 && t.shape.has_rank() && t.shape.rank() >= 2;
  };
  std::vector<Stage::AttentionNodes> found;
  for (size_t i = 0; i < nodes.size(); ++i) {
    const ir::Node& pv = nodes[i];
    if (!live[i] || pv.op_type != "MatMul" || pv.inputs.size() != 2) continue;
    ValueId probs = pv.inputs[0], v = pv.inputs[1], out = pv.outputs[0];
    if (!f32_rank2(probs) || !f32_rank2(v) || !f32_rank2(out)) continue;
    const auto& os = g.value(out).type.shape;
    const auto& ps = g.value(probs).type.shape;
    const size_t r = os.rank();
    const ir::Dim& width = os[r - 1];
    if (ps.rank() != r || !width.is_static() || width.value() < 1 ||
        width.value() > kMaxAttentionWidth)
      continue;
    bool rows_match = true;  // the output's rows are S's rows
    for (size_t k = 0; k + 1 < r; ++k) rows_match = rows_match && os[k].sym() == ps[k].sym();
    NodeId sm = g.value(probs).producer;
    if (!rows_match || sm == ir::kNoNode || origin[sm] != origin[i] || is_output[probs] ||
        readers[probs].size() != 1)
      continue;
    const ir::Node& softmax = g.node(sm);
    if (softmax.op_type != "Softmax") continue;
    int64_t axis = ir::make_context(g, softmax).attr_int("axis");
    if (axis != -1 && axis != int64_t(r) - 1) continue;
    ValueId s_in = softmax.inputs[0];
    if (!(g.value(s_in).type == g.value(probs).type)) continue;
    // Q·K: the one MatMul of S's shape reached from the Softmax through pointwise ops of the
    // same top-level node.
    std::vector<NodeId> between;  // pointwise nodes on the way
    std::optional<NodeId> qk;
    bool ok = true;
    std::set<ValueId> seen;
    std::vector<ValueId> todo = {s_in};
    while (!todo.empty() && ok) {
      ValueId x = todo.back();
      todo.pop_back();
      if (!seen.insert(x).second) continue;
      NodeId p = g.value(x).producer;
      if (p == ir::kNoNode || origin[p] != origin[i]) continue;
      const ir::Node& pn = g.node(p);
      if (pn.op_type == "MatMul" && g.value(x).type == g.value(s_in).type &&
          pn.inputs.size() == 2 && f32_rank2(pn.inputs[0]) && f32_rank2(pn.inputs[1])) {
        ok = !qk || *qk == p;
        qk = p;
      } else if (is_pointwise(pn)) {
        between.push_back(p);
        for (size_t k : data_inputs(pn))
          if (k < pn.inputs.size() && pn.inputs[k] != ir::kNoValue) todo.push_back(pn.inputs[k]);
      }
    }
    if (!ok || !qk) continue;
    const ir::Dim& depth = g.value(g.node(*qk).inputs[0]).type.shape.dims().back();
    if (!depth.is_static() || depth.value() < 1 || depth.value() > kMaxAttentionWidth) continue;
    // Everything that reads Q·K's value, and what that makes, up to the Softmax: pointwise, in
    // this node, read by nothing else, and at the element it makes.
    std::vector<bool> inside(nodes.size(), false);
    for (NodeId n : between) inside[n] = true;
    std::vector<ValueId> from = {g.node(*qk).outputs[0]};
    std::set<ValueId> reached;
    while (!from.empty() && ok) {
      ValueId x = from.back();
      from.pop_back();
      if (!reached.insert(x).second) continue;
      ok = !is_output[x];
      for (NodeId rd : readers[x]) {
        if (rd == sm) continue;
        ok = ok && inside[rd];
        if (ok) from.push_back(g.node(rd).outputs[0]);
      }
    }
    std::vector<bool> none(g.values().size(), false);
    if (!ok || !stage_reads_only_own_element(g, sm, g.node(*qk).outputs[0], none, /*row=*/true))
      continue;
    of_output[out] = found.size();
    found.push_back({*qk, sm});
  }
  return found;
}

}  // namespace

std::string_view stage_kind_name(StageKind kind) {
  switch (kind) {
    case StageKind::Pointwise:
      return "pointwise";
    case StageKind::Reduce:
      return "reduce";
    case StageKind::Softmax:
      return "softmax";
    case StageKind::LayerNorm:
      return "layernorm";
    case StageKind::MatMul:
      return "matmul";
    case StageKind::Gemm:
      return "gemm";
    case StageKind::Conv:
      return "conv";
    case StageKind::Pool:
      return "pool";
    case StageKind::Attention:
      return "attention";
    case StageKind::Rows:
      return "rows";
  }
  return "?";
}

std::string KernelPlan::dim_ident(const std::string& name) const {
  auto it = std::find(dims.begin(), dims.end(), name);
  if (it == dims.end())
    throw Error(fmt::format("codegen: dim '{}' is not bound by any input", name),
                Error::Kind::Unsupported);
  return fmt::format("d{}", it - dims.begin());
}

std::pair<double, double> precision_tolerance(ir::DType precision) {
  switch (precision) {
    case ir::DType::bf16:
      return {5e-2, 5e-2};
    case ir::DType::f16:
      return {1e-2, 1e-2};
    default:
      return {1e-3, 1e-4};
  }
}

namespace {

bool is_precision(ir::DType t) {
  return t == ir::DType::f32 || t == ir::DType::f16 || t == ir::DType::bf16;
}

}  // namespace

ir::DType parse_precision(const std::string& name) {
  auto t = ir::parse_dtype(name);
  if (!t || !is_precision(*t))
    throw Error("precision '" + name + "': expected f32, f16 or bf16", Error::Kind::BadInput);
  return *t;
}

std::vector<std::string> cuda_arch_entries(const std::string& arch) {
  std::vector<std::string> entries;
  for (size_t at = 0; at <= arch.size();) {
    const size_t end = std::min(arch.find(';', at), arch.size());
    std::string entry = arch.substr(at, end - at);
    entries.push_back(entry.rfind("sm_", 0) == 0 ? entry.substr(3) : entry);
    at = end + 1;
  }
  return entries;
}

bool arch_has_tensor_cores(const std::string& arch) {
  // What CMake's CUDA_ARCHITECTURES takes, which a tree passes it. "all" and "all-major" build
  // for GPUs before sm_80 too, so they take the FP32 forms; which GPU "native" means is not
  // known here, so it keeps the tensor cores (an older GPU then stops at the tiles' #error,
  // which says to name its architecture).
  if (arch == "all" || arch == "all-major") return false;
  if (arch == "native") return true;
  bool all = true;
  for (std::string entry : cuda_arch_entries(arch)) {
    for (const char* suffix : {"-real", "-virtual"})
      if (entry.size() > std::strlen(suffix) &&
          entry.compare(entry.size() - std::strlen(suffix), std::string::npos, suffix) == 0)
        entry.resize(entry.size() - std::strlen(suffix));
    if (!entry.empty() && (entry.back() == 'a' || entry.back() == 'f')) entry.pop_back();  // 90a
    if (entry.size() < 2 || entry.size() > 3 ||
        !std::all_of(entry.begin(), entry.end(),
                     [](char c) { return std::isdigit(static_cast<unsigned char>(c)); }))
      throw Error("CUDA architecture '" + arch +
                      "': expected sm_NN (such as sm_90a or sm_86), a list of them separated by "
                      "';', native or all",
                  Error::Kind::BadInput);
    all = all && std::stoi(entry) >= 80;
  }
  return all;
}

// The ops through which pointwise stage `s` only moves the elements of the one value it reads,
// from that value to the stage's output: Transposes, ops that keep the linear index (Reshape,
// Flatten, Squeeze, Unsqueeze, Identity, Dropout) and Gathers of one slice (its constant index
// aside, the stage reads nothing else), so each element lands at one place or, outside the
// slice, none. Empty when the stage computes anything else.
static std::vector<NodeId> layout_copy_path(const ir::Graph& g, const Stage& s) {
  if (s.node == ir::kNoNode || s.kind != StageKind::Pointwise) return {};
  std::vector<NodeId> path;
  std::set<ValueId> indices;
  for (NodeId n = s.node;;) {
    const ir::Node& node = g.node(n);
    const bool slice = gathered_slice(g, node).has_value();
    if ((node.op_type != "Transpose" && !keeps_linear_index(node.op_type) && !slice) ||
        node.inputs.empty() || node.inputs[0] == ir::kNoValue)
      return {};
    if (slice) indices.insert(node.inputs[1]);
    path.push_back(n);
    const ValueId in = node.inputs[0];
    if (std::find(s.reads.begin(), s.reads.end(), in) != s.reads.end()) {
      // The value it moves is its one read but for the slices' indices.
      for (ValueId r : s.reads)
        if (r != in && !indices.count(r)) return {};
      break;
    }
    // Not a value it reads, so recomputed: a value of the stage's own.
    n = g.value(in).producer;
    if (n == ir::kNoNode) return {};
  }
  std::reverse(path.begin(), path.end());
  return path;
}

bool has_weight_data(const ir::Value& v) {
  return v.data || (v.external && std::filesystem::exists(v.external->file));
}

namespace {

// The output tile's size m if the twin computes convolution `n` by Winograd's F(m x m, 3 x 3)
// (Stage::winograd), else 0: a 3x3 filter at stride 1 without dilation; m = 4 over at most
// kWinograd4MaxChannels channels and output rows at least kWinograd4MinWidth wide, else m = 2 over
// at most kWinogradMaxChannels and rows at least kWinogradMinWidth wide.
int winograd_tile(const ir::Graph& g, const ir::Node& n) {
  const auto& w = g.value(n.inputs[1]).type.shape;
  const int64_t channels = w[1].value(), width = g.value(n.outputs[0]).type.shape[3].value();
  if (w[2].value() != 3 || w[3].value() != 3 || channels > kWinogradMaxChannels ||
      width < kWinogradMinWidth)
    return 0;
  ir::OpContext ctx = ir::make_context(g, n);
  for (const char* ones : {"strides", "dilations"})
    for (int64_t v : ir::structured::spatial_attr(ctx, ones, 2, 1))
      if (v != 1) return 0;
  return channels <= kWinograd4MaxChannels && width >= kWinograd4MinWidth ? 4 : 2;
}

// Which of the twin's forms over reordered weights computes convolution `n`
// (PlanOptions::weight_blocks): Winograd's, as its tile size m (winograd_tile), else the
// channel tiles or, for a 1x1 convolution, the product form, as 0; nothing where none does.
std::optional<int> blocked_form(const ir::Graph& g, const ir::Node& n, ir::DType precision) {
  if (n.op_type != "Conv" || precision != ir::DType::f32 || n.inputs.size() < 2)
    return std::nullopt;
  const ir::Value& w = g.value(n.inputs[1]);
  // The output has x's dtype, and a bias of another is converted to it (ir/ops/conv.cpp), as the
  // printed loads convert it.
  const ir::TensorType& x = g.value(n.inputs[0]).type;
  const ir::TensorType& y = g.value(n.outputs[0]).type;
  // The blocks are made from the weights' data: a structure-only model (its external data
  // absent, the bench seeding the weights) keeps the other tiles. A convolution that reads its
  // weights as another operand too (Conv(w, w)) keeps them.
  if (!has_weight_data(w) || n.inputs[0] == n.inputs[1] ||
      (n.inputs.size() > 2 && n.inputs[2] == n.inputs[1]) || w.type.dtype != ir::DType::f32 ||
      x.dtype != ir::DType::f32 || w.type.shape.rank() != 4 || x.shape.rank() != 4 ||
      y.shape.rank() != 4)
    return std::nullopt;
  for (size_t k = 0; k < 4; ++k)
    if (!w.type.shape[k].is_static() ||
        (k >= 2 && (!x.shape[k].is_static() || !y.shape[k].is_static())))
      return std::nullopt;
  ir::OpContext ctx = ir::make_context(g, n);
  if (ctx.attr_int("group") != 1 || w.type.shape[0].value() % kWeightBlock != 0)
    return std::nullopt;
  if (const int m = winograd_tile(g, n)) return m;
  const int64_t kh = w.type.shape[2].value(), kw = w.type.shape[3].value();
  if (kh * kw == 1) {  // the product form: output channels in whole panels, no padding
    bool strided = false;
    for (const auto& axis : ir::structured::window_axes(ctx, {x.shape[2], x.shape[3]}, {1, 1},
                                                        /*ceil_mode=*/false)) {
      if (axis.pad_begin != 0 || axis.pad_end != 0) return std::nullopt;
      strided = strided || axis.stride != 1;
    }
    const int64_t products = w.type.shape[1].value();
    return w.type.shape[0].value() % kPanelWidth == 0 &&
                   products >= (strided ? kPanelReduction : kBlockedReduction)
               ? std::optional<int>(0)
               : std::nullopt;
  }
  return kh * kw > 1 && kw <= kMaxBlockedKernel &&
                 w.type.shape[1].value() * kh * kw >= kBlockedReduction
             ? std::optional<int>(0)
             : std::nullopt;
}

// Whether the twin reads matrix product `n`'s B in panels (Stage::weight_blocks): a MatMul or
// Gemm over 2-D or higher A, whose B is a 2-D f32 weight of static size that it reads only as B.
bool takes_panels(const ir::Graph& g, const ir::Node& n, ir::DType precision) {
  if ((n.op_type != "MatMul" && n.op_type != "Gemm") || precision != ir::DType::f32 ||
      n.inputs.size() < 2)
    return false;
  const ir::Value& b = g.value(n.inputs[1]);
  const ir::TensorType& a = g.value(n.inputs[0]).type;
  if (!has_weight_data(b) || n.inputs[0] == n.inputs[1] ||
      (n.inputs.size() > 2 && n.inputs[2] == n.inputs[1]) || b.type.dtype != ir::DType::f32 ||
      a.dtype != ir::DType::f32 || b.type.shape.rank() != 2 || a.shape.rank() < 2)
    return false;
  return b.type.shape[0].is_static() && b.type.shape[1].is_static();
}

// B (K x N, or N x K where `transposed`) in panels of kPanelWidth columns: [ceil(N / 64)][K][64],
// zero past column N.
ir::Tensor matrix_panels(std::span<const float> b, int64_t K, int64_t N, bool transposed) {
  const int64_t panels = (N + kPanelWidth - 1) / kPanelWidth;
  ir::Tensor out(ir::DType::f32, {panels, K, kPanelWidth});  // zero-filled
  std::span<float> to = out.data<float>();
  for (int64_t k = 0; k < K; ++k)
    for (int64_t j = 0; j < N; ++j)
      to[size_t(((j / kPanelWidth) * K + k) * kPanelWidth + j % kPanelWidth)] =
          b[size_t(transposed ? j * K + k : k * N + j)];
  return out;
}

// Filter `g` (3x3, row-major) as Winograd's U = G g G^T (alpha x alpha, row-major).
std::vector<float> winograd_filter(const WinogradTransform& f, const float* g) {
  double gg[6][3] = {};  // G g
  for (int a = 0; a < f.alpha; ++a)
    for (int k = 0; k < 3; ++k)
      for (int j = 0; j < 3; ++j) gg[a][k] += f.G[a][j] * g[3 * j + k];
  std::vector<float> u(size_t(f.alpha * f.alpha));
  for (int a = 0; a < f.alpha; ++a)
    for (int b = 0; b < f.alpha; ++b) {
      double sum = 0;
      for (int k = 0; k < 3; ++k) sum += gg[a][k] * f.G[b][k];
      u[size_t(a * f.alpha + b)] = float(sum);
    }
  return u;
}

// Blocked weights (Stage::weight_blocks) for each stage that takes them.
void add_weight_blocks(KernelPlan& plan) {
  ir::Graph& g = plan.graph;
  // One copy of weights that several stages read in the same form (a Winograd tile size, 0 for
  // the channel tiles; -1 for panels, -2 for panels of B^T).
  std::map<std::pair<ValueId, int>, ValueId> blocks_of;
  // Weight `wv` as the panels of a K x N matrix B (its rows are B's columns where `transposed`).
  auto panels = [&](ValueId wv, int64_t K, int64_t N, bool transposed) {
    auto [at, fresh] = blocks_of.try_emplace({wv, transposed ? -2 : -1}, ir::kNoValue);
    if (fresh)
      at->second = g.add_weight(g.unique_name(g.value(wv).name + "_panels"),
                                matrix_panels(g.weight_data(wv)->data<float>(), K, N, transposed));
    return at->second;
  };
  for (Stage& s : plan.stages) {
    if ((s.kind == StageKind::MatMul || s.kind == StageKind::Gemm) &&
        takes_panels(g, g.node(s.node), plan.precision)) {
      const ir::Node& n = g.node(s.node);
      const ValueId wv = n.inputs[1];
      const bool transposed = n.op_type == "Gemm" && ir::make_context(g, n).attr_int("transB");
      const auto& d = g.value(wv).type.shape;
      s.weight_blocks =
          panels(wv, d[transposed ? 1 : 0].value(), d[transposed ? 0 : 1].value(), transposed);
      continue;
    }
    const std::optional<int> form =
        s.kind == StageKind::Conv ? blocked_form(g, g.node(s.node), plan.precision) : std::nullopt;
    if (!form) continue;
    const ValueId wv = g.node(s.node).inputs[1];
    s.winograd = *form;
    const auto& d = g.value(wv).type.shape;
    const int64_t M = d[0].value(), C = d[1].value(), taps = d[2].value() * d[3].value();
    if (taps == 1) {  // the product form: W^T's panels, as a Gemm's transposed B (C x M)
      s.weight_blocks = panels(wv, C, M, /*transposed=*/true);
      continue;
    }
    if (auto known = blocks_of.find({wv, s.winograd}); known != blocks_of.end()) {
      s.weight_blocks = known->second;
      continue;
    }
    const int64_t alpha = s.winograd + 2, places = alpha * alpha;
    auto w = g.weight_data(wv);
    const std::span<const float> from = w->data<float>();
    ir::Tensor blocks(ir::DType::f32,
                      s.winograd ? std::vector<int64_t>{M / kWeightBlock, places, C, kWeightBlock}
                                 : std::vector<int64_t>{M / kWeightBlock, C, d[2].value(),
                                                        d[3].value(), kWeightBlock});
    std::span<float> to = blocks.data<float>();
    for (int64_t m = 0; m < M; ++m)
      for (int64_t c = 0; c < C; ++c) {
        const float* filter = from.data() + (m * C + c) * taps;
        const int64_t block = m / kWeightBlock, lane = m % kWeightBlock;
        if (s.winograd) {
          const std::vector<float> u = winograd_filter(winograd_transform(s.winograd), filter);
          for (int64_t p = 0; p < places; ++p)
            to[size_t(((block * places + p) * C + c) * kWeightBlock + lane)] = u[size_t(p)];
        } else {
          for (int64_t t = 0; t < taps; ++t)
            to[size_t(((block * C + c) * taps + t) * kWeightBlock + lane)] = filter[t];
        }
      }
    const std::string suffix = s.winograd ? fmt::format("_winograd{}", s.winograd) : "_blocks";
    s.weight_blocks = blocks_of[{wv, s.winograd}] =
        g.add_weight(g.unique_name(g.value(wv).name + suffix), std::move(blocks));
  }
}

}  // namespace

KernelPlan make_plan(const ir::Graph& input_graph, const PlanOptions& options) {
  if (!is_precision(options.precision))
    throw Error(fmt::format("codegen: precision {}: expected f32, f16 or bf16",
                            ir::dtype_name(options.precision)),
                Error::Kind::BadInput);
  KernelPlan plan;
  plan.precision = options.precision;
  plan.epilogues_in_contractions = options.epilogues_in_contractions;
  plan.tensor_cores = options.tensor_cores;
  plan.cublaslt = options.cublaslt;
  std::vector<NodeId> origin;
  const ir::Graph inlined = ir::inline_kernels(input_graph, &origin);
  plan.graph = decompose_for_codegen(inlined, origin);
  ir::Graph& g = plan.graph;
  ir::refine_types(g);

  // Outputs that are inputs, weights or repeated get a copy stage into a value of their own.
  std::set<ValueId> seen_outputs;
  std::vector<std::pair<ValueId, ValueId>> copies;  // (new output value, source)
  for (ValueId& out : g.outputs()) {
    const ir::Value& v = g.value(out);
    if (v.producer == ir::kNoNode || seen_outputs.count(out)) {
      ValueId copy = g.add_value(g.unique_name(v.name + "_copy"), v.type);
      copies.push_back({copy, out});
      out = copy;
    }
    seen_outputs.insert(out);
  }

  // Liveness: nodes whose values generated code reads.
  const auto& nodes = g.nodes();
  std::vector<bool> live(nodes.size(), false);
  std::vector<bool> read(g.values().size(), false);
  for (ValueId v : g.outputs()) read[v] = true;
  for (auto [copy, source] : copies) read[source] = true;
  for (size_t i = nodes.size(); i-- > 0;) {
    const ir::Node& n = nodes[i];
    bool needed = false;
    for (ValueId o : n.outputs) needed = needed || read[o];
    if (!needed) continue;
    live[i] = true;
    if (n.is_opaque()) unsupported(n, "an opaque op has no kernel");
    // Stages write a node's first output only (MaxPool's indices and Dropout's mask are not
    // generated; LayerNormalization's statistics are, as its decomposition, decompose.h).
    for (size_t k = 1; k < n.outputs.size(); ++k)
      if (read[n.outputs[k]]) unsupported(n, fmt::format("output {} is not generated", k));
    if (n.op_type == "Dropout" && !dropout_is_identity(g, n))
      unsupported(n,
                  "training mode (its training_mode input not a constant false) is not generated");
    for (size_t k : data_inputs(n))
      if (k < n.inputs.size() && n.inputs[k] != ir::kNoValue) read[n.inputs[k]] = true;
  }

  // Attention stages: S and softmax(S) stay inside them, and they read Q, K and V through
  // whatever index maps and pointwise work make them in the same top-level node.
  std::map<ValueId, size_t> attention_of;  // an attention stage's output -> its nodes
  std::vector<Stage::AttentionNodes> attention;
  if (options.attention_stages) attention = attention_stages(g, live, origin, attention_of);
  std::set<NodeId> inside_attention;
  for (const auto& a : attention) inside_attention.insert({a.scores, a.softmax});

  // Under --precision, a MatMul, Gemm or Conv reading a model input (f32 in the caller's buffer)
  // would multiply it by 16-bit operands, which no cuBLAS GEMM nor cuDNN convolution takes: it
  // reads a copy of the input instead, rounded to the precision by a copy stage before all
  // others.
  std::vector<std::pair<ValueId, ValueId>> conversions;  // (copy at the precision, input)
  if (plan.precision != ir::DType::f32) {
    std::map<ValueId, ValueId> copy_of;
    for (size_t i = 0; i < nodes.size(); ++i) {
      ir::Node& n = g.node(NodeId(i));
      if (!live[i] || (n.op_type != "MatMul" && n.op_type != "Gemm" && n.op_type != "Conv") ||
          inside_attention.count(NodeId(i)) || attention_of.count(n.outputs[0]))
        continue;
      for (size_t k : {size_t{0}, size_t{1}}) {
        const ValueId in = n.inputs[k];
        const ir::Value& v = g.value(in);
        if (v.producer != ir::kNoNode || v.is_weight() || v.type.dtype != ir::DType::f32) continue;
        auto [it, fresh] = copy_of.emplace(in, 0);
        if (fresh) {
          it->second = g.add_value(
              g.unique_name(fmt::format("{}_{}", v.name, ir::dtype_name(plan.precision))),
              g.value(in).type);
          conversions.push_back({it->second, in});
        }
        n.inputs[k] = it->second;
      }
    }
  }
  // A copy stage: `copy` takes `source`'s elements (converted to its buffer's type), a step
  // of its own.
  auto add_copy_stage = [&](ValueId copy, ValueId source) {
    Stage s;
    s.kind = StageKind::Pointwise;
    s.output = copy;
    s.source = source;
    s.step = plan.steps.size();
    plan.steps.push_back({g.value(copy).name, "copy", {plan.stages.size()}});
    s.reads = {source};
    plan.stages.push_back(std::move(s));
  };
  for (auto [copy, source] : conversions) add_copy_stage(copy, source);

  // Materialized values: outputs, values leaving their top-level node, results of reductions
  // and contractions, and contraction operands (but an attention stage's). A plain layout op
  // that keeps the linear index (a top-level Reshape, Flatten, Squeeze, Unsqueeze, Identity or
  // Dropout) is read through by the nodes after it, as inside a kernel: its readers index its
  // input, and it has no stage unless something above stores its value (a contraction reading
  // it, a model output) or a Concat reads it (the cost model prices these ops free).
  // Not where a Concat reads it: there its own stage writes the Concat's slice in place (below),
  // which a Concat part without a buffer of its own would prevent for every part.
  std::vector<bool> read_by_concat(g.values().size(), false);
  for (size_t i = 0; i < nodes.size(); ++i)
    if (live[i] && nodes[i].op_type == "Concat")
      for (ValueId in : nodes[i].inputs)
        if (in != ir::kNoValue) read_by_concat[in] = true;
  auto read_through = [&](NodeId p) {
    const ir::Node& top = input_graph.node(origin[p]);
    return top.op_type != ir::kKernelOp && keeps_linear_index(top.op_type) &&
           !read_by_concat[nodes[p].outputs[0]];
  };
  std::vector<bool> mat(g.values().size(), false);
  for (ValueId v : g.outputs()) mat[v] = true;
  for (size_t i = 0; i < nodes.size(); ++i) {
    if (!live[i]) continue;
    const ir::Node& n = nodes[i];
    StageKind kind = stage_kind(n);
    const bool inside = inside_attention.count(NodeId(i)) > 0;
    const bool maybe_in_rows = kind == StageKind::Reduce && reduces_last_axis(g, n);
    if (kind != StageKind::Pointwise && !inside && !maybe_in_rows) mat[n.outputs[0]] = true;
    if (!inside && !attention_of.count(n.outputs[0]))
      for (size_t k : contiguous_inputs(n)) {
        ValueId in = n.inputs[k];
        if (in != ir::kNoValue) mat[in] = true;
      }
    for (ValueId in : n.inputs) {
      if (in == ir::kNoValue) continue;
      NodeId p = g.value(in).producer;
      if (p != ir::kNoNode && origin[p] != origin[i] && !read_through(p)) mat[in] = true;
    }
  }
  // Rows stages: a reduction of the last axis that nothing above stores stays unstored where
  // every stage reaching it computes a value of the reduction's input shape by elementwise ops
  // down to it (so each element reads the reduction of its own row), and the reductions inside
  // it, in turn, reach others only so. Each failing one is stored, which may fail others, until
  // none fails.
  std::vector<bool> in_rows(nodes.size(), false);
  for (size_t i = 0; i < nodes.size(); ++i)
    in_rows[i] = live[i] && !mat[nodes[i].outputs[0]] &&
                 stage_kind(nodes[i]) == StageKind::Reduce && reduces_last_axis(g, nodes[i]);
  auto row_type = [&](NodeId reduction) -> const ir::TensorType& {
    return g.value(g.node(reduction).inputs[0]).type;
  };
  // The reductions each stage's node reaches, as of the last round (where none failed).
  std::vector<std::set<NodeId>> reductions_of(nodes.size());
  for (bool changed = true; changed;) {
    changed = false;
    std::vector<bool> fails(nodes.size(), false);
    for (size_t i = 0; i < nodes.size(); ++i) {
      const ValueId out = nodes[i].outputs[0];
      reductions_of[i].clear();
      if (!live[i] || !mat[out]) continue;
      // (node, whether its inputs are read along the rows of `rows` by elementwise ops only)
      struct Reach {
        NodeId node;
        bool along;
        const ir::TensorType* rows;
        bool operator<(const Reach& o) const {
          return std::tie(node, along, rows) < std::tie(o.node, o.along, o.rows);
        }
      };
      const bool pointwise_root =
          stage_kind(nodes[i]) == StageKind::Pointwise && !attention_of.count(out);
      std::vector<Reach> todo = {
          {NodeId(i), pointwise_root && is_elementwise(nodes[i]), &g.value(out).type}};
      std::set<Reach> seen;
      while (!todo.empty()) {
        const Reach at = todo.back();
        todo.pop_back();
        if (!seen.insert(at).second) continue;
        const ir::Node& n = g.node(at.node);
        for (size_t k : data_inputs(n)) {
          if (k >= n.inputs.size() || n.inputs[k] == ir::kNoValue || mat[n.inputs[k]]) continue;
          const NodeId p = g.value(n.inputs[k]).producer;
          if (p == ir::kNoNode) continue;
          if (in_rows[p]) {
            reductions_of[i].insert(p);
            if (!at.along || !same_shape(*at.rows, row_type(p))) fails[p] = true;
            todo.push_back({p, true, &row_type(p)});
          } else {
            todo.push_back({p, at.along && is_elementwise(g.node(p)), at.rows});
          }
        }
      }
    }
    for (size_t i = 0; i < nodes.size(); ++i)
      if (fails[i]) {
        in_rows[i] = false;
        mat[nodes[i].outputs[0]] = true;
        changed = true;
      }
  }

  // Stages, in node order; the top-level node of each is a step.
  std::map<NodeId, size_t> step_of_origin;
  auto step_for = [&](NodeId top) {
    auto [it, fresh] = step_of_origin.emplace(top, plan.steps.size());
    if (fresh) {
      const ir::Node& n = input_graph.node(top);
      Step s;
      s.name = input_graph.value(n.outputs[0]).name;
      s.label = n.op_type == ir::kKernelOp ? "Kernel" : n.op_type;
      s.node = top;
      plan.steps.push_back(std::move(s));
    }
    return it->second;
  };
  for (size_t i = 0; i < nodes.size(); ++i) {
    if (!live[i]) continue;
    const ir::Node& n = nodes[i];
    ValueId out = n.outputs[0];
    if (!mat[out]) continue;
    Stage s;
    s.kind = stage_kind(n);
    if (auto a = attention_of.find(out); a != attention_of.end()) {
      s.kind = StageKind::Attention;
      s.attention = attention[a->second];
    }
    s.node = NodeId(i);
    s.output = out;
    if (!reductions_of[i].empty()) {  // a pointwise stage, or a reduction would have failed
      s.kind = StageKind::Rows;
      s.row_reductions.assign(reductions_of[i].begin(), reductions_of[i].end());  // inner first
    }
    s.step = step_for(origin[i]);
    plan.steps[s.step].stages.push_back(plan.stages.size());
    plan.stages.push_back(std::move(s));
  }
  for (auto [copy, source] : copies) add_copy_stage(copy, source);
  if (options.weight_blocks) add_weight_blocks(plan);

  // What each stage reads: materialized values reached through the recomputed ones.
  for (Stage& s : plan.stages) {
    if (s.node == ir::kNoNode) continue;
    std::set<ValueId> reads, visited;
    std::vector<ValueId> todo;
    for (size_t k : data_inputs(g.node(s.node)))
      if (k < g.node(s.node).inputs.size() && g.node(s.node).inputs[k] != ir::kNoValue)
        todo.push_back(g.node(s.node).inputs[k]);
    while (!todo.empty()) {
      ValueId v = todo.back();
      todo.pop_back();
      if (!visited.insert(v).second) continue;
      const ir::Value& val = g.value(v);
      if (mat[v] || val.producer == ir::kNoNode) {
        reads.insert(v);
        continue;
      }
      const ir::Node& p = g.node(val.producer);
      for (size_t k : data_inputs(p))
        if (k < p.inputs.size() && p.inputs[k] != ir::kNoValue) todo.push_back(p.inputs[k]);
    }
    // Blocked weights are read instead of the weights (which another stage may still read).
    if (s.weight_blocks) {
      reads.erase(g.node(s.node).inputs[1]);
      reads.insert(*s.weight_blocks);
    }
    s.reads.assign(reads.begin(), reads.end());
  }

  // Buffers.
  auto add_buffer = [&](ValueId v) {
    if (plan.buffer_of.count(v)) return;
    Buffer b;
    b.value = v;
    const ir::Value& val = g.value(v);
    auto input = std::find(g.inputs().begin(), g.inputs().end(), v);
    auto output = std::find(g.outputs().begin(), g.outputs().end(), v);
    if (input != g.inputs().end()) {
      b.storage = Storage::Input;
      b.index = size_t(input - g.inputs().begin());
    } else if (output != g.outputs().end()) {
      b.storage = Storage::Output;
      b.index = size_t(output - g.outputs().begin());
    } else {
      b.storage = val.is_weight() ? Storage::Weight : Storage::Arena;
    }
    // The caller's buffers keep the model's dtypes; what the plan stores takes the precision.
    b.dtype = val.type.dtype;
    if (b.dtype == ir::DType::f32 && (b.storage == Storage::Weight || b.storage == Storage::Arena))
      b.dtype = plan.precision;
    b.bytes = byte_size(g, v, b.dtype);
    if (b.storage == Storage::Weight) {
      b.index = plan.weights.size();
      auto c = b.bytes.constant();
      if (!c)
        throw Error("codegen: weight '" + val.name + "' has a symbolic size",
                    Error::Kind::Unsupported);
      b.offset = plan.weight_bytes;
      plan.weight_bytes +=
          uint64_t(*c + kBufferAlignment - 1) / kBufferAlignment * kBufferAlignment;
      plan.weights.push_back(v);
    }
    plan.buffer_of[v] = plan.buffers.size();
    plan.buffers.push_back(std::move(b));
  };
  for (ValueId v : g.inputs()) add_buffer(v);
  for (const Stage& s : plan.stages) {
    add_buffer(s.output);
    for (ValueId v : s.reads) add_buffer(v);
  }

  // Concat in place: when every input of a Concat stage is an arena value that only it reads,
  // written by a pointwise or convolution stage (loops of our own, which can store anywhere), the
  // producers write their slices of the Concat's buffer and the Concat stage does nothing.
  std::map<ValueId, size_t> writer_of, readers;
  for (size_t i = 0; i < plan.stages.size(); ++i) {
    writer_of[plan.stages[i].output] = i;
    for (ValueId v : plan.stages[i].reads) ++readers[v];
  }
  // Whether `v`'s producer may store it at its places in `holder`: a value of the holder's type
  // in the model's outputs or the arena, made by loops of our own that store each element
  // through Buffer::stored_in and also_stored_in (`kinds`; a stage whose producers store its value
  // passes that on, so places chain: attention's output into its transpose, that into a Reshape).
  auto copyable = [&](ValueId v, ValueId holder, std::initializer_list<StageKind> kinds) {
    const Buffer* b = plan.buffer(v);
    const Buffer& h = *plan.buffer(holder);
    auto w = writer_of.find(v);
    if (!b || (b->storage != Storage::Arena && b->storage != Storage::Output) || b->stored_in ||
        (h.storage != Storage::Arena && h.storage != Storage::Output) || b->dtype != h.dtype ||
        w == writer_of.end())
      return false;
    const Stage& producer = plan.stages[w->second];
    return producer.node != ir::kNoNode &&
           std::find(kinds.begin(), kinds.end(), producer.kind) != kinds.end();
  };
  // Whether `v` may live in `holder`'s buffer only: an arena value that nothing else reads.
  auto placeable = [&](ValueId v, ValueId holder, std::initializer_list<StageKind> kinds) {
    return copyable(v, holder, kinds) && plan.buffer(v)->storage == Storage::Arena &&
           readers[v] == 1;
  };
  for (size_t j = 0; j < plan.stages.size(); ++j) {
    Stage& s = plan.stages[j];
    if (s.node == ir::kNoNode || g.node(s.node).op_type != "Concat") continue;
    const ir::Node& n = g.node(s.node);
    std::vector<ValueId> parts;
    for (ValueId in : n.inputs)
      if (in != ir::kNoValue) parts.push_back(in);
    std::set<ValueId> distinct(parts.begin(), parts.end());
    bool ok = distinct.size() == parts.size() && !parts.empty();
    for (ValueId v : parts)
      ok = ok && placeable(v, s.output, {StageKind::Pointwise, StageKind::Conv});
    if (!ok) continue;
    for (ValueId v : parts) {
      Buffer& b = plan.buffers[plan.buffer_of.at(v)];
      b.stored_in = s.output;
      b.placed_by = {s.node};
    }
    s.written_by_producers = true;
  }

  // Layout copies by their producers: a pointwise stage that only moves the elements of one
  // value v (Transposes and ops that keep the linear index, so each element of v lands at one
  // place of the copy) does nothing where v's producer is loops of our own (all but MatMul and
  // Gemm, which may be library calls): it stores each element at that place, instead of in v's
  // own buffer when the copy is v's only reader, else beside it. Multi-head attention's output,
  // which the model transposes back to (batch, sequence, heads x width) for the out-projection's
  // GEMM, is stored so by the attention stage.
  const std::initializer_list<StageKind> storers = {
      StageKind::Pointwise, StageKind::Conv,      StageKind::Attention, StageKind::Reduce,
      StageKind::Softmax,   StageKind::LayerNorm, StageKind::Pool,      StageKind::Rows};
  for (Stage& s : plan.stages) {
    if (s.written_by_producers || !options.layout_copies_by_producers) continue;
    const std::vector<NodeId> path = layout_copy_path(g, s);
    if (path.empty()) continue;
    const ValueId v = g.node(path.front()).inputs[0];
    Buffer& b = plan.buffers[plan.buffer_of.at(v)];
    if (placeable(v, s.output, storers)) {
      b.stored_in = s.output;
      b.placed_by = path;
    } else if (copyable(v, s.output, storers)) {
      b.also_stored_in.push_back({s.output, path});
    } else {
      continue;
    }
    s.written_by_producers = true;
  }
  // A value that only layout copies read (two transposes of it) is kept in the first's buffer
  // and stored beside it in the others': no buffer of its own, which nothing would read.
  for (Buffer& b : plan.buffers) {
    if (b.also_stored_in.empty() || b.storage != Storage::Arena) continue;
    if (readers[b.value] != b.also_stored_in.size()) continue;
    b.stored_in = b.also_stored_in.front().value;
    b.placed_by = std::move(b.also_stored_in.front().by);
    b.also_stored_in.erase(b.also_stored_in.begin());
  }

  // Dims: symbols of the live values, each bound by a named input dim.
  std::set<std::string> symbols;
  for (const Buffer& b : plan.buffers)
    for (const std::string& sym : b.bytes.symbols()) symbols.insert(sym);
  for (const Stage& s : plan.stages) {
    if (s.node == ir::kNoNode) continue;
    for (ValueId v : g.node(s.node).inputs)
      if (v != ir::kNoValue)
        for (const ir::Dim& d : g.value(v).type.shape.dims())
          for (const std::string& sym : d.sym().symbols()) symbols.insert(sym);
  }
  std::set<std::string> bound;
  for (ValueId v : g.inputs())
    for (const ir::Dim& d : g.value(v).type.shape.dims())
      if (!d.is_static() && d.sym().is_known() && d.sym() == ir::SymInt::symbol(d.symbol_name()))
        bound.insert(d.symbol_name());
  for (const std::string& sym : symbols) {
    if (!bound.count(sym))
      throw Error(fmt::format("codegen: dim '{}' is not the size of an input dim, so a run "
                              "cannot bind it; fix it with --dim {}=N",
                              sym, sym),
                  Error::Kind::Unsupported);
    plan.dims.push_back(sym);
  }

  // The arena, by liveness.
  std::vector<Lifetime> lives;
  std::vector<size_t> arena_buffers;
  std::map<ValueId, size_t> life_of;
  for (size_t b = 0; b < plan.buffers.size(); ++b) {
    if (plan.buffers[b].storage != Storage::Arena || plan.buffers[b].stored_in) continue;
    life_of[plan.buffers[b].value] = lives.size();
    lives.push_back({0, 0, plan.buffers[b].bytes, std::nullopt});
    arena_buffers.push_back(b);
  }
  for (size_t i = 0; i < plan.stages.size(); ++i) {
    const Stage& s = plan.stages[i];
    if (auto it = life_of.find(s.output); it != life_of.end())
      lives[it->second].first = lives[it->second].last = i;
  }
  // A Concat's or layout copy's buffer lives from the first stage that stores into it: the one
  // before, where that is a contraction whose store the stage may be printed into (its epilogue).
  for (size_t i = 0; i < plan.stages.size(); ++i) {
    const Stage& s = plan.stages[i];
    const Buffer& b = *plan.buffer(s.output);
    if (b.plain()) continue;
    const bool epilogue =
        i > 0 && takes_epilogue(plan.stages[i - 1].kind) &&
        std::find(s.reads.begin(), s.reads.end(), plan.stages[i - 1].output) != s.reads.end();
    std::vector<ValueId> holders;
    if (b.stored_in) holders.push_back(*b.stored_in);
    for (const Buffer::Place& p : b.also_stored_in) holders.push_back(p.value);
    for (size_t k = 0; k < holders.size(); ++k) {  // and the holders' own places, in turn
      const Buffer& h = *plan.buffer(holders[k]);
      if (h.stored_in) holders.push_back(*h.stored_in);
      for (const Buffer::Place& p : h.also_stored_in) holders.push_back(p.value);
      if (auto it = life_of.find(holders[k]); it != life_of.end())
        lives[it->second].first = std::min(lives[it->second].first, epilogue ? i - 1 : i);
    }
  }
  for (size_t i = 0; i < plan.stages.size(); ++i) {
    if (plan.stages[i].written_by_producers) continue;  // it reads nothing when it runs
    for (ValueId v : plan.stages[i].reads)
      if (auto it = life_of.find(v); it != life_of.end())
        lives[it->second].last = std::max(lives[it->second].last, i);
  }
  // A pointwise or row stage that reads an arena value for the last time, only at the element
  // it writes, may write in place over it when both are arena values of one size. The output
  // of a contraction just before it comes first: the stage then merges into the contraction as
  // its epilogue (a residual Add + Relu after a convolution reads both).
  for (size_t i = 0; i < plan.stages.size(); ++i) {
    Stage& s = plan.stages[i];
    const bool row = s.kind == StageKind::Softmax || s.kind == StageKind::LayerNorm;
    if ((s.kind != StageKind::Pointwise && !row) || s.node == ir::kNoNode) continue;
    std::vector<ValueId> reads(s.reads.begin(), s.reads.end());
    if (i > 0) {
      const Stage& before = plan.stages[i - 1];
      auto it = std::find(reads.begin(), reads.end(), before.output);
      if (takes_epilogue(before.kind) && it != reads.end()) std::rotate(reads.begin(), it, it + 1);
    }
    for (ValueId r : reads) {
      auto in = life_of.find(r);
      if (in == life_of.end() || lives[in->second].last != i ||
          !stage_reads_only_own_element(g, s.node, r, mat, row))
        continue;
      if (!row) s.last_read_at_own_element = r;  // only pointwise epilogues merge
      const Buffer &rb = *plan.buffer(r), &ob = *plan.buffer(s.output);
      auto out = life_of.find(s.output);
      if (out != life_of.end() && rb.bytes == ob.bytes &&
          ir::dtype_size(rb.dtype) == ir::dtype_size(ob.dtype))
        lives[out->second].reuses = in->second;
      break;
    }
  }
  plan.arena = plan_buffers(lives);
  for (size_t k = 0; k < arena_buffers.size(); ++k)
    plan.buffers[arena_buffers[k]].index = plan.arena.slot_of[k];
  for (size_t k = 0; k < arena_buffers.size(); ++k)
    if (auto r = lives[k].reuses; r && plan.arena.slot_of[k] == plan.arena.slot_of[*r])
      plan.stages[lives[k].first].in_place_of = plan.buffers[arena_buffers[*r]].value;
  plan.lifetimes = std::move(lives);
  return plan;
}

std::vector<unsigned char> weights_blob(const KernelPlan& plan) {
  std::vector<unsigned char> blob(plan.weight_bytes, 0);
  for (ValueId v : plan.weights) {
    const Buffer& b = *plan.buffer(v);
    auto t = plan.graph.weight_data(v);
    if (t->dtype() == b.dtype) {
      std::memcpy(blob.data() + b.offset, t->raw(), t->byte_size());
    } else {
      ir::Tensor stored = t->cast(b.dtype);
      std::memcpy(blob.data() + b.offset, stored.raw(), stored.byte_size());
    }
  }
  return blob;
}

std::vector<int64_t> bind_dims(const KernelPlan& plan, const std::vector<ir::Tensor>& inputs) {
  const ir::Graph& g = plan.graph;
  if (inputs.size() != g.inputs().size())
    throw Error(
        fmt::format("{} inputs given for a model with {}", inputs.size(), g.inputs().size()));
  std::map<std::string, int64_t> seen;
  for (size_t i = 0; i < inputs.size(); ++i) {
    const ir::Value& v = g.value(g.inputs()[i]);
    const auto& dims = v.type.shape.dims();
    if (inputs[i].dtype() != v.type.dtype || inputs[i].rank() != dims.size())
      throw Error(fmt::format("input '{}' is {}, the model wants {}", v.name,
                              inputs[i].type().str(), v.type.str()));
    for (size_t k = 0; k < dims.size(); ++k) {
      int64_t got = inputs[i].dims()[k];
      if (dims[k].is_static()) {
        if (dims[k].value() != got)
          throw Error(fmt::format("input '{}' is {}, the model wants {}", v.name,
                                  inputs[i].type().str(), v.type.str()));
      } else if (!dims[k].symbol_name().empty()) {
        auto [it, fresh] = seen.emplace(dims[k].symbol_name(), got);
        if (!fresh && it->second != got)
          throw Error(fmt::format("input '{}' has {} = {}, another input has {}", v.name,
                                  dims[k].symbol_name(), got, it->second));
      }
    }
  }
  std::vector<int64_t> out;
  for (const std::string& d : plan.dims) out.push_back(seen.at(d));
  return out;
}

void specialize_dims(ir::Graph& graph, const std::map<std::string, int64_t>& sizes) {
  for (size_t v = 0; v < graph.values().size(); ++v) {
    ir::Value& val = graph.value(ir::ValueId(v));
    if (!val.type.shape.has_rank()) continue;
    for (ir::Dim& d : val.type.shape.dims())
      if (!d.is_static())
        if (auto x = d.evaluate(sizes)) d = ir::Dim(*x);
    if (val.sym_value) {  // shape computations follow, or a Reshape would disagree with its type
      auto elems = *val.sym_value;
      for (ir::SymInt& e : elems)
        if (auto x = e.evaluate(sizes)) e = ir::SymInt(*x);
      val.sym_value = std::make_shared<const std::vector<ir::SymInt>>(std::move(elems));
    }
  }
}

void make_batch_dynamic(ir::Graph& graph, const std::string& name) {
  for (ir::ValueId v : graph.inputs()) {
    ir::TensorType& t = graph.value(v).type;
    if (t.shape.has_rank() && t.shape.rank() > 0) t.shape[0] = ir::Dim::symbol(name);
  }
  try {
    ir::refine_types(graph, /*strict=*/true);
  } catch (const Error& e) {
    throw Error(
        fmt::format("--dynamic-batch: the types cannot follow a run-time batch: {}", e.what()));
  }
  // Inference admits a Reshape whose element counts agree at some batch only (it is valid at
  // the batch the model was exported with); one build for every batch needs them equal at all.
  for (const ir::Node& n : graph.nodes()) {
    if (n.op_type != "Reshape") continue;
    const ir::TensorType& in = graph.value(n.inputs[0]).type;
    const ir::TensorType& out = graph.value(n.outputs[0]).type;
    ir::SymInt in_n = in.shape.sym_numel(), out_n = out.shape.sym_numel();
    if (!in_n.is_known() || !out_n.is_known()) continue;
    if ((in_n - out_n).constant() != std::optional<int64_t>(0))
      throw Error(fmt::format(
          "--dynamic-batch: Reshape '{}' turns {} into {}, which holds at one batch size only: "
          "the model fixes its batch in a constant shape (export it with a dynamic batch axis)",
          n.name, in.str(), out.str()));
  }
  for (ir::ValueId v : graph.outputs()) {
    const ir::TensorType& t = graph.value(v).type;
    if (!t.shape.has_rank() || t.shape.rank() == 0 || t.shape[0].symbol_name() != name)
      throw Error(
          fmt::format("--dynamic-batch: output '{}' is {}, its leading dim does not follow "
                      "the batch",
                      graph.value(v).name, t.str()));
  }
}

std::vector<bool> nodes_stored_by_producers(const ir::Graph& graph, const PlanOptions& options) {
  std::vector<bool> idle(graph.nodes().size(), false);
  KernelPlan plan;
  try {
    plan = make_plan(graph, options);
  } catch (const std::exception&) {  // Error naming what cannot be planned, or a bug's throw
    return idle;
  }
  for (const Step& step : plan.steps)
    if (step.node != ir::kNoNode && !step.stages.empty())
      idle[step.node] = std::all_of(step.stages.begin(), step.stages.end(),
                                    [&](size_t i) { return plan.stages[i].written_by_producers; });
  return idle;
}

std::vector<int64_t> output_dims(const KernelPlan& plan, size_t output,
                                 const std::vector<int64_t>& dims) {
  std::map<std::string, int64_t> binding;
  for (size_t i = 0; i < plan.dims.size(); ++i) binding[plan.dims[i]] = dims[i];
  const ir::Value& v = plan.graph.value(plan.graph.outputs()[output]);
  std::vector<int64_t> out;
  for (const ir::Dim& d : v.type.shape.dims()) {
    auto x = d.evaluate(binding);
    if (!x) throw Error("codegen: output '" + v.name + "' has a dim no input fixes");
    out.push_back(*x);
  }
  return out;
}

}  // namespace eqfuse::codegen
