#include "codegen/build_cache.h"

#include <fmt/format.h>
#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <fstream>

#include "support/error.h"

namespace eqfuse::codegen {

namespace fs = std::filesystem;

namespace {

std::string read_head(const fs::path& file, size_t max_lines) {
  std::ifstream in(file);
  std::string line, out;
  for (size_t i = 0; i < max_lines && std::getline(in, line); ++i) out += line + "\n";
  return out;
}

std::string unique_tag() {
  return fmt::format("{}-{}", ::getpid(),
                     std::chrono::steady_clock::now().time_since_epoch().count());
}

}  // namespace

std::string source_hash(const std::string& text) {
  uint64_t h = 1469598103934665603ull;
  for (unsigned char c : text) {
    h ^= c;
    h *= 1099511628211ull;
  }
  return fmt::format("{:016x}", h);
}

fs::path cache_root() {
  if (const char* x = std::getenv("XDG_CACHE_HOME"); x && *x) return fs::path(x) / "eqfuse";
  if (const char* h = std::getenv("HOME"); h && *h) return fs::path(h) / ".cache" / "eqfuse";
  return fs::temp_directory_path() / "eqfuse-cache";
}

std::string system_compiler() {
  if (const char* c = std::getenv("CXX"); c && *c) return c;
  return "c++";
}

void write_atomically(const fs::path& file, const std::string& bytes) {
  fs::create_directories(file.parent_path());
  fs::path tmp = file.parent_path() / (unique_tag() + "-" + file.filename().string());
  {
    std::ofstream f(tmp, std::ios::binary);
    f << bytes;
    if (!f) throw Error("cannot write " + tmp.string());
  }
  fs::rename(tmp, file);
}

void compile_shared_library(const std::string& source, const std::string& compile,
                            const std::string& libs, const fs::path& library) {
  fs::path dir = library.parent_path();
  fs::create_directories(dir);
  std::string tag = unique_tag();
  fs::path src = dir / (tag + ".cpp"), tmp = dir / (tag + ".so"), log = dir / (tag + ".log");
  {
    std::ofstream f(src);
    f << source;
    if (!f) throw Error("cannot write " + src.string());
  }
  std::string cmd = fmt::format("{} -o '{}' '{}'{} > '{}' 2>&1", compile, tmp.string(),
                                src.string(), libs, log.string());
  if (std::system(cmd.c_str()) != 0)
    throw Error(fmt::format("codegen: the C++ compiler failed on generated code ({}):\n{}",
                            src.string(), read_head(log, 20)),
                Error::Kind::Internal);
  fs::rename(tmp, library);
  fs::path kept = library;
  fs::rename(src, kept.replace_extension(".cpp"));
  fs::remove(log);
}

}  // namespace eqfuse::codegen
