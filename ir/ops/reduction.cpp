// Op group "reduction": ReduceSum/Mean/Max/Min/Prod/L1/L2/SumSquare/LogSum/LogSumExp (axes as
// attribute or input, keepdims, noop_with_empty_axes), ArgMax/ArgMin (select_last_index),
// Softmax and LogSoftmax. Semantics of opset 18 for the Reduce ops (where axes may come as an
// input) and of opset 13+ for Softmax (one axis, default -1); the frontend rewrites the 2-D
// flattening of Softmax before opset 13. Kernels accumulate in double (int64 for integer
// tensors) so long sums stay exact enough to be the reference.
#include <fmt/format.h>

#include <cmath>
#include <limits>

#include "ir/broadcast.h"
#include "ir/index_expr.h"
#include "ir/op_table.h"
#include "ir/scalar_expr.h"

namespace eqfuse::ir {

namespace {

enum class Reduce { Sum, Mean, Max, Min, Prod, L1, L2, SumSquare, LogSum, LogSumExp };

struct ReduceAxes {
  std::vector<bool> reduced;  // per input dim
  bool known = true;          // axes given as a non-constant input
  bool noop = false;
};

ReduceAxes reduce_axes(const OpContext& ctx, int64_t rank) {
  ReduceAxes r;
  r.reduced.assign(static_cast<size_t>(rank), false);
  std::optional<std::vector<int64_t>> axes = ctx.ints_attr_or_input("axes", 1);
  if (!axes) {
    if (ctx.has_input(1)) {
      r.known = false;
      return r;
    }
    axes = std::vector<int64_t>{};
  }
  if (axes->empty()) {
    if (ctx.attr_int("noop_with_empty_axes") != 0) {
      r.noop = true;
    } else {
      r.reduced.assign(static_cast<size_t>(rank), true);
    }
    return r;
  }
  try {
    for (int64_t a : normalize_axes(*axes, rank)) r.reduced[static_cast<size_t>(a)] = true;
  } catch (const Error& e) {
    ctx.fail(e.what());
  }
  return r;
}

std::vector<TensorType> infer_reduce(const OpContext& ctx) {
  const TensorType& x = ctx.input_type(0);
  if (x.dtype == DType::boolean) ctx.fail("does not take bool inputs");
  if (!x.shape.has_rank()) return {TensorType{x.dtype, Shape::unranked()}};
  auto rank = static_cast<int64_t>(x.shape.rank());
  ReduceAxes r = reduce_axes(ctx, rank);
  bool keep = ctx.attr_int("keepdims") != 0;
  if (!r.known) {
    if (!keep) return {TensorType{x.dtype, Shape::unranked()}};
    return {TensorType{x.dtype, Shape(std::vector<Dim>(x.shape.rank(), Dim::unknown()))}};
  }
  if (r.noop) return {x};
  std::vector<Dim> out;
  for (size_t d = 0; d < x.shape.rank(); ++d) {
    if (!r.reduced[d]) {
      out.push_back(x.shape[d]);
    } else if (keep) {
      out.push_back(Dim(1));
    }
  }
  return {TensorType{x.dtype, Shape(out)}};
}

OpWork work_reduce(const OpContext& ctx, const std::vector<TensorType>& outs) {
  OpWork w;
  w.flops = element_count(ctx.input_type(0));
  w.bytes_read = byte_count(ctx.input_type(0));
  w.bytes_written = byte_count(outs[0]);
  return w;
}

double reduce_init(Reduce kind) {
  switch (kind) {
    case Reduce::Max:
    case Reduce::LogSumExp:
      return -std::numeric_limits<double>::infinity();
    case Reduce::Min:
      return std::numeric_limits<double>::infinity();
    case Reduce::Prod:
      return 1;
    default:
      return 0;
  }
}

// Calls f(out_offset, in_offset, n, in_inner_stride) for every run of the input's last dim.
template <typename F>
void for_each_run(const std::vector<int64_t>& in_dims, const std::vector<int64_t>& out_strides,
                  F f) {
  IndexIterator it(in_dims);
  size_t in_set = it.add_strides(row_major_strides(in_dims));
  size_t out_set = it.add_strides(out_strides);
  int64_t numel = product(in_dims);
  int64_t inner = it.inner_size();
  if (numel == 0) return;
  for (int64_t row = 0; row < numel / inner; ++row, it.next_outer()) {
    f(it.offset(out_set), it.offset(in_set), inner, it.inner_stride(out_set));
  }
}

std::vector<Tensor> kernel_reduce(const OpContext& ctx, Reduce kind) {
  const Tensor& x = *ctx.input_value(0);
  auto rank = static_cast<int64_t>(x.rank());
  ReduceAxes r = reduce_axes(ctx, rank);
  if (r.noop) return {x};
  std::vector<int64_t> kept_dims, out_dims;
  bool keep = ctx.attr_int("keepdims") != 0;
  int64_t count = 1;
  for (size_t d = 0; d < x.rank(); ++d) {
    kept_dims.push_back(r.reduced[d] ? 1 : x.dims()[d]);
    if (r.reduced[d]) count *= x.dims()[d];
    if (!r.reduced[d] || keep) out_dims.push_back(r.reduced[d] ? 1 : x.dims()[d]);
  }
  std::vector<int64_t> out_strides = broadcast_strides(kept_dims, x.dims());
  int64_t out_n = product(kept_dims);
  Tensor out(x.dtype(), out_dims);

  if (!is_floating(x.dtype()) &&
      (kind == Reduce::Sum || kind == Reduce::Prod || kind == Reduce::Max || kind == Reduce::Min ||
       kind == Reduce::L1 || kind == Reduce::SumSquare)) {
    // Exact integer arithmetic (wrapping like C++ integer kernels would, without UB).
    std::vector<int64_t> acc(static_cast<size_t>(out_n),
                             kind == Reduce::Prod  ? 1
                             : kind == Reduce::Max ? std::numeric_limits<int64_t>::min()
                             : kind == Reduce::Min ? std::numeric_limits<int64_t>::max()
                                                   : 0);
    std::vector<int64_t> xs = x.to_int64s();
    for_each_run(x.dims(), out_strides, [&](int64_t o, int64_t i, int64_t n, int64_t os) {
      for (int64_t k = 0; k < n; ++k) {
        auto v = static_cast<uint64_t>(xs[static_cast<size_t>(i + k)]);
        int64_t& a = acc[static_cast<size_t>(o + k * os)];
        auto ua = static_cast<uint64_t>(a);
        switch (kind) {
          case Reduce::Sum:
            a = static_cast<int64_t>(ua + v);
            break;
          case Reduce::Prod:
            a = static_cast<int64_t>(ua * v);
            break;
          case Reduce::Max:
            a = std::max(a, static_cast<int64_t>(v));
            break;
          case Reduce::Min:
            a = std::min(a, static_cast<int64_t>(v));
            break;
          case Reduce::L1: {
            auto sv = static_cast<int64_t>(v);
            a = static_cast<int64_t>(ua + static_cast<uint64_t>(sv < 0 ? -sv : sv));
            break;
          }
          default:
            a = static_cast<int64_t>(ua + v * v);
            break;
        }
      }
    });
    if (out.dtype() == DType::i64) {
      std::copy(acc.begin(), acc.end(), out.data<int64_t>().begin());
    } else {
      for (int64_t k = 0; k < out_n; ++k) out.set(k, static_cast<double>(acc[size_t(k)]));
    }
    return {out};
  }

  std::vector<double> xs = x.to_doubles();
  std::vector<double> acc(static_cast<size_t>(out_n), reduce_init(kind));
  std::vector<double> maxes;
  if (kind == Reduce::LogSumExp) {
    // Subtract the max first so exp() cannot overflow.
    maxes = acc;
    for_each_run(x.dims(), out_strides, [&](int64_t o, int64_t i, int64_t n, int64_t os) {
      for (int64_t k = 0; k < n; ++k) {
        double& m = maxes[static_cast<size_t>(o + k * os)];
        m = std::max(m, xs[static_cast<size_t>(i + k)]);
      }
    });
    std::fill(acc.begin(), acc.end(), 0.0);
  }
  for_each_run(x.dims(), out_strides, [&](int64_t o, int64_t i, int64_t n, int64_t os) {
    for (int64_t k = 0; k < n; ++k) {
      double v = xs[static_cast<size_t>(i + k)];
      auto oi = static_cast<size_t>(o + k * os);
      double& a = acc[oi];
      switch (kind) {
        case Reduce::Sum:
        case Reduce::Mean:
        case Reduce::LogSum:
          a += v;
          break;
        case Reduce::Max:
          a = (std::isnan(v) || std::isnan(a)) ? NAN : std::max(a, v);
          break;
        case Reduce::Min:
          a = (std::isnan(v) || std::isnan(a)) ? NAN : std::min(a, v);
          break;
        case Reduce::Prod:
          a *= v;
          break;
        case Reduce::L1:
          a += std::fabs(v);
          break;
        case Reduce::L2:
        case Reduce::SumSquare:
          a += v * v;
          break;
        case Reduce::LogSumExp:
          a += std::isinf(maxes[oi]) ? std::exp(v) : std::exp(v - maxes[oi]);
          break;
      }
    }
  });
  for (int64_t k = 0; k < out_n; ++k) {
    double a = acc[static_cast<size_t>(k)];
    switch (kind) {
      case Reduce::Mean:
        a /= static_cast<double>(count);
        break;
      case Reduce::L2:
        a = std::sqrt(a);
        break;
      case Reduce::LogSum:
        a = std::log(a);
        break;
      case Reduce::LogSumExp: {
        double m = maxes[static_cast<size_t>(k)];
        a = std::isinf(m) ? std::log(a) : m + std::log(a);
        break;
      }
      default:
        break;
    }
    out.set(k, a);
  }
  return {out};
}

// out[kept...] = finalize(reduce_{reduced...} body(x[...])), e.g. ReduceMean is
// (div [sum x0[...]] N) and ReduceLogSumExp (log [sum (exp x0[...])]).
std::shared_ptr<const IndexExpr> reduce_meaning(const OpContext& ctx, Reduce kind) {
  const TensorType& t = ctx.input_type(0);
  if (!t.shape.is_static()) ctx.fail("an index expression needs static shapes, got " + t.str());
  std::vector<int64_t> dims = t.shape.static_dims();
  ReduceAxes r = reduce_axes(ctx, static_cast<int64_t>(dims.size()));
  if (!r.known) ctx.fail("an index expression needs constant axes");
  auto e = std::make_shared<IndexExpr>();
  IndexAccess x{0, {}};
  if (r.noop) {
    e->output_dims = dims;
    for (size_t d = 0; d < dims.size(); ++d) x.indices.push_back(AffineIndex::var(int(d)));
    e->accesses = {x};
    e->body = sx::x(0);
    return e;
  }
  e->output_dims = infer_reduce(ctx)[0].shape.static_dims();
  bool keep = ctx.attr_int("keepdims") != 0;
  int out_var = 0;
  int red_var = static_cast<int>(e->output_dims.size());
  int64_t count = 1;
  for (size_t d = 0; d < dims.size(); ++d) {
    if (r.reduced[d]) {
      e->reduction_extents.push_back(dims[d]);
      count *= dims[d];
      x.indices.push_back(AffineIndex::var(red_var++));
      if (keep) ++out_var;
    } else {
      x.indices.push_back(AffineIndex::var(out_var++));
    }
  }
  e->accesses = {x};
  ScalarExprPtr x0 = sx::x(0);
  e->reduce = IndexReduce::Sum;
  e->body = x0;
  switch (kind) {
    case Reduce::Sum:
      break;
    case Reduce::Mean:
      e->finalize = sx::div(x0, sx::c(static_cast<double>(count)));
      break;
    case Reduce::Max:
      e->reduce = IndexReduce::Max;
      break;
    case Reduce::Min:
      e->reduce = IndexReduce::Min;
      break;
    case Reduce::Prod:
      e->reduce = IndexReduce::Prod;
      break;
    case Reduce::L1:
      e->body = sx::abs(x0);
      break;
    case Reduce::L2:
      e->body = sx::mul(x0, x0);
      e->finalize = sx::sqrt(x0);
      break;
    case Reduce::SumSquare:
      e->body = sx::mul(x0, x0);
      break;
    case Reduce::LogSum:
      e->finalize = sx::log(x0);
      break;
    case Reduce::LogSumExp:
      e->body = sx::exp(x0);
      e->finalize = sx::log(x0);
      break;
  }
  return e;
}

// ---- ArgMax / ArgMin ----

std::vector<TensorType> infer_arg(const OpContext& ctx) {
  const TensorType& x = ctx.input_type(0);
  if (!x.shape.has_rank()) return {TensorType{DType::i64, Shape::unranked()}};
  int64_t axis = 0;
  try {
    axis = normalize_axis(ctx.attr_int("axis"), static_cast<int64_t>(x.shape.rank()));
  } catch (const Error& e) {
    ctx.fail(e.what());
  }
  std::vector<Dim> out;
  for (size_t d = 0; d < x.shape.rank(); ++d) {
    if (static_cast<int64_t>(d) != axis) {
      out.push_back(x.shape[d]);
    } else if (ctx.attr_int("keepdims") != 0) {
      out.push_back(Dim(1));
    }
  }
  return {TensorType{DType::i64, Shape(out)}};
}

std::vector<Tensor> kernel_arg(const OpContext& ctx, bool is_max) {
  const Tensor& x = *ctx.input_value(0);
  auto rank = static_cast<int64_t>(x.rank());
  int64_t axis = normalize_axis(ctx.attr_int("axis"), rank);
  bool last = ctx.attr_int("select_last_index") != 0;
  std::vector<int64_t> out_dims;
  int64_t outer = 1, len = x.dims()[static_cast<size_t>(axis)], inner = 1;
  for (int64_t d = 0; d < rank; ++d) {
    if (d < axis) outer *= x.dims()[static_cast<size_t>(d)];
    if (d > axis) inner *= x.dims()[static_cast<size_t>(d)];
    if (d != axis)
      out_dims.push_back(x.dims()[static_cast<size_t>(d)]);
    else if (ctx.attr_int("keepdims") != 0)
      out_dims.push_back(1);
  }
  if (len == 0) ctx.fail("cannot take ArgMax/ArgMin over an empty axis");
  Tensor out(DType::i64, out_dims);
  auto dst = out.data<int64_t>();
  std::vector<double> xs = x.to_doubles();
  for (int64_t o = 0; o < outer; ++o) {
    for (int64_t i = 0; i < inner; ++i) {
      int64_t best = 0;
      double bv = xs[static_cast<size_t>(o * len * inner + i)];
      for (int64_t k = 1; k < len; ++k) {
        double v = xs[static_cast<size_t>((o * len + k) * inner + i)];
        // A NaN is the extreme of either op, as numpy's argmax and argmin (ONNX's reference)
        // take it: the first NaN, or the last with select_last_index (generated code's
        // eqf_arg_wins states the same rule in C).
        const bool v_nan = std::isnan(v), b_nan = std::isnan(bv);
        const bool better = v_nan || b_nan ? v_nan && (!b_nan || last)
                            : is_max       ? (last ? v >= bv : v > bv)
                                           : (last ? v <= bv : v < bv);
        if (better) {
          best = k;
          bv = v;
        }
      }
      dst[static_cast<size_t>(o * inner + i)] = best;
    }
  }
  return {out};
}

// ---- Softmax / LogSoftmax ----

std::vector<TensorType> infer_softmax(const OpContext& ctx) {
  const TensorType& x = ctx.input_type(0);
  if (!is_floating(x.dtype)) ctx.fail(fmt::format("does not take {} inputs", dtype_name(x.dtype)));
  if (x.shape.has_rank()) {
    try {
      normalize_axis(ctx.attr_int("axis"), static_cast<int64_t>(x.shape.rank()));
    } catch (const Error& e) {
      ctx.fail(e.what());
    }
  }
  return {x};
}

OpWork work_softmax(const OpContext& ctx, const std::vector<TensorType>& outs) {
  OpWork w;
  w.flops = 4 * element_count(ctx.input_type(0));  // max, sub+exp, sum, div
  w.bytes_read = byte_count(ctx.input_type(0));
  w.bytes_written = byte_count(outs[0]);
  return w;
}

std::vector<Tensor> kernel_softmax(const OpContext& ctx, bool log) {
  const Tensor& x = *ctx.input_value(0);
  auto rank = static_cast<int64_t>(x.rank());
  int64_t axis = rank == 0 ? 0 : normalize_axis(ctx.attr_int("axis"), rank);
  int64_t outer = 1, len = rank == 0 ? 1 : x.dims()[static_cast<size_t>(axis)], inner = 1;
  for (int64_t d = 0; d < rank; ++d) {
    if (d < axis) outer *= x.dims()[static_cast<size_t>(d)];
    if (d > axis) inner *= x.dims()[static_cast<size_t>(d)];
  }
  std::vector<double> xs = x.to_doubles();
  std::vector<double> ys(xs.size());
  for (int64_t o = 0; o < outer; ++o) {
    for (int64_t i = 0; i < inner; ++i) {
      auto at = [&](int64_t k) { return static_cast<size_t>((o * len + k) * inner + i); };
      double m = -std::numeric_limits<double>::infinity();
      for (int64_t k = 0; k < len; ++k) m = std::max(m, xs[at(k)]);
      double sum = 0;
      for (int64_t k = 0; k < len; ++k) sum += std::exp(xs[at(k)] - m);
      for (int64_t k = 0; k < len; ++k) {
        ys[at(k)] = log ? xs[at(k)] - m - std::log(sum) : std::exp(xs[at(k)] - m) / sum;
      }
    }
  }
  return {Tensor::from_doubles(x.dtype(), x.dims(), ys)};
}

}  // namespace

void register_reduction_ops(OpTableBuilder& table) {
  const std::pair<const char*, Reduce> reduces[] = {
      {"ReduceSum", Reduce::Sum},       {"ReduceMean", Reduce::Mean},
      {"ReduceMax", Reduce::Max},       {"ReduceMin", Reduce::Min},
      {"ReduceProd", Reduce::Prod},     {"ReduceL1", Reduce::L1},
      {"ReduceL2", Reduce::L2},         {"ReduceSumSquare", Reduce::SumSquare},
      {"ReduceLogSum", Reduce::LogSum}, {"ReduceLogSumExp", Reduce::LogSumExp}};
  for (auto [name, kind_binding] : reduces) {
    Reduce kind = kind_binding;  // a lambda may not capture a structured binding (clang 14)
    OpDef d;
    d.name = name;
    d.min_inputs = 1;
    d.max_inputs = 2;
    d.attrs = {{"axes", AttrKind::Ints, std::nullopt},
               {"keepdims", AttrKind::Int, AttrValue{int64_t{1}}},
               {"noop_with_empty_axes", AttrKind::Int, AttrValue{int64_t{0}}}};
    d.fusion = FusionClass::Reduction;
    d.infer = infer_reduce;
    d.work = work_reduce;
    d.kernel = [kind](const OpContext& ctx) { return kernel_reduce(ctx, kind); };
    d.index_for_node = [kind](const OpContext& ctx) { return reduce_meaning(ctx, kind); };
    table.add(std::move(d));
  }
  for (bool is_max : {true, false}) {
    OpDef d;
    d.name = is_max ? "ArgMax" : "ArgMin";
    d.attrs = {{"axis", AttrKind::Int, AttrValue{int64_t{0}}},
               {"keepdims", AttrKind::Int, AttrValue{int64_t{1}}},
               {"select_last_index", AttrKind::Int, AttrValue{int64_t{0}}}};
    d.fusion = FusionClass::Reduction;
    d.infer = infer_arg;
    d.work = work_reduce;
    d.kernel = [is_max](const OpContext& ctx) { return kernel_arg(ctx, is_max); };
    table.add(std::move(d));
  }
  for (bool log : {false, true}) {
    OpDef d;
    d.name = log ? "LogSoftmax" : "Softmax";
    d.attrs = {{"axis", AttrKind::Int, AttrValue{int64_t{-1}}}};
    d.fusion = FusionClass::Reduction;
    d.infer = infer_softmax;
    d.work = work_softmax;
    d.kernel = [log](const OpContext& ctx) { return kernel_softmax(ctx, log); };
    table.add(std::move(d));
  }
}

}  // namespace eqfuse::ir
