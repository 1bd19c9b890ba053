#pragma once
// Generated code built once per machine: both backends that compile generated sources (the C++
// twin, codegen/cpu_backend.h, and CUDA, codegen/cuda_backend.h) keep what they build under
// $XDG_CACHE_HOME/eqfuse/<kind>/<hash> (else ~/.cache/eqfuse/...), keyed by a hash of the
// sources and of how they are compiled, so a model compiles once whatever its batch size.
// Artifacts are written under unique names and renamed into place, so concurrent builds of one
// model do not collide.
#include <filesystem>
#include <string>

namespace eqfuse::codegen {

// 64-bit FNV-1a of `text`, as 16 hex digits: the cache key of generated sources.
std::string source_hash(const std::string& text);

// $XDG_CACHE_HOME/eqfuse (else ~/.cache/eqfuse, else a temporary folder).
std::filesystem::path cache_root();

// The system C++ compiler: $CXX, else c++.
std::string system_compiler();

// Writes `bytes` to `file` (under a unique name, then renamed into place).
void write_atomically(const std::filesystem::path& file, const std::string& bytes);

// Compiles `source` with `compile` (a shell command prefix: the compiler and its flags) into the
// shared library `library`, linking `libs` (" -lblas" or ""); the source stays beside it with the
// extension .cpp. Error (Internal) quoting the compiler's first lines.
void compile_shared_library(const std::string& source, const std::string& compile,
                            const std::string& libs, const std::filesystem::path& library);

}  // namespace eqfuse::codegen
