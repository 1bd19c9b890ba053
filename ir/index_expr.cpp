#include "ir/index_expr.h"

#include <fmt/format.h>

#include <cmath>
#include <limits>

#include "ir/broadcast.h"
#include "support/error.h"

namespace eqfuse::ir {

namespace {
std::string affine_str(const AffineIndex& a) {
  std::string out;
  for (auto [v, c] : a.terms) {
    if (!out.empty()) out += "+";
    out += c == 1 ? fmt::format("v{}", v) : fmt::format("{}*v{}", c, v);
  }
  if (a.constant != 0 || out.empty()) {
    out += (out.empty() ? "" : "+") + std::to_string(a.constant);
  }
  return out;
}

std::string access_str(const IndexAccess& a) {
  std::string out = fmt::format("x{}[", a.input);
  for (size_t i = 0; i < a.indices.size(); ++i) out += (i ? "," : "") + affine_str(a.indices[i]);
  return out + "]";
}

std::string_view reduce_name(IndexReduce r) {
  switch (r) {
    case IndexReduce::None:
      return "";
    case IndexReduce::Sum:
      return "sum";
    case IndexReduce::Max:
      return "max";
    case IndexReduce::Min:
      return "min";
    case IndexReduce::Prod:
      return "prod";
  }
  return "?";
}

// The body with each x<i> replaced by the text of access i (for printing only).
std::string body_str(const ScalarExprPtr& body, const std::vector<IndexAccess>& accesses,
                     int64_t offset) {
  std::string text = to_string(body);
  std::string out;
  for (size_t i = 0; i < text.size(); ++i) {
    bool at_var = text[i] == 'x' && (i == 0 || text[i - 1] == ' ' || text[i - 1] == '(');
    if (at_var) {
      size_t j = i + 1;
      int64_t n = 0;
      while (j < text.size() && std::isdigit(static_cast<unsigned char>(text[j]))) {
        n = n * 10 + (text[j++] - '0');
      }
      if (j > i + 1) {
        int64_t k = n - offset;
        out += k >= 0 && static_cast<size_t>(k) < accesses.size() ? access_str(accesses[size_t(k)])
                                                                  : text.substr(i, j - i);
        i = j - 1;
        continue;
      }
    }
    out += text[i];
  }
  return out;
}
}  // namespace

std::string to_string(const IndexExpr& e) {
  std::string out = "out[";
  for (size_t i = 0; i < e.output_dims.size(); ++i) out += (i ? "," : "") + fmt::format("v{}", i);
  out += "] = ";
  std::string inner = body_str(e.body, e.accesses, 0);
  if (e.reduce != IndexReduce::None) {
    std::string vars;
    for (size_t i = 0; i < e.reduction_extents.size(); ++i) {
      vars +=
          fmt::format("{}v{}<{}", i ? "," : "", e.output_dims.size() + i, e.reduction_extents[i]);
    }
    inner = fmt::format("{}({}) {}", reduce_name(e.reduce), vars, inner);
  }
  if (e.finalize) {
    std::vector<IndexAccess> fin = e.finalize_accesses;
    out += body_str(e.finalize, fin, 1);
    std::string::size_type p = out.find(" x0");
    if (p != std::string::npos) out.replace(p + 1, 2, "[" + inner + "]");
    return out;
  }
  return out + inner;
}

namespace {
template <typename T>
struct Evaluator {
  const IndexExpr& e;
  const std::vector<const Tensor*>& inputs;
  std::vector<std::vector<T>> data;
  std::vector<std::vector<int64_t>> strides;

  Evaluator(const IndexExpr& expr, const std::vector<const Tensor*>& in) : e(expr), inputs(in) {
    for (const Tensor* t : inputs) {
      if constexpr (std::is_same_v<T, double>) {
        data.push_back(t->to_doubles());
      } else {
        data.push_back(t->to_int64s());
      }
      strides.push_back(row_major_strides(t->dims()));
    }
  }

  T read(const IndexAccess& a, const std::vector<int64_t>& vars) const {
    if (a.input < 0 || static_cast<size_t>(a.input) >= inputs.size()) {
      throw Error(fmt::format("index expression reads input {} of {}", a.input, inputs.size()),
                  Error::Kind::Internal);
    }
    const Tensor& t = *inputs[size_t(a.input)];
    if (a.indices.size() != t.rank()) {
      throw Error(fmt::format("index expression reads x{} (rank {}) with {} indices", a.input,
                              t.rank(), a.indices.size()),
                  Error::Kind::Internal);
    }
    int64_t off = 0;
    for (size_t d = 0; d < a.indices.size(); ++d) {
      int64_t i = a.indices[d].constant;
      for (auto [v, c] : a.indices[d].terms) i += c * vars[size_t(v)];
      if (i < 0 || i >= t.dims()[d]) {
        throw Error(
            fmt::format("index expression reads x{} out of bounds (dim {}: {})", a.input, d, i),
            Error::Kind::Internal);
      }
      off += i * strides[size_t(a.input)][d];
    }
    return data[size_t(a.input)][size_t(off)];
  }

  T eval_expr(const ScalarExpr& expr, const std::vector<T>& args) const {
    if constexpr (std::is_same_v<T, double>) {
      return ir::evaluate(expr, args);
    } else {
      return evaluate_int(expr, args);
    }
  }

  T combine(T acc, T v) const {
    switch (e.reduce) {
      case IndexReduce::Sum:
        return acc + v;
      case IndexReduce::Prod:
        return acc * v;
      case IndexReduce::Max:
        if constexpr (std::is_same_v<T, double>) {
          if (std::isnan(v) || std::isnan(acc)) return NAN;
        }
        return std::max(acc, v);
      case IndexReduce::Min:
        if constexpr (std::is_same_v<T, double>) {
          if (std::isnan(v) || std::isnan(acc)) return NAN;
        }
        return std::min(acc, v);
      case IndexReduce::None:
        return v;
    }
    return v;
  }

  T init() const {
    switch (e.reduce) {
      case IndexReduce::Prod:
        return T(1);
      case IndexReduce::Max:
        return std::is_same_v<T, double> ? T(-std::numeric_limits<double>::infinity())
                                         : std::numeric_limits<T>::lowest();
      case IndexReduce::Min:
        return std::is_same_v<T, double> ? T(std::numeric_limits<double>::infinity())
                                         : std::numeric_limits<T>::max();
      default:
        return T(0);
    }
  }

  Tensor run(DType out_dtype) const {
    Tensor out(out_dtype, e.output_dims);
    std::vector<int64_t> vars(e.num_vars(), 0);
    size_t n_out = e.output_dims.size();
    int64_t red_total = product(e.reduction_extents);
    std::vector<T> args(e.accesses.size());
    for (int64_t o = 0; o < out.numel(); ++o) {
      int64_t rem = o;
      for (size_t d = n_out; d-- > 0;) {
        vars[d] = rem % e.output_dims[d];
        rem /= e.output_dims[d];
      }
      T acc = init();
      int64_t count = e.reduce == IndexReduce::None ? 1 : red_total;
      for (int64_t r = 0; r < count; ++r) {
        int64_t rr = r;
        for (size_t d = e.reduction_extents.size(); d-- > 0;) {
          vars[n_out + d] = rr % e.reduction_extents[d];
          rr /= e.reduction_extents[d];
        }
        for (size_t i = 0; i < e.accesses.size(); ++i) args[i] = read(e.accesses[i], vars);
        acc = combine(acc, eval_expr(*e.body, args));
      }
      if (e.finalize) {
        std::vector<T> fargs{acc};
        for (const IndexAccess& a : e.finalize_accesses) fargs.push_back(read(a, vars));
        acc = eval_expr(*e.finalize, fargs);
      }
      out.set(o, static_cast<double>(acc));
    }
    return out;
  }
};
}  // namespace

Tensor evaluate(const IndexExpr& e, const std::vector<const Tensor*>& inputs, DType out_dtype) {
  bool floating = false;
  for (const Tensor* t : inputs) floating |= is_floating(t->dtype());
  if (floating) return Evaluator<double>(e, inputs).run(out_dtype);
  return Evaluator<int64_t>(e, inputs).run(out_dtype);
}

}  // namespace eqfuse::ir
