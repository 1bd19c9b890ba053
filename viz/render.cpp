#include "viz/render.h"

#include <fmt/format.h>
#include <sys/wait.h>

#include <cstdio>
#include <fstream>

#include "support/error.h"

namespace eqfuse::viz {

namespace fs = std::filesystem;

void write_picture(const std::string& dot, const fs::path& file) {
  std::string ext = file.extension().string();
  if (ext == ".dot" || ext == ".gv") {
    std::ofstream out(file, std::ios::binary);
    if (!(out << dot)) throw Error(fmt::format("cannot write '{}'", file.string()));
    return;
  }
  if (ext != ".svg" && ext != ".png")
    throw Error(fmt::format("'{}': expected a .svg, .png or .dot file", file.string()));
  // `dot` reads the text on stdin and writes the file itself; its messages go to our stderr.
  std::string command = fmt::format("dot -T{} -o '{}' 1>&2", ext.substr(1), file.string());
  if (file.string().find('\'') != std::string::npos)
    throw Error(fmt::format("'{}': a quote in the file name", file.string()));
  FILE* pipe = popen(command.c_str(), "w");
  if (!pipe) throw Error("cannot start Graphviz's dot");
  fwrite(dot.data(), 1, dot.size(), pipe);
  int status = pclose(pipe);
  if (status == -1 || !WIFEXITED(status) || WEXITSTATUS(status) == 127)
    throw Error(
        fmt::format("cannot write '{}': Graphviz's `dot` is not installed (apt install "
                    "graphviz), or ask for a .dot file",
                    file.string()));
  if (WEXITSTATUS(status) != 0)
    throw Error(fmt::format("Graphviz's dot failed writing '{}' (exit {})", file.string(),
                            WEXITSTATUS(status)),
                Error::Kind::Internal);
}

}  // namespace eqfuse::viz
