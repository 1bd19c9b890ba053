#pragma once
// The one error type of eqfuse. Every failure on user input (a malformed model, a rule file
// with a typo, an unknown op) becomes an Error that says what failed and where; the command
// line maps its kind to an exit code, so no layer needs to know about processes.
#include <cstdint>
#include <stdexcept>
#include <string>

namespace eqfuse {

// Where in a text file something went wrong (1-based line and column; 0 = unknown).
struct SourceLocation {
  std::string file;
  uint32_t line = 0;
  uint32_t column = 0;
  std::string str() const;  // "file:line:col"
};

class Error : public std::runtime_error {
 public:
  enum class Kind {
    BadInput,     // unreadable or malformed input, bad usage (exit 2)
    Unsupported,  // valid input that eqfuse cannot handle, e.g. executing an opaque op (exit 3)
    CheckFailed,  // a check the user asked for failed: mismatch, unproved rule (exit 1)
    Internal,     // a bug in eqfuse
  };

  explicit Error(std::string message, Kind kind = Kind::BadInput);
  // A message about a place in a text file; `source_line` (the text of that line) adds a caret.
  Error(const SourceLocation& where, std::string message, std::string_view source_line = {},
        Kind kind = Kind::BadInput);

  Kind kind() const { return kind_; }
  const SourceLocation& where() const { return where_; }
  // Process exit code conventional for this kind (see DESIGN.md: 1 check, 2 input, 3 unsupported).
  int exit_code() const;

 private:
  Kind kind_;
  SourceLocation where_;
};

// Shorthand for the two most common kinds.
[[noreturn]] void fail(std::string message);
[[noreturn]] void fail_unsupported(std::string message);

}  // namespace eqfuse
