#pragma once
// Attribute values as the e-graph sees them. An e-node's payload interns each attribute value
// as text (egraph/symbol.h), and a pattern's literal `:perm (1 0)` matches only the same text,
// so the tensor e-graph (optimizer/) and the rule parser must spell every value the same way.
// This file is that one spelling (kept in ir/ because a fused kernel's body, ir/kernel_body.h,
// spells its attributes the same way): `encode_attr` writes an ir::AttrValue canonically, and
// `read_attr_literal` reads what a rule author wrote (`:alpha 1`, `:alpha 1.0`) into the value
// of the schema's kind, so both spellings of 1.0 become the same text.
#include <optional>
#include <string>

#include "ir/attribute.h"
#include "support/sexpr.h"

namespace eqfuse::ir {

// The value as an s-expression: integers, floats (shortest round-trip spelling), strings, lists
// of those; tensors and opaque values as a symbol naming their bytes' hash (`#tensor:...`).
Sexpr attr_to_sexpr(const ir::AttrValue& value);
// attr_to_sexpr(value).str(): the text the e-graph interns.
std::string encode_attr(const ir::AttrValue& value);
// Reads a literal written in a rule as a value of `kind`; nullopt when it does not fit (a list
// for an int, a float for an int list...). Ints are accepted where floats are expected.
std::optional<ir::AttrValue> read_attr_literal(const Sexpr& form, ir::AttrKind kind);
// Decodes interned text back to a value of `kind` (nullopt for tensor/opaque or a mismatch).
std::optional<ir::AttrValue> decode_attr(std::string_view text, ir::AttrKind kind);

}  // namespace eqfuse::ir
