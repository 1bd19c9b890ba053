#pragma once
// Node attributes: a small sorted map from name to value. Float attributes are kept as double
// (ONNX stores float32; the value converts exactly). Attributes eqfuse does not interpret on an
// opaque op (subgraphs of If/Loop, sparse tensors, type protos) are kept as their serialized
// ONNX bytes so that export writes them back unchanged.
#include <cstdint>
#include <optional>
#include <string>
#include <variant>
#include <vector>

#include "ir/tensor.h"

namespace eqfuse::ir {

struct OpaqueAttribute {
  std::string serialized;  // the ONNX AttributeProto, as bytes
  bool operator==(const OpaqueAttribute&) const = default;
};

using AttrValue =
    std::variant<int64_t, double, std::string, std::vector<int64_t>, std::vector<double>,
                 std::vector<std::string>, Tensor, OpaqueAttribute>;

enum class AttrKind { Int, Float, String, Ints, Floats, Strings, Tensor, Opaque };
AttrKind attr_kind(const AttrValue& v);
std::string_view attr_kind_name(AttrKind k);
std::string attr_value_str(const AttrValue& v);  // "3", "(0 2 1)", "\"same\"", ...
bool attr_values_equal(const AttrValue& a, const AttrValue& b);

class Attributes {
 public:
  bool has(std::string_view name) const { return find(name) != nullptr; }
  const AttrValue* find(std::string_view name) const;
  void set(std::string name, AttrValue value);
  bool erase(std::string_view name);

  // Typed getters: the default when absent, an Error naming the attribute when of another kind.
  int64_t get_int(std::string_view name, int64_t fallback) const;
  double get_float(std::string_view name, double fallback) const;
  std::string get_string(std::string_view name, std::string fallback) const;
  std::vector<int64_t> get_ints(std::string_view name, std::vector<int64_t> fallback = {}) const;
  std::vector<double> get_floats(std::string_view name, std::vector<double> fallback = {}) const;
  const Tensor* get_tensor(std::string_view name) const;
  std::optional<int64_t> int_if_present(std::string_view name) const;
  std::optional<std::vector<int64_t>> ints_if_present(std::string_view name) const;

  const std::vector<std::pair<std::string, AttrValue>>& entries() const { return entries_; }
  size_t size() const { return entries_.size(); }
  bool empty() const { return entries_.empty(); }
  bool operator==(const Attributes& other) const;
  std::string str() const;  // ":axis 1 :perm (0 2 1)"

 private:
  std::vector<std::pair<std::string, AttrValue>> entries_;  // sorted by name
};

}  // namespace eqfuse::ir
