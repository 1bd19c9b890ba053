#include "codegen/printer.h"

#include <numeric>

#include "codegen/printer_writer.h"
#include "ir/scalar_expr.h"

namespace eqfuse::codegen {
namespace detail {

void Writer::store_output(ValueId out, const std::string& lin, const Index& at,
                          const std::string& v) {
  if (!epilogue_) {
    line(store(out, lin, at, v));
    return;
  }
  open("");
  // `lin` is out's linear index at `at`, and so every value's of out's shape: an operand of the
  // epilogue read there (a residual) takes it as it is, not recombined from `at` (whose
  // coordinates a store loop may have split from it by division, which kept the loads scalar).
  scopes_.back()[split_key(out, at)] = lin;
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
  line(store(e, lin, idx, value));
  substitute_.reset();
  close();
}

std::string Writer::elem(ValueId v, const Index& idx) {
  if (substitute_ && substitute_->first == v) return substitute_->second;
  if (auto it = row_scalars_.find(v); it != row_scalars_.end()) return it->second;
  std::string key = std::to_string(v);
  for (const std::string& i : idx) key += "," + i;
  if (const std::string* hit = cached(key)) return *hit;
  // A rows stage's value at the row's element that several passes read: the first computes it
  // into registers, the later ones read them.
  const bool row_cached = row_cache_ && row_cache_->values.count(v) && idx == row_cache_->at;
  if (row_cached && row_cache_->filled.count(v)) {
    const std::string slot = fmt::format("{}[{}]", row_cache_->arrays.at(v), row_cache_->chunk);
    scopes_.back()[key] = slot;
    return slot;
  }
  std::string var = elem_uncached(v, idx);
  if (row_cached) {
    auto [array, fresh_array] = row_cache_->arrays.emplace(v, "");
    if (fresh_array) array->second = fresh("row");
    line(fmt::format("{}[{}] = ({}){};", array->second, row_cache_->chunk,
                     compute_type({type(v).dtype}), var));
    row_cache_->filling.insert(v);
  }
  scopes_.back()[key] = var;
  return var;
}

std::string Writer::elem_uncached(ValueId v, const Index& idx) {
  std::string var;
  if (const Buffer* b = plan_.buffer(v)) {
    if (b->stored_in)
      throw Error("codegen: internal: '" + g_.value(v).name + "' is read, but kept in '" +
                      g_.value(*b->stored_in).name + "'",
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
  if (op == "Expand") return elem(n.inputs[0], broadcast_index(n.inputs[0], idx, out));
  if (op == "Slice") return slice(n, idx);
  if (op == "Concat") return concat(n, idx);
  if (op == "Gather") return gather(n, idx);
  if (op == "Shape") return shape(n, idx);
  if (op == "BatchNormalization") return batch_norm(n, idx);
  if (op == "Trilu") return trilu(n, idx);
  if (op == "Tile") return tile(n, idx);
  if (op == "DepthToSpace" || op == "SpaceToDepth") return depth_space(n, idx);
  if (op == "GatherElements") return gather_elements(n, idx);
  if (op == "GatherND") return gather_nd(n, idx);
  if (op == "Pad") return pad(n, idx);
  if (op == "OneHot") return one_hot(n, idx);
  if (op == "Resize" || op == "Upsample") return resize(n, idx);
  if (op == "ConstantOfShape" || op == "EyeLike" || op == "Range") return generated(n, idx);
  return scalar(n, idx);
}

static std::string print_scalar(const ir::ScalarExpr& e, const std::string& type,
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

static void input_refs(const ir::ScalarExpr& e, std::set<int64_t>& refs) {
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
  // A predicate (Equal, IsNaN, And...) computes in its inputs' type, not in its bool output's.
  if (type(out).dtype == DType::boolean) types.erase(types.begin());
  std::string ct = compute_type(types);
  std::set<int64_t> refs;
  input_refs(*e, refs);
  // Pow by a weight that is 2 (LayerNorm's variance as exported): one rounded product, as the
  // interpreter's pow in double rounds it, instead of a call to powf for every element. The
  // exponent, a weight of one element, is read here and not loaded by the code.
  const bool square = n.op_type == "Pow" && is_floating(type(out).dtype) && n.inputs.size() == 2 &&
                      g_.value(n.inputs[1]).is_weight() &&
                      type(n.inputs[1]).shape.numel() == int64_t{1} &&
                      g_.weight_data(n.inputs[1])->get(0) == 2.0;
  if (square) refs = {0};
  std::vector<std::string> operands(n.inputs.size());
  for (int64_t k : refs) {
    ValueId in = n.inputs.at(size_t(k));
    std::string v = elem(in, broadcast_index(in, idx, out));
    operands[size_t(k)] = storage_type(type(in).dtype) == ct ? v : "(" + ct + ")" + v;
  }
  std::string expr = square ? fmt::format("eqf_mul({}, {})", operands[0], operands[0])
                            : print_scalar(*e, ct, operands);
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
  // From the last axes: runs of output axes and of input axes of the same size (static sizes
  // whose products meet, an axis the same on both sides, size-1 axes on their own: a Squeeze or
  // Unsqueeze is all such) map through their own small linear index, so that a split or merge of
  // heads costs no division by the other axes; the axes before the first run that does not meet,
  // through one linear index as a whole. Both hold because idx is an element of `out`: each run's
  // coordinates are in range.
  Index in_idx(a.size(), "0");
  std::vector<std::string> all_b;
  for (size_t k = 0; k < b.size(); ++k) all_b.push_back(dim(out, k));
  auto linear_of = [&](size_t j0, size_t j1) {  // output axes [j0, j1) as one index
    std::string lin = "0";
    for (size_t k = j0; k < j1; ++k)
      lin = iadd(imul(lin.size() > 1 && lin != "0" ? "(" + lin + ")" : lin, all_b[k]), idx[k]);
    return lin;
  };
  // Input axes [i0, i1) from the index `lin` of their run.
  auto place = [&](size_t i0, size_t i1, const std::string& lin) {
    if (i1 == i0) return;
    if (i1 - i0 == 1) {
      in_idx[i0] = lin;
      return;
    }
    std::vector<std::string> dims;
    std::vector<bool> one;
    for (size_t k = i0; k < i1; ++k) {
      dims.push_back(dim(in, k));
      one.push_back(dim_is_one(in, k));
    }
    std::string l = fresh("l");
    line(fmt::format("const int64_t {} = {};", l, lin));
    Index part = decompose(l, dims, one);
    for (size_t k = i0; k < i1; ++k) in_idx[k] = part[k - i0];
  };
  auto is_one = [](const ir::Dim& d) { return d.is_static() && d.value() == 1; };
  size_t i = a.size(), j = b.size();
  while (i > 0 && j > 0) {
    if (is_one(a[i - 1])) {
      --i;
      continue;
    }
    if (is_one(b[j - 1])) {
      --j;
      continue;
    }
    if (a[i - 1] == b[j - 1]) {
      in_idx[i - 1] = idx[j - 1];
      --i, --j;
      continue;
    }
    if (!a[i - 1].is_static() || !b[j - 1].is_static()) break;
    size_t i0 = i - 1, j0 = j - 1;
    int64_t pa = a[i0].value(), pb = b[j0].value();
    while (pa != pb) {
      if (pa < pb && i0 > 0 && a[i0 - 1].is_static())
        pa *= a[--i0].value();
      else if (pb < pa && j0 > 0 && b[j0 - 1].is_static())
        pb *= b[--j0].value();
      else
        break;
    }
    if (pa != pb) break;
    place(i0, i, linear_of(j0, j));
    i = i0, j = j0;
  }
  if (j > 0)
    place(0, i, linear_of(0, j));  // the rest of the input's axes (none: sizes of 1, all "0")
  return elem(in, in_idx);
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
  if (target_ == Target::Cpu && pointwise_rows(out)) return body_pointwise_rows(s);
  Index idx = decompose_value("i", out);
  std::string v = s.node == ir::kNoNode ? elem(s.source, idx) : compute(g_.node(s.node), idx);
  const DType stored = plan_.buffer(out)->dtype;
  if (group4_ && !group_vector(stored).empty() &&
      (type(out).dtype == DType::f32 || type(out).dtype == stored)) {
    used_.insert(out);
    line(fmt::format("go[k] = (float){};", v));
    if (const std::string copies = store_copies(out, "i", idx, v); !copies.empty()) line(copies);
  } else {
    line(store(out, "i", idx, v));
  }
  return numel(out);
}

bool Writer::pointwise_rows(ValueId out) const {
  const size_t r = rank(out);
  if (r < 2) return false;  // one row: no items to share among threads
  const ir::Dim& last = type(out).shape[r - 1];
  return !last.is_static() || last.value() >= kPointwiseRow;
}

std::string Writer::body_pointwise_rows(const Stage& s) {
  ValueId out = s.output;
  const size_t r = rank(out);
  std::vector<std::string> outer;
  std::vector<bool> one;
  for (size_t k = 0; k + 1 < r; ++k) {
    outer.push_back(dim(out, k));
    one.push_back(dim_is_one(out, k));
  }
  Index idx = decompose("i", outer, one);
  const std::string L = dim(out, r - 1);
  line("#pragma omp simd");
  open(fmt::format("for (int64_t j = 0; j < {}; ++j)", L));
  line(fmt::format("const int64_t e = i * {} + j;", L));  // the element's linear index
  line("(void)e;");  // unread where every place is stored by index
  idx.push_back("j");
  std::vector<std::string> dims = outer;
  dims.push_back(L);
  scopes_.back()[split_key(dims, idx)] = "e";
  std::string v = s.node == ir::kNoNode ? elem(s.source, idx) : compute(g_.node(s.node), idx);
  line(store(out, "e", idx, v));
  close();
  return std::accumulate(outer.begin(), outer.end(), std::string("1"), imul);
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
    r.signature += v == output || stored_.count(v)
                       ? fmt::format(", {}*{} {}", t, restrict, p)
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
                                 const std::string& items, std::string& functions) {
  std::string body = std::move(out_);
  used_.insert(output);
  Parameters params = parameters(output);
  functions += head + fmt::format("static void {}({}) {{\n{}  const int64_t n = {};\n", name,
                                  params.signature, dims_prologue(), items);
  functions += "#pragma omp for schedule(static)\n";
  functions += "  for (int64_t i = 0; i < n; ++i) {\n" + body + "  }\n}\n\n";
  return params.args;
}

void Writer::begin_body() {
  attention_mma_ = false;
  out_.clear();
  used_.clear();
  stored_.clear();
  scopes_.clear();
  scopes_.emplace_back();
  counter_ = 0;
  depth_ = 2;
}

void Writer::stage(size_t index, std::string& functions, std::string& calls) {
  const Stage& s = plan_.stages[index];
  if (s.weight_blocks && target_ != Target::Cpu)
    throw Error(
        fmt::format("codegen: {} '{}' reads its weights reordered (blocks or panels), which "
                    "only the C++ twin's plans have",
                    g_.node(s.node).op_type, g_.node(s.node).name),
        Error::Kind::Internal);
  // The C++ twin times each stage from the clock when profiling (CUDA records events below).
  // Under CBLAS the epilogue after a product is a stage of its own, timed where the product's
  // call prints it.
  if (target_ == Target::Cpu) {
    std::string mark =
        fmt::format("#pragma omp master\n  if (prof) prof[{}] = eqf_clock_ms();\n", index);
    if (merged_stage_ == index && index > 0 && forms[index - 1].name == "cblas or loops")
      mark = "#if !defined(EQFUSE_CBLAS)\n" + mark + "#endif\n";
    calls += mark;
  }
  // Printed inside the contraction before it, or a Concat or layout copy its producers stored.
  if (lt_fallback_ == index) {  // computed by the cuBLASLt call before it, else its kernel
    lt_fallback_.reset();
    std::string own;
    stage(index, functions, own);
    calls += fmt::format("  if (eqf_unfused_s{}) {{\n{}  }} else {{\n    {}\n  }}\n", index - 1,
                         own, target_ == Target::Cuda ? record_event(index) : "");
    forms[index] = {StageForm::Runs::Elsewhere, "epilogue", 0, index - 1};
    return;
  }
  if (merged_stage_ == index || s.written_by_producers) {
    forms[index] = {StageForm::Runs::Elsewhere, s.written_by_producers ? "producers" : "epilogue",
                    0, std::nullopt};
    if (merged_stage_ == index) {
      forms[index].by = index - 1;
      if (forms[index - 1].name == "cblas or loops") forms[index].name = "epilogue or loops";
      merged_stage_.reset();
    }
    if (s.written_by_producers)
      functions += fmt::format("// stage {}: {} -> '{}': its producers stored it\n\n", index,
                               g_.node(s.node).op_type, g_.value(s.output).name);
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
  // check). Layout copies stored beside the value take each element where it is computed.
  const bool groups_of_4 = target_ == Target::Cuda && s.kind == StageKind::Pointwise &&
                           library.empty() && !plan_.buffer(s.output)->stored_in;
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
                       epilogue_items, blas_functions);
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
    const bool c_kernel = c.c != ir::kNoValue && c.beta != 0 && !lt;
    forms[index] = {StageForm::Runs::Library, lt ? "cublaslt" : "cublas", c_kernel ? 1 : 0,
                    std::nullopt};
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
      case StageKind::Rows:
        items = body_rows(s);
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
        items = target_ == Target::Cpu && rank(g_.node(s.node).inputs[0]) == 4 ? body_pool_rows(s)
                                                                               : body_pool(s);
        break;
      case StageKind::Attention:
        items = body_attention(s);
        break;
    }
  }
  if (library.empty()) forms[index] = own_form(s, conv_tiles, !blas_calls.empty());
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
    head += fmt::format("//   at its places in {} '{}'\n",
                        g_.node(g_.value(written).producer).op_type, g_.value(written).name);
  epilogue_ = nullptr;
  std::string name = fmt::format("s{}", index);
  if (target_ == Target::Cpu) {
    std::string own;
    std::string args = cpu_function(name, head, written, items, own);
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
    // A tree builds it where it is built with cuDNN; a hosted device unit (NVRTC, which gets no
    // defines) always has it, for a host unit that may be built with cuDNN.
    functions += hosted_ ? fn : "#if defined(EQFUSE_CUDNN)\n" + fn + "#endif\n\n";
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

StageForm Writer::own_form(const Stage& s, const std::vector<ConvTile>& conv_tiles,
                           bool cblas) const {
  StageForm f;
  if (target_ == Target::Cpu) {
    f.name = cblas ? "cblas or loops" : "loops";
    return f;
  }
  switch (s.kind) {
    case StageKind::Pointwise:
      f.name = s.node == ir::kNoNode ? "copy" : "pointwise";
      break;
    case StageKind::Reduce:
    case StageKind::Rows:
    case StageKind::Softmax:
    case StageKind::LayerNorm:
      f.name = block_rows_ ? "block rows" : warp_rows_ ? "warp rows" : "thread rows";
      break;
    case StageKind::Pool:
      f.name = "pool";
      break;
    case StageKind::MatMul:
    case StageKind::Gemm:
      f.name = "gemm elements";
      break;
    case StageKind::Conv:
      f.name = conv_tiles.empty() ? "conv direct" : "conv tiles";
      if (cudnn_conv(s)) f.name += " or cudnn";
      break;
    case StageKind::Attention:
      f.name = attention_mma_ ? "attention mma" : "attention";
      break;
  }
  return f;
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

}  // namespace detail
}  // namespace eqfuse::codegen
