#pragma once
// The one s-expression reader of eqfuse. Rule files, terms on the command line, patterns and
// test fixtures are all s-expressions; reading them in one place means one syntax, one set of
// error messages (file:line:col with a caret), and locations on every node so that the layers
// above (patterns, rule checker) can point at the exact token a user got wrong.
//
// Syntax: lists `( ... )`, comments from `;` to end of line, strings "..." (escapes \" \\ \n
// \t), and atoms. An atom is classified by its first characters:
//   ?name  -> Var        :name -> Keyword
//   42, -3, 1.5e-3, -inf, inf, nan  -> Integer or Float (text kept verbatim)
//   anything else -> Symbol (e.g. +, MatMul, a, <=)
#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "support/error.h"

namespace eqfuse {

struct Sexpr {
  enum class Kind { Symbol, Var, Keyword, Integer, Float, String, List };

  Kind kind = Kind::Symbol;
  // Atom text as written, without the leading '?' or ':' for Var/Keyword, and unescaped for
  // String. Numbers keep their spelling (so "2" and "2.0" stay distinct symbols if needed).
  std::string text;
  int64_t integer = 0;       // Kind::Integer
  double number = 0;         // Kind::Integer and Kind::Float
  std::vector<Sexpr> items;  // Kind::List
  SourceLocation where;      // of the first character ('(' for lists)
  // The whole text the node was read from, shared by all its nodes, so that an error about any
  // node can quote its line with a caret.
  std::shared_ptr<const std::string> source;

  bool is_list() const { return kind == Kind::List; }
  bool is_atom() const { return kind != Kind::List; }
  bool is_symbol(std::string_view s) const { return kind == Kind::Symbol && text == s; }
  // Writes the node back in canonical form (single spaces, '?'/':' prefixes, quoted strings).
  std::string str() const;
};

// Reads every top-level form of `text`. `file` names the source in errors. Throws
// eqfuse::Error (BadInput) with file:line:col and a caret on malformed input.
std::vector<Sexpr> parse_sexprs(std::string_view text, std::string_view file = "<input>");
// Reads exactly one form (e.g. a term given on the command line).
Sexpr parse_sexpr(std::string_view text, std::string_view file = "<input>");
// Reads a whole file.
std::vector<Sexpr> read_sexpr_file(const std::string& path);

// An Error (BadInput) about `node`: file:line:col, the message, and its source line with a caret.
Error sexpr_error(const Sexpr& node, const std::string& message);

// The text of line `line` (1-based) of `source`, for carets.
std::string_view source_line(std::string_view source, uint32_t line);

}  // namespace eqfuse
