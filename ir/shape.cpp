#include "ir/shape.h"

#include <fmt/format.h>

#include "support/error.h"

namespace eqfuse::ir {

Dim Dim::symbol(std::string name) {
  Dim d(-1);
  d.sym_ = SymInt::symbol(name);
  d.symbol_ = std::move(name);
  return d;
}

Dim Dim::from_sym(const SymInt& size) {
  if (!size.is_known()) return unknown();
  if (auto c = size.constant()) return *c >= 0 ? Dim(*c) : unknown();
  Dim d(-1);
  d.sym_ = size;
  d.symbol_ = size.str();
  return d;
}

SymInt Dim::sym() const {
  if (is_static()) return SymInt(value_);
  return symbol_.empty() ? SymInt::unknown() : sym_;
}

std::optional<int64_t> Dim::evaluate(const std::map<std::string, int64_t>& symbols) const {
  if (is_static()) return value_;
  return sym().evaluate(symbols);
}
Dim Dim::unknown() {
  return Dim(-1);
}

std::string Dim::str() const {
  if (is_static()) return std::to_string(value_);
  return symbol_.empty() ? "?" : symbol_;
}

Shape Shape::from_dims(const std::vector<int64_t>& dims) {
  Shape s;
  s.dims_.assign(dims.begin(), dims.end());
  return s;
}

Shape Shape::unranked() {
  Shape s;
  s.ranked_ = false;
  return s;
}

bool Shape::is_static() const {
  if (!ranked_) return false;
  for (const Dim& d : dims_) {
    if (!d.is_static()) return false;
  }
  return true;
}

std::vector<int64_t> Shape::static_dims() const {
  if (!is_static()) throw Error("shape " + str() + " is not static", Error::Kind::Internal);
  std::vector<int64_t> out;
  out.reserve(dims_.size());
  for (const Dim& d : dims_) out.push_back(d.value());
  return out;
}

std::optional<int64_t> Shape::numel() const {
  if (!is_static()) return std::nullopt;
  int64_t n = 1;
  for (const Dim& d : dims_) n *= d.value();
  return n;
}

SymInt Shape::sym_numel() const {
  if (!ranked_) return SymInt::unknown();
  SymInt n(1);
  for (const Dim& d : dims_) n = n * d.sym();
  return n;
}

std::string Shape::str() const {
  if (!ranked_) return "[*]";
  std::string out = "[";
  for (size_t i = 0; i < dims_.size(); ++i) {
    if (i) out += ",";
    out += dims_[i].str();
  }
  return out + "]";
}

std::string TensorType::str() const {
  return std::string(dtype_name(dtype)) + shape.str();
}

int64_t product(const std::vector<int64_t>& dims) {
  int64_t n = 1;
  for (int64_t d : dims) n *= d;
  return n;
}

}  // namespace eqfuse::ir
