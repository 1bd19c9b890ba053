#pragma once
// The text every generated translation unit starts with: one device-neutral function per scalar
// op of ir/scalar_expr.h (eqf_exp, eqf_mod, eqf_select, ...), overloaded for float, double and
// int64_t with the semantics stated there, plus the small helpers stage bodies use. The printer
// spells scalar op `name` as eqf_<name>, so this file and ScalarOp's names must agree (a test
// compiles every op).
#include <string>

namespace eqfuse::codegen {

std::string prelude_text();

}  // namespace eqfuse::codegen
