#include "tools/progress_line.h"

#include <unistd.h>

#include <iostream>

namespace eqfuse::tools {

ProgressLine::ProgressLine(bool forced) : terminal_(isatty(STDERR_FILENO)), forced_(forced) {}

ProgressLine::~ProgressLine() {
  clear();
}

void ProgressLine::update(const std::string& text) {
  if (terminal_) {
    std::cerr << "\r\033[K" << text << std::flush;
    shown_ = true;
  } else if (forced_) {
    std::cerr << text << "\n";
  }
}

void ProgressLine::clear() {
  if (terminal_ && shown_) std::cerr << "\r\033[K" << std::flush;
  shown_ = false;
}

}  // namespace eqfuse::tools
