#include "egraph/symbol.h"

#include <algorithm>
#include <deque>
#include <map>
#include <mutex>
#include <unordered_map>

#include "support/error.h"

namespace eqfuse::egraph {
namespace {

struct SymbolTable {
  std::mutex mutex;
  std::deque<std::string> names;
  std::unordered_map<std::string_view, Symbol> ids;
};

SymbolTable& symbols() {
  static SymbolTable table;
  return table;
}

struct AttrTable {
  std::mutex mutex;
  std::deque<AttrList> lists{AttrList{}};
  std::map<AttrList, AttrId> ids{{AttrList{}, kNoAttrs}};
};

AttrTable& attrs() {
  static AttrTable table;
  return table;
}

}  // namespace

Symbol intern(std::string_view name) {
  SymbolTable& t = symbols();
  std::lock_guard lock(t.mutex);
  auto it = t.ids.find(name);
  if (it != t.ids.end()) return it->second;
  t.names.emplace_back(name);
  Symbol id = static_cast<Symbol>(t.names.size() - 1);
  t.ids.emplace(t.names.back(), id);
  return id;
}

std::string_view symbol_name(Symbol symbol) {
  SymbolTable& t = symbols();
  std::lock_guard lock(t.mutex);
  return t.names.at(symbol);
}

AttrId intern_attrs(AttrList list) {
  std::sort(list.begin(), list.end(), [](const auto& a, const auto& b) {
    return symbol_name(a.first) < symbol_name(b.first);
  });
  for (size_t i = 1; i < list.size(); ++i) {
    if (list[i].first == list[i - 1].first)
      fail("attribute ':" + std::string(symbol_name(list[i].first)) + "' given twice");
  }
  AttrTable& t = attrs();
  std::lock_guard lock(t.mutex);
  auto it = t.ids.find(list);
  if (it != t.ids.end()) return it->second;
  t.lists.push_back(list);
  AttrId id = static_cast<AttrId>(t.lists.size() - 1);
  t.ids.emplace(std::move(list), id);
  return id;
}

const AttrList& attr_list(AttrId id) {
  AttrTable& t = attrs();
  std::lock_guard lock(t.mutex);
  return t.lists.at(id);
}

std::string attrs_string(AttrId id) {
  std::string out;
  for (const auto& [key, value] : attr_list(id)) {
    if (!out.empty()) out += ' ';
    out += ':';
    out += symbol_name(key);
    out += ' ';
    out += symbol_name(value);
  }
  return out;
}

}  // namespace eqfuse::egraph
