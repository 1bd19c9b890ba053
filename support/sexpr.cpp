#include "support/sexpr.h"

#include <cctype>
#include <cmath>
#include <cstdlib>
#include <fstream>
#include <sstream>

namespace eqfuse {

std::string_view source_line(std::string_view source, uint32_t line) {
  size_t pos = 0;
  for (uint32_t l = 1; l < line; ++l) {
    pos = source.find('\n', pos);
    if (pos == std::string_view::npos) return {};
    ++pos;
  }
  size_t end = source.find('\n', pos);
  return source.substr(pos, end == std::string_view::npos ? std::string_view::npos : end - pos);
}

Error sexpr_error(const Sexpr& node, const std::string& message) {
  std::string_view line =
      node.source ? source_line(*node.source, node.where.line) : std::string_view{};
  return Error(node.where, message, line);
}

namespace {

bool is_delimiter(char c) {
  return std::isspace(static_cast<unsigned char>(c)) || c == '(' || c == ')' || c == ';' ||
         c == '"';
}

// Classifies a bare atom as a number when the whole of it parses as one.
bool parse_number(const std::string& text, Sexpr& out) {
  if (text == "inf" || text == "-inf" || text == "+inf" || text == "nan") {
    out.kind = Sexpr::Kind::Float;
    out.number = text == "nan" ? NAN : (text[0] == '-' ? -INFINITY : INFINITY);
    return true;
  }
  size_t i = (text[0] == '-' || text[0] == '+') ? 1 : 0;
  if (i >= text.size() || !(std::isdigit(static_cast<unsigned char>(text[i])) ||
                            (text[i] == '.' && i + 1 < text.size() &&
                             std::isdigit(static_cast<unsigned char>(text[i + 1])))))
    return false;
  const char* begin = text.c_str();
  char* end = nullptr;
  errno = 0;
  long long v = std::strtoll(begin, &end, 10);
  if (*end == '\0' && errno == 0) {
    out.kind = Sexpr::Kind::Integer;
    out.integer = v;
    out.number = static_cast<double>(v);
    return true;
  }
  double d = std::strtod(begin, &end);
  if (*end == '\0') {
    out.kind = Sexpr::Kind::Float;
    out.number = d;
    return true;
  }
  return false;
}

class Reader {
 public:
  Reader(std::string_view text, std::string_view file)
      : source_(std::make_shared<const std::string>(text)), text_(*source_), file_(file) {}

  std::vector<Sexpr> read_all() {
    std::vector<Sexpr> forms;
    for (;;) {
      skip_space();
      if (pos_ >= text_.size()) return forms;
      if (text_[pos_] == ')') error(here(), "unexpected ')'");
      forms.push_back(read());
    }
  }

 private:
  SourceLocation here() const { return {file_, line_, col_}; }

  [[noreturn]] void error(const SourceLocation& at, const std::string& message) const {
    throw Error(at, message, source_line(text_, at.line));
  }

  void advance() {
    if (text_[pos_] == '\n') {
      ++line_;
      col_ = 1;
    } else {
      ++col_;
    }
    ++pos_;
  }

  void skip_space() {
    while (pos_ < text_.size()) {
      char c = text_[pos_];
      if (c == ';') {
        while (pos_ < text_.size() && text_[pos_] != '\n') advance();
      } else if (std::isspace(static_cast<unsigned char>(c))) {
        advance();
      } else {
        return;
      }
    }
  }

  Sexpr make(Sexpr::Kind kind, const SourceLocation& at) const {
    Sexpr node;
    node.kind = kind;
    node.where = at;
    node.source = source_;
    return node;
  }

  Sexpr read() {
    SourceLocation at = here();
    char c = text_[pos_];
    if (c == '(') {
      Sexpr list = make(Sexpr::Kind::List, at);
      advance();
      for (;;) {
        skip_space();
        if (pos_ >= text_.size()) error(at, "unclosed '(' (missing ')')");
        if (text_[pos_] == ')') {
          advance();
          return list;
        }
        list.items.push_back(read());
      }
    }
    if (c == '"') return read_string(at);
    std::string atom;
    while (pos_ < text_.size() && !is_delimiter(text_[pos_])) {
      atom += text_[pos_];
      advance();
    }
    if (atom[0] == '?' || atom[0] == ':') {
      if (atom.size() == 1) error(at, std::string("expected a name after '") + atom[0] + "'");
      Sexpr node = make(atom[0] == '?' ? Sexpr::Kind::Var : Sexpr::Kind::Keyword, at);
      node.text = atom.substr(1);
      return node;
    }
    Sexpr node = make(Sexpr::Kind::Symbol, at);
    node.text = atom;
    parse_number(atom, node);
    return node;
  }

  Sexpr read_string(const SourceLocation& at) {
    Sexpr node = make(Sexpr::Kind::String, at);
    advance();  // opening quote
    for (;;) {
      if (pos_ >= text_.size()) error(at, "unterminated string");
      char c = text_[pos_];
      if (c == '"') {
        advance();
        return node;
      }
      if (c == '\\') {
        SourceLocation esc = here();
        advance();
        if (pos_ >= text_.size()) error(at, "unterminated string");
        char e = text_[pos_];
        switch (e) {
          case 'n':
            node.text += '\n';
            break;
          case 't':
            node.text += '\t';
            break;
          case '"':
            node.text += '"';
            break;
          case '\\':
            node.text += '\\';
            break;
          default:
            error(esc, std::string("unknown escape '\\") + e + "'");
        }
        advance();
        continue;
      }
      node.text += c;
      advance();
    }
  }

  std::shared_ptr<const std::string> source_;
  std::string_view text_;
  std::string file_;
  size_t pos_ = 0;
  uint32_t line_ = 1;
  uint32_t col_ = 1;
};

void write(const Sexpr& node, std::string& out) {
  switch (node.kind) {
    case Sexpr::Kind::Var:
      out += '?';
      out += node.text;
      return;
    case Sexpr::Kind::Keyword:
      out += ':';
      out += node.text;
      return;
    case Sexpr::Kind::String:
      out += '"';
      for (char c : node.text) {
        if (c == '"' || c == '\\') out += '\\';
        if (c == '\n') {
          out += "\\n";
        } else if (c == '\t') {
          out += "\\t";
        } else {
          out += c;
        }
      }
      out += '"';
      return;
    case Sexpr::Kind::List:
      out += '(';
      for (size_t i = 0; i < node.items.size(); ++i) {
        if (i) out += ' ';
        write(node.items[i], out);
      }
      out += ')';
      return;
    default:
      out += node.text;
      return;
  }
}

}  // namespace

std::string Sexpr::str() const {
  std::string out;
  write(*this, out);
  return out;
}

std::vector<Sexpr> parse_sexprs(std::string_view text, std::string_view file) {
  return Reader(text, file).read_all();
}

Sexpr parse_sexpr(std::string_view text, std::string_view file) {
  std::vector<Sexpr> forms = parse_sexprs(text, file);
  if (forms.size() != 1) {
    if (forms.empty())
      throw Error(SourceLocation{std::string(file), 1, 1}, "expected one form, found none",
                  source_line(text, 1));
    throw sexpr_error(forms[1], "expected one form, found more");
  }
  return std::move(forms[0]);
}

std::vector<Sexpr> read_sexpr_file(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) fail("cannot read '" + path + "'");
  std::stringstream buffer;
  buffer << in.rdbuf();
  return parse_sexprs(buffer.str(), path);
}

}  // namespace eqfuse
