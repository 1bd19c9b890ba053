#include "ir/attribute.h"

#include <fmt/format.h>
#include <algorithm>

#include "support/error.h"

namespace eqfuse::ir {

AttrKind attr_kind(const AttrValue& v) {
  return static_cast<AttrKind>(v.index());
}

std::string_view attr_kind_name(AttrKind k) {
  static constexpr std::string_view names[] = {"int",    "float",   "string", "ints",
                                               "floats", "strings", "tensor", "opaque"};
  return names[static_cast<size_t>(k)];
}

namespace {
template <typename T>
std::string join_list(const std::vector<T>& values) {
  std::string out = "(";
  for (size_t i = 0; i < values.size(); ++i) {
    if (i) out += " ";
    if constexpr (std::is_same_v<T, std::string>) {
      out += "\"" + values[i] + "\"";
    } else {
      out += fmt::format("{}", values[i]);
    }
  }
  return out + ")";
}
}  // namespace

std::string attr_value_str(const AttrValue& v) {
  switch (attr_kind(v)) {
    case AttrKind::Int:
      return std::to_string(std::get<int64_t>(v));
    case AttrKind::Float:
      return fmt::format("{}", std::get<double>(v));
    case AttrKind::String:
      return "\"" + std::get<std::string>(v) + "\"";
    case AttrKind::Ints:
      return join_list(std::get<std::vector<int64_t>>(v));
    case AttrKind::Floats:
      return join_list(std::get<std::vector<double>>(v));
    case AttrKind::Strings:
      return join_list(std::get<std::vector<std::string>>(v));
    case AttrKind::Tensor:
      return std::get<Tensor>(v).str();
    case AttrKind::Opaque:
      return "<opaque>";
  }
  return "?";
}

bool attr_values_equal(const AttrValue& a, const AttrValue& b) {
  if (a.index() != b.index()) return false;
  if (attr_kind(a) == AttrKind::Tensor) return std::get<Tensor>(a).same_bits(std::get<Tensor>(b));
  return a == b;
}

const AttrValue* Attributes::find(std::string_view name) const {
  auto it = std::lower_bound(entries_.begin(), entries_.end(), name,
                             [](const auto& e, std::string_view n) { return e.first < n; });
  if (it == entries_.end() || it->first != name) return nullptr;
  return &it->second;
}

void Attributes::set(std::string name, AttrValue value) {
  auto it = std::lower_bound(entries_.begin(), entries_.end(), name,
                             [](const auto& e, const std::string& n) { return e.first < n; });
  if (it != entries_.end() && it->first == name) {
    it->second = std::move(value);
  } else {
    entries_.insert(it, {std::move(name), std::move(value)});
  }
}

bool Attributes::erase(std::string_view name) {
  auto it = std::find_if(entries_.begin(), entries_.end(),
                         [&](const auto& e) { return e.first == name; });
  if (it == entries_.end()) return false;
  entries_.erase(it);
  return true;
}

namespace {
template <typename T>
const T& typed(const AttrValue& v, std::string_view name, AttrKind want) {
  if (attr_kind(v) != want) {
    throw Error(fmt::format("attribute '{}' should be of type {}, got {}", name,
                            attr_kind_name(want), attr_kind_name(attr_kind(v))));
  }
  return std::get<T>(v);
}
}  // namespace

int64_t Attributes::get_int(std::string_view name, int64_t fallback) const {
  const AttrValue* v = find(name);
  return v ? typed<int64_t>(*v, name, AttrKind::Int) : fallback;
}
double Attributes::get_float(std::string_view name, double fallback) const {
  const AttrValue* v = find(name);
  if (v && attr_kind(*v) == AttrKind::Int) return static_cast<double>(std::get<int64_t>(*v));
  return v ? typed<double>(*v, name, AttrKind::Float) : fallback;
}
std::string Attributes::get_string(std::string_view name, std::string fallback) const {
  const AttrValue* v = find(name);
  return v ? typed<std::string>(*v, name, AttrKind::String) : fallback;
}
std::vector<int64_t> Attributes::get_ints(std::string_view name,
                                          std::vector<int64_t> fallback) const {
  const AttrValue* v = find(name);
  return v ? typed<std::vector<int64_t>>(*v, name, AttrKind::Ints) : fallback;
}
std::vector<double> Attributes::get_floats(std::string_view name,
                                           std::vector<double> fallback) const {
  const AttrValue* v = find(name);
  return v ? typed<std::vector<double>>(*v, name, AttrKind::Floats) : fallback;
}
const Tensor* Attributes::get_tensor(std::string_view name) const {
  const AttrValue* v = find(name);
  return v ? &typed<Tensor>(*v, name, AttrKind::Tensor) : nullptr;
}
std::optional<int64_t> Attributes::int_if_present(std::string_view name) const {
  const AttrValue* v = find(name);
  if (!v) return std::nullopt;
  return typed<int64_t>(*v, name, AttrKind::Int);
}
std::optional<std::vector<int64_t>> Attributes::ints_if_present(std::string_view name) const {
  const AttrValue* v = find(name);
  if (!v) return std::nullopt;
  return typed<std::vector<int64_t>>(*v, name, AttrKind::Ints);
}

bool Attributes::operator==(const Attributes& other) const {
  if (entries_.size() != other.entries_.size()) return false;
  for (size_t i = 0; i < entries_.size(); ++i) {
    if (entries_[i].first != other.entries_[i].first ||
        !attr_values_equal(entries_[i].second, other.entries_[i].second)) {
      return false;
    }
  }
  return true;
}

std::string Attributes::str() const {
  std::string out;
  for (const auto& [name, value] : entries_) {
    if (!out.empty()) out += " ";
    out += ":" + name + " " + attr_value_str(value);
  }
  return out;
}

}  // namespace eqfuse::ir
