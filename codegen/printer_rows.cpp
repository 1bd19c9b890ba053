// The printer's row stages: Reduce*, Softmax, LayerNormalization and pooling (printer_writer.h).
#include "codegen/printer_writer.h"

namespace eqfuse::codegen::detail {

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
  line(store(out, "i", oidx, fmt::format("eqf_store<{}, {}>({})", st, ct, result)));
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
      y = fmt::format("{} * ({}){}", y, ct, elem(n.inputs[1], broadcast_index(n.inputs[1], tail)));
    if (n.inputs.size() > 2 && n.inputs[2] != ir::kNoValue)
      y = fmt::format("{} + ({}){}", y, ct, elem(n.inputs[2], broadcast_index(n.inputs[2], tail)));
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

}  // namespace eqfuse::codegen::detail
