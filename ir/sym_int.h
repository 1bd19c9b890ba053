#pragma once
// Symbolic integers: the sizes of dynamic dims ("batch", "batch*64", "(seq-1)/2+1") and the
// values that shape-computing chains (Shape -> Gather -> Concat -> Reshape) carry. Exported
// models with a dynamic batch write every reshape as such a chain, so inference must compute
// with dims it does not know to get static shapes where they are static and named ones where
// they are not.
//
// A SymInt is a polynomial with integer coefficients over atoms; an atom is a named symbol or
// an operation the polynomial cannot express (floor division, modulo, min, max). The
// polynomial is kept in a canonical form, so two SymInts are equal exactly when their texts
// are; arithmetic simplifies what it can prove for every non-negative binding (batch*64/64 is
// batch) and keeps the rest as atoms. Evaluating under a binding of the symbols gives the
// integer the interpreter would compute.
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

namespace eqfuse::ir {

struct SymPoly;  // sym_int.cpp

class SymInt {
 public:
  SymInt(int64_t constant = 0);  // NOLINT: an integer is a SymInt
  static SymInt symbol(const std::string& name);
  static SymInt unknown();  // nothing known about the value

  bool is_known() const { return poly_ != nullptr; }
  std::optional<int64_t> constant() const;  // the value when it depends on no symbol
  // The value under a binding of symbol names; nullopt when unknown or a symbol is unbound.
  std::optional<int64_t> evaluate(const std::map<std::string, int64_t>& symbols) const;
  // Names of the symbols it depends on.
  std::vector<std::string> symbols() const;
  std::string str() const;  // "batch*64", "seq+1", "(seq-1)/2", "?" when unknown
  // The value as a C expression of type int64_t, each symbol spelled by `symbol` (code
  // generators pass run-time dims by their own names); floor division and modulo are written
  // for non-negative operands, min and max as eqf_min/eqf_max. Error when unknown.
  std::string c_expr(const std::function<std::string(const std::string&)>& symbol) const;

  bool operator==(const SymInt& other) const;
  bool operator!=(const SymInt& other) const { return !(*this == other); }

  friend SymInt operator+(const SymInt& a, const SymInt& b);
  friend SymInt operator-(const SymInt& a, const SymInt& b);
  friend SymInt operator*(const SymInt& a, const SymInt& b);
  // Floor division and modulo as shapes use them (operands non-negative in practice).
  friend SymInt floor_div(const SymInt& a, const SymInt& b);
  friend SymInt ceil_div(const SymInt& a, const SymInt& b);
  friend SymInt mod(const SymInt& a, const SymInt& b);
  friend SymInt sym_min(const SymInt& a, const SymInt& b);
  friend SymInt sym_max(const SymInt& a, const SymInt& b);

  // True when a > b for every binding of its symbols to sizes >= 1 (false when unsure).
  friend bool surely_greater(const SymInt& a, const SymInt& b);
  // True when a >= b for every such binding.
  friend bool surely_at_least(const SymInt& a, const SymInt& b);

  // The canonical polynomial (sym_int.cpp); nullptr when unknown.
  const std::shared_ptr<const SymPoly>& poly() const { return poly_; }
  explicit SymInt(std::shared_ptr<const SymPoly> poly) : poly_(std::move(poly)) {}

 private:
  std::shared_ptr<const SymPoly> poly_;  // nullptr: unknown
};

}  // namespace eqfuse::ir
