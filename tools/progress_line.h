#pragma once
// The command-line convention for work that can take more than a second: one progress line on
// stderr, rewritten in place, when stderr is a terminal; silent when it is not (logs and pipes
// stay clean), unless the user forces it (--progress), in which case each update is a line.
#include <string>

namespace eqfuse::tools {

class ProgressLine {
 public:
  explicit ProgressLine(bool forced = false);
  ~ProgressLine();  // clears the line it left on a terminal
  ProgressLine(const ProgressLine&) = delete;
  ProgressLine& operator=(const ProgressLine&) = delete;

  bool enabled() const { return terminal_ || forced_; }
  void update(const std::string& text);
  // Clears the line (a terminal) so that what is printed next starts on a clean line.
  void clear();

 private:
  bool terminal_ = false;
  bool forced_ = false;
  bool shown_ = false;
};

}  // namespace eqfuse::tools
