// The printer's row stages: Reduce*, Softmax, LayerNormalization and pooling (printer_writer.h).
#include "codegen/printer_writer.h"

namespace eqfuse::codegen::detail {

std::string Writer::row_reduction(const std::string& op, const std::string& ct,
                                  const std::string& count, const RowPass& pass) {
  std::string acc = fresh("acc");
  const bool is_max = op == "ReduceMax", is_min = op == "ReduceMin";
  const bool simd_sums = target_ == Target::Cpu && (ct == "float" || ct == "double");
  if (op == "ReduceLogSumExp") {
    std::string m = fresh("m");
    line(fmt::format("{} {} = ({})(-INFINITY);", ct, m, ct));
    pass([&](const std::string& x) { line(fmt::format("{} = eqf_max({}, {});", m, m, x)); });
    row_combine("max", m);
    line(fmt::format("{} {} = {};", ct, acc, literal(0, ct)));
    if (simd_sums) simd_sum_ = acc;
    pass([&](const std::string& x) { line(fmt::format("{} += eqf_exp({} - {});", acc, x, m)); });
    simd_sum_.clear();
    row_combine("sum", acc);
    return fmt::format("{} + eqf_log({})", m, acc);
  }
  const std::string init = is_max   ? (ct == "int64_t" ? "INT64_MIN" : "(" + ct + ")(-INFINITY)")
                           : is_min ? (ct == "int64_t" ? "INT64_MAX" : "(" + ct + ")INFINITY")
                           : op == "ReduceProd" ? literal(1, ct)
                                                : literal(0, ct);
  line(fmt::format("{} {} = {};", ct, acc, init));
  if (simd_sums && !is_max && !is_min && op != "ReduceProd") simd_sum_ = acc;
  pass([&](const std::string& x) {
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
  simd_sum_.clear();
  row_combine(is_max ? "max" : is_min ? "min" : op == "ReduceProd" ? "prod" : "sum", acc);
  if (op == "ReduceMean") return fmt::format("{} / ({})({})", acc, ct, count);
  if (op == "ReduceL2") return fmt::format("eqf_sqrt({})", acc);
  if (op == "ReduceLogSum") return fmt::format("eqf_log({})", acc);
  return acc;
}

std::string Writer::body_arg_reduce(const Stage& s) {
  const ir::Node& n = g_.node(s.node);
  ir::OpContext ctx = ir::make_context(g_, n);
  const ValueId in = n.inputs[0], out = s.output;
  const size_t r = rank(in);
  int64_t axis = ctx.attr_int("axis");
  if (axis < 0) axis += int64_t(r);
  const bool keep = ctx.attr_int("keepdims") != 0, last = ctx.attr_int("select_last_index") != 0;
  const Index oidx = decompose_value("i", out);
  Index in_idx(r);
  const std::string j = fresh("k");
  for (size_t k = 0, o = 0; k < r; ++k) {
    if (int64_t(k) == axis) {
      in_idx[k] = j;
      if (keep) ++o;
    } else {
      in_idx[k] = oidx[o++];
    }
  }
  // A thread per output element walks its axis: the first (or last) index of the extreme, a NaN
  // the extreme of either op (eqf_arg_wins), as the interpreter's kernel_arg. On CUDA, where the
  // axis is the last one (a row of consecutive elements) and at least a warp's width or of run-time
  // extent, a warp takes each output element (a block where the row is static and over
  // kMaxCachedRow): each lane walks its part of the row so, and the lanes combine their (extreme,
  // index) pairs (eqf_warp_arg, eqf_block_arg).
  const std::string ct = compute_type({type(in).dtype}), best = fresh("best"), at = fresh("at");
  const ir::Dim& extent = type(in).shape[size_t(axis)];
  choose_row_threads(size_t(axis) + 1 == r, ct,
                     extent.is_static() ? std::optional<int64_t>(extent.value()) : std::nullopt);
  line(fmt::format("{} {} = 0;", ct, best));
  line(fmt::format("int64_t {} = -1;", at));
  open(row_loop(j, dim(in, size_t(axis))));
  const std::string x = elem(in, in_idx);
  const std::string v = storage_type(type(in).dtype) == ct ? x : "(" + ct + ")" + x;
  const bool is_max = n.op_type == "ArgMax";
  const std::string vv = fresh("v");
  line(fmt::format("const {} {} = {};", ct, vv, v));
  open(fmt::format("if (eqf_arg_wins({}, {}, {}, {}, {}, {}))", vv, j, best, at, is_max, last));
  line(fmt::format("{} = {};", best, vv));
  line(fmt::format("{} = {};", at, j));
  close();
  close();
  if (warp_rows_) {
    line(fmt::format("eqf_{}_arg({}, {}, {}, {});", block_rows_ ? "block" : "warp", best, at,
                     is_max, last));
    open(block_rows_ ? "if (threadIdx.x == 0)" : "if (lane == 0)");
  }
  line(store(out, "i", oidx, fmt::format("{} < 0 ? 0 : {}", at, at)));
  if (warp_rows_) close();
  return numel(out);
}

std::string Writer::body_reduce(const Stage& s) {
  const ir::Node& n = g_.node(s.node);
  if (n.op_type == "ArgMax" || n.op_type == "ArgMin") return body_arg_reduce(s);
  if (n.op_type == "ConvTranspose") return body_conv_transpose(s);
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
        line(store(out, "i", idx, elem(in, idx)));
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
  choose_row_threads(suffix, ct, static_count);
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
      for (size_t k : loops) {
        if (k == loops.back()) simd_sum_loop();  // the innermost loop
        open(fmt::format("for (int64_t {} = 0; {} < {}; ++{})", in_idx[k], in_idx[k], dim(in, k),
                         in_idx[k]));
      }
      if (loops.empty()) open("");
    }
    std::string x = elem(in, in_idx);
    body(storage_type(type(in).dtype) == ct ? x : "(" + ct + ")" + x);
    for (size_t k = 0; k < (warp_rows_ ? 1 : std::max<size_t>(loops.size(), 1)); ++k) close();
  };
  const std::string result = row_reduction(op, ct, count, loop_nest);
  // Every lane holds the combined result; one stores it.
  if (warp_rows_) open(block_rows_ ? "if (threadIdx.x == 0)" : "if (lane == 0)");
  std::string st = storage_type(type(out).dtype);
  line(store(out, "i", oidx, fmt::format("eqf_store<{}, {}>({})", st, ct, result)));
  if (warp_rows_) close();
  return numel(out);
}

std::set<ValueId> Writer::shared_row_values(const Stage& s) const {
  const ir::Shape& row_shape = type(s.output).shape;
  std::set<ValueId> reductions;
  for (ir::NodeId n : s.row_reductions) reductions.insert(g_.node(n).outputs[0]);
  // Each pass's start: a reduction's input, and the final pass's root node's inputs.
  std::vector<std::vector<ValueId>> passes;
  for (ir::NodeId n : s.row_reductions) passes.push_back({g_.node(n).inputs[0]});
  const ir::Node& root = g_.node(s.node);
  passes.emplace_back();
  for (size_t k : data_inputs(root))
    if (k < root.inputs.size() && root.inputs[k] != ir::kNoValue)
      passes.back().push_back(root.inputs[k]);
  // The values of the row's shape a pass reaches through elementwise ops, not entering those
  // `held` in registers (which it reads there).
  auto reached = [&](const std::vector<ValueId>& start, const std::set<ValueId>& held) {
    std::set<ValueId> found;
    std::vector<ValueId> todo;
    for (ValueId v : start)
      if (type(v).shape == row_shape && !reductions.count(v)) todo.push_back(v);
    while (!todo.empty()) {
      const ValueId v = todo.back();
      todo.pop_back();
      if (!found.insert(v).second || held.count(v) || plan_.buffer(v)) continue;
      const ir::NodeId p = g_.value(v).producer;
      if (p == ir::kNoNode || !is_elementwise(g_.node(p)) || g_.node(p).op_type == "Expand")
        continue;
      for (size_t k : data_inputs(g_.node(p))) {
        const ValueId in = g_.node(p).inputs[k];
        if (in != ir::kNoValue && type(in).shape == row_shape && !reductions.count(in))
          todo.push_back(in);
      }
    }
    return found;
  };
  // Candidates: what two passes or more reach. In pass order, a pass reads from registers the
  // candidates an earlier pass reached (and stops there), and fills the others it reaches.
  std::map<ValueId, int> count;
  for (const auto& pass : passes)
    for (ValueId v : reached(pass, {})) ++count[v];
  std::set<ValueId> filled, read_again;
  for (const auto& pass : passes) {
    for (ValueId v : reached(pass, filled)) {
      const std::string t = compute_type({type(v).dtype});
      if (filled.count(v))
        read_again.insert(v);
      else if (count[v] > 1 && (t == "float" || t == "double"))  // a mask is recomputed
        filled.insert(v);
    }
  }
  return read_again;
}

std::string Writer::body_rows(const Stage& s) {
  const ValueId out = s.output;
  const size_t r = rank(out);
  std::vector<std::string> lead;
  std::vector<bool> lead_one;
  std::string rows = "1";
  for (size_t k = 0; k + 1 < r; ++k) {
    lead.push_back(dim(out, k));
    lead_one.push_back(dim_is_one(out, k));
    rows = imul(rows, dim(out, k));
  }
  Index idx = decompose("i", lead, lead_one);
  const std::string ct = compute_type({type(out).dtype});
  const std::string cols = dim(out, r - 1);
  const ir::Dim& last = type(out).shape[r - 1];
  const std::optional<int64_t> static_cols =
      last.is_static() ? std::optional<int64_t>(last.value()) : std::nullopt;
  // Each reduction accumulates in its own type (the output may be a mask or integers).
  auto reduction_type = [&](ir::NodeId n) {
    return compute_type({type(g_.node(n).outputs[0]).dtype});
  };
  // As body_reduce: a warp per row (a block over kMaxCachedRow) where every reduction is of
  // floating point, else a thread per row.
  warp_rows_ = target_ == Target::Cuda && (!static_cols || *static_cols >= 32);
  for (ir::NodeId n : s.row_reductions)
    warp_rows_ = warp_rows_ && (reduction_type(n) == "float" || reduction_type(n) == "double");
  const std::string j = fresh("j");
  RowPasses row = row_passes(j, cols, static_cols, ct, /*cache_array=*/false);
  idx.push_back(dim_is_one(out, r - 1) ? "0" : j);
  if (row.chunks)
    row_cache_ =
        RowCache{idx, "", row.chunks, out_.size(), depth_, shared_row_values(s), {}, {}, {}};
  // A pass over the row: `body` takes the element `element` prints, as `as`.
  auto pass_over = [&](const std::function<std::string()>& element, const std::string& as) {
    return [&, element, as](const std::function<void(const std::string&)>& body) {
      open_row(row);
      if (row_cache_) row_cache_->chunk = row.chunk;
      body("(" + as + ")" + element());
      close_row(row);
      if (row_cache_) {
        row_cache_->filled.insert(row_cache_->filling.begin(), row_cache_->filling.end());
        row_cache_->filling.clear();
      }
    };
  };
  for (ir::NodeId reduction : s.row_reductions) {
    const ir::Node& n = g_.node(reduction);
    const ValueId in = n.inputs[0];
    const std::string rt = reduction_type(reduction);
    const std::string result = row_reduction(n.op_type, rt, dim(in, rank(in) - 1),
                                             pass_over([&, in] { return elem(in, idx); }, rt));
    const std::string var = fresh("r");
    line(fmt::format("const {} {} = {};", rt, var, result));
    row_scalars_[n.outputs[0]] = var;
  }
  pass_over([&] { return compute(g_.node(s.node), idx); },
            ct)([&](const std::string& v) { line(store(out, linear(out, idx), idx, v)); });
  if (row_cache_) {  // the registers the passes filled, declared before them
    std::string decls;
    const std::string indent(size_t(row_cache_->depth) * 2, ' ');
    for (const auto& [v, array] : row_cache_->arrays)  // (void): a pass may not read it back
      decls += fmt::format("{}{} {}[{}];\n{}(void){};\n", indent, compute_type({type(v).dtype}),
                           array, row_cache_->chunks, indent, array);
    out_.insert(row_cache_->declare_at, decls);
  }
  row_cache_.reset();
  row_scalars_.clear();
  return rows;
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
  line(store(out, linear(out, idx), idx,
             log ? fmt::format("({}){} - {} - log_{}", ct, x, m, sum)
                 : fmt::format("eqf_exp(({}){} - {}) * inv_{}", ct, x, m, sum)));
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
      y = fmt::format("{} * ({}){}", y, ct,
                      elem(n.inputs[1], broadcast_index(n.inputs[1], tail, out)));
    if (n.inputs.size() > 2 && n.inputs[2] != ir::kNoValue)
      y = fmt::format("{} + ({}){}", y, ct,
                      elem(n.inputs[2], broadcast_index(n.inputs[2], tail, out)));
    line(store(out, linear(out, idx), idx, y));
  }
  close_row(row);
  return rows;
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
  line(store(out, "i", idx,
             is_max ? acc : fmt::format("{} / ({})({} > 0 ? {} : 1)", acc, ct, cnt, cnt)));
  return numel(out);
}

std::string Writer::body_pool_rows(const Stage& s) {
  const ir::Node& n = g_.node(s.node);
  ir::OpContext ctx = ir::make_context(g_, n);
  ValueId x = n.inputs[0], out = s.output;
  auto kernel = ctx.attr_ints("kernel_shape");
  auto win = window_of(g_, n, kernel);
  const bool is_max = n.op_type == "MaxPool";
  const bool include_pad = !is_max && ctx.attr_int("count_include_pad") != 0;
  Index r = decompose("i", {dim(out, 0), dim(out, 1), dim(out, 2)},
                      {dim_is_one(out, 0), dim_is_one(out, 1), dim_is_one(out, 2)});
  const std::string ct = compute_type({type(out).dtype});
  const std::string OW = dim(out, 3), H = dim(x, 2), W = dim(x, 3);
  const int64_t sw = win[1].stride;
  open(fmt::format("for (int64_t q0 = 0; q0 < {}; q0 += {})", OW, kPoolChunk));
  line(fmt::format("const int64_t qn = {} - q0 < {} ? {} - q0 : {};", OW, kPoolChunk, OW,
                   kPoolChunk));
  line(fmt::format("{} acc[{}];", ct, kPoolChunk));
  if (is_max) {
    line(fmt::format("for (int64_t u = 0; u < qn; ++u) acc[u] = ({})(-INFINITY);", ct));
  } else {
    line(fmt::format("int64_t cnt[{}];", kPoolChunk));
    line("for (int64_t u = 0; u < qn; ++u) acc[u] = 0, cnt[u] = 0;");
  }
  // The taps in the element form's order (body_pool), so that each output sums the same
  // elements in the same order.
  open(fmt::format("for (int64_t kh = 0; kh < {}; ++kh)", kernel[0]));
  line(fmt::format("const int64_t ih = {} * {} - {} + kh * {};", r[2], win[0].stride,
                   win[0].pad_begin, win[0].dilation));
  if (include_pad) line(fmt::format("if (ih >= {} + {}) continue;", H, win[0].pad_end));
  open(fmt::format("for (int64_t kw = 0; kw < {}; ++kw)", kernel[1]));
  line(fmt::format("const int64_t off = kw * {} - {};", win[1].dilation, win[1].pad_begin));
  // Outputs q of the row whose tap (q * sw + off) lies in the row: [qlo, qhi).
  line(fmt::format("const int64_t qlo = off >= 0 ? 0 : (-off + {}) / {};", sw - 1, sw));
  line(
      fmt::format("const int64_t qhi = {} - 1 - off < 0 ? 0 : ({} - 1 - off) / {} + 1;", W, W, sw));
  line("const int64_t ulo = qlo - q0 > 0 ? qlo - q0 : 0;");
  line("const int64_t uhi = qhi - q0 < qn ? qhi - q0 : qn;");
  if (include_pad) {  // every tap before the end padding counts
    line(fmt::format(
        "const int64_t qpad = {} + {} - 1 - off < 0 ? 0 : ({} + {} - 1 - off) / {} + 1;", W,
        win[1].pad_end, W, win[1].pad_end, sw));
    line("for (int64_t u = 0; u < qn && u < qpad - q0; ++u) ++cnt[u];");
  }
  open(fmt::format("if (ih >= 0 && ih < {})", H));
  line("#pragma omp simd");
  open("for (int64_t u = ulo; u < uhi; ++u)");
  std::string v = elem(x, Index{r[0], r[1], "ih", fmt::format("(q0 + u) * {} + off", sw)});
  if (is_max)
    line(fmt::format("acc[u] = eqf_max(acc[u], ({}){});", ct, v));
  else
    line(fmt::format("acc[u] += ({}){};", ct, v));
  if (!is_max && !include_pad) line("++cnt[u];");
  close();
  close();
  close();
  close();
  open("for (int64_t u = 0; u < qn; ++u)");
  Index at = {r[0], r[1], r[2], "(q0 + u)"};
  line(store(out, linear(out, at), at,
             is_max ? "acc[u]" : fmt::format("acc[u] / ({})(cnt[u] > 0 ? cnt[u] : 1)", ct)));
  close();
  close();
  return fmt::format("{} * {} * {}", dim(out, 0), dim(out, 1), dim(out, 2));
}

}  // namespace eqfuse::codegen::detail
