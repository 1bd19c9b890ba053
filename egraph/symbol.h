#pragma once
// Interned names and attribute payloads. An e-node stores its operator as a 4-byte Symbol and
// its attributes (e.g. an ONNX Transpose's perm) as a 4-byte AttrId, so hashing and comparing
// e-nodes never touches strings. Both tables are process-wide and only grow; interning takes a
// lock, so parse and apply may run on any thread. Looking names up is for printing, not for the
// hot loops.
#include <cstdint>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace eqfuse::egraph {

using Symbol = uint32_t;
using AttrId = uint32_t;

Symbol intern(std::string_view name);
std::string_view symbol_name(Symbol symbol);

// An attribute payload: (key, value) pairs sorted by key name; a value is the canonical
// s-expression text of what was written (`:perm (0 2 1)` -> {"perm", "(0 2 1)"}), interned.
// AttrId 0 is the empty payload: a node with no attributes.
using AttrList = std::vector<std::pair<Symbol, Symbol>>;
inline constexpr AttrId kNoAttrs = 0;

// Sorts by key name; throws eqfuse::Error on a repeated key.
AttrId intern_attrs(AttrList attrs);
const AttrList& attr_list(AttrId id);
// `:perm (0 2 1) :axis 1`, keys in canonical order; "" for kNoAttrs.
std::string attrs_string(AttrId id);

}  // namespace eqfuse::egraph
