#include "support/error.h"

#include <fmt/format.h>

namespace eqfuse {

std::string SourceLocation::str() const {
  if (line == 0) return file;
  return fmt::format("{}:{}:{}", file.empty() ? "<input>" : file, line, column);
}

namespace {
std::string with_caret(const SourceLocation& where, const std::string& message,
                       std::string_view source_line) {
  std::string out = fmt::format("{}: error: {}", where.str(), message);
  if (!source_line.empty()) {
    out += fmt::format("\n  {}\n  {}^", source_line,
                       std::string(where.column > 0 ? where.column - 1 : 0, ' '));
  }
  return out;
}
}  // namespace

Error::Error(std::string message, Kind kind)
    : std::runtime_error(std::move(message)), kind_(kind) {}

Error::Error(const SourceLocation& where, std::string message, std::string_view source_line,
             Kind kind)
    : std::runtime_error(with_caret(where, message, source_line)), kind_(kind), where_(where) {}

int Error::exit_code() const {
  switch (kind_) {
    case Kind::BadInput:
      return 2;
    case Kind::Unsupported:
      return 3;
    case Kind::CheckFailed:
      return 1;
    case Kind::Internal:
      return 70;
  }
  return 70;
}

void fail(std::string message) {
  throw Error(std::move(message), Error::Kind::BadInput);
}
void fail_unsupported(std::string message) {
  throw Error(std::move(message), Error::Kind::Unsupported);
}

}  // namespace eqfuse
