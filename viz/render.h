#pragma once
// Writes dot text as FILE.dot, or renders it to FILE.svg / FILE.png with Graphviz's `dot`
// program (Debian's graphviz), chosen by the extension. Throws Error naming the file when it
// cannot be written, and saying so when `dot` is not installed (BadInput: install graphviz or
// ask for .dot).
#include <filesystem>
#include <string>

namespace eqfuse::viz {

void write_picture(const std::string& dot, const std::filesystem::path& file);

}  // namespace eqfuse::viz
