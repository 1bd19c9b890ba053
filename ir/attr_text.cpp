#include "ir/attr_text.h"

#include <fmt/format.h>

namespace eqfuse::ir {

namespace {

Sexpr atom(Sexpr::Kind kind, std::string text) {
  Sexpr s;
  s.kind = kind;
  s.text = std::move(text);
  return s;
}

Sexpr int_atom(int64_t v) {
  Sexpr s = atom(Sexpr::Kind::Integer, std::to_string(v));
  s.integer = v;
  s.number = static_cast<double>(v);
  return s;
}

Sexpr float_atom(double v) {
  Sexpr s = atom(Sexpr::Kind::Float, fmt::format("{}", v));
  s.number = v;
  return s;
}

Sexpr list(std::vector<Sexpr> items) {
  Sexpr s;
  s.kind = Sexpr::Kind::List;
  s.items = std::move(items);
  return s;
}

uint64_t fnv1a(const void* data, size_t n, uint64_t h = 1469598103934665603ull) {
  auto* p = static_cast<const unsigned char*>(data);
  for (size_t i = 0; i < n; ++i) h = (h ^ p[i]) * 1099511628211ull;
  return h;
}

std::optional<double> as_number(const Sexpr& s) {
  if (s.kind == Sexpr::Kind::Integer || s.kind == Sexpr::Kind::Float) return s.number;
  return std::nullopt;
}

}  // namespace

Sexpr attr_to_sexpr(const ir::AttrValue& value) {
  switch (ir::attr_kind(value)) {
    case ir::AttrKind::Int:
      return int_atom(std::get<int64_t>(value));
    case ir::AttrKind::Float:
      return float_atom(std::get<double>(value));
    case ir::AttrKind::String:
      return atom(Sexpr::Kind::String, std::get<std::string>(value));
    case ir::AttrKind::Ints: {
      std::vector<Sexpr> items;
      for (int64_t v : std::get<std::vector<int64_t>>(value)) items.push_back(int_atom(v));
      return list(std::move(items));
    }
    case ir::AttrKind::Floats: {
      std::vector<Sexpr> items;
      for (double v : std::get<std::vector<double>>(value)) items.push_back(float_atom(v));
      return list(std::move(items));
    }
    case ir::AttrKind::Strings: {
      std::vector<Sexpr> items;
      for (const auto& v : std::get<std::vector<std::string>>(value))
        items.push_back(atom(Sexpr::Kind::String, v));
      return list(std::move(items));
    }
    case ir::AttrKind::Tensor: {
      const ir::Tensor& t = std::get<ir::Tensor>(value);
      uint64_t h = fnv1a(t.raw(), t.byte_size());
      h = fnv1a(t.dims().data(), t.dims().size() * sizeof(int64_t), h);
      return atom(Sexpr::Kind::Symbol,
                  fmt::format("#tensor:{}:{:016x}", ir::dtype_name(t.dtype()), h));
    }
    case ir::AttrKind::Opaque: {
      const auto& o = std::get<ir::OpaqueAttribute>(value);
      return atom(Sexpr::Kind::Symbol,
                  fmt::format("#opaque:{:016x}", fnv1a(o.serialized.data(), o.serialized.size())));
    }
  }
  return atom(Sexpr::Kind::Symbol, "?");
}

std::string encode_attr(const ir::AttrValue& value) {
  return attr_to_sexpr(value).str();
}

std::optional<ir::AttrValue> read_attr_literal(const Sexpr& form, ir::AttrKind kind) {
  switch (kind) {
    case ir::AttrKind::Int:
      if (form.kind == Sexpr::Kind::Integer) return ir::AttrValue(form.integer);
      return std::nullopt;
    case ir::AttrKind::Float:
      if (auto v = as_number(form)) return ir::AttrValue(*v);
      return std::nullopt;
    case ir::AttrKind::String:
      if (form.kind == Sexpr::Kind::String || form.kind == Sexpr::Kind::Symbol)
        return ir::AttrValue(form.text);
      return std::nullopt;
    case ir::AttrKind::Ints: {
      if (!form.is_list()) return std::nullopt;
      std::vector<int64_t> out;
      for (const Sexpr& item : form.items) {
        if (item.kind != Sexpr::Kind::Integer) return std::nullopt;
        out.push_back(item.integer);
      }
      return ir::AttrValue(std::move(out));
    }
    case ir::AttrKind::Floats: {
      if (!form.is_list()) return std::nullopt;
      std::vector<double> out;
      for (const Sexpr& item : form.items) {
        auto v = as_number(item);
        if (!v) return std::nullopt;
        out.push_back(*v);
      }
      return ir::AttrValue(std::move(out));
    }
    case ir::AttrKind::Strings: {
      if (!form.is_list()) return std::nullopt;
      std::vector<std::string> out;
      for (const Sexpr& item : form.items) {
        if (item.kind != Sexpr::Kind::String && item.kind != Sexpr::Kind::Symbol)
          return std::nullopt;
        out.push_back(item.text);
      }
      return ir::AttrValue(std::move(out));
    }
    case ir::AttrKind::Tensor:
    case ir::AttrKind::Opaque:
      return std::nullopt;
  }
  return std::nullopt;
}

std::optional<ir::AttrValue> decode_attr(std::string_view text, ir::AttrKind kind) {
  try {
    return read_attr_literal(parse_sexpr(text, "<attribute>"), kind);
  } catch (const Error&) {
    return std::nullopt;
  }
}

}  // namespace eqfuse::ir
