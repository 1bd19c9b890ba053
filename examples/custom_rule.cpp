// Writing a rule, proving it, and optimizing with it: what `eqfuse rules check my.rules` and
// `eqfuse optimize --rules my.rules` do, through the library.
//
// The rule file holds one sound rule, relu(|a|) = |a| (an absolute value is never negative), and
// the prover proves it with Z3 at every binding of ranks and dim sizes it enumerates. A second,
// wrong rule, |relu(a)| = |a|, is refuted with a counterexample (any negative a), and optimize
// refuses a rule file holding it. With the sound rule alone, optimize removes the Relu of
// y = relu(|x|) * 2, verified in the interpreter, and its report names the rule that did it. Built
// and run by the tests (example_custom_rule).
//
//   custom_rule DIR     (where the rule files are written)
#include <cstdio>
#include <filesystem>
#include <fstream>

#include "ir/builder.h"
#include "optimizer/optimize.h"
#include "rules/parser.h"
#include "rules/prove/batch.h"
#include "support/error.h"

using namespace eqfuse;
namespace fs = std::filesystem;

namespace {

const char* kSound = "(rewrite relu-of-abs (Relu (Abs ?a)) (Abs ?a))\n";
const char* kWrong = "(rewrite abs-of-relu (Abs (Relu ?a)) (Abs ?a))\n";

fs::path write_file(const fs::path& path, const std::string& text) {
  std::ofstream(path) << text;
  return path;
}

// Proves every rule of `file` (no proof cache: the example shows the prover working).
bool prove_file(const fs::path& file) {
  rules::RuleSet set = rules::parse_rule_file(file.string());
  std::vector<const rules::Rule*> list;
  for (const rules::Rule& r : set.rules) list.push_back(&r);
  bool all = true;
  for (const rules::prove::RuleProof& p : rules::prove::prove_rules(list, {}, 0, nullptr)) {
    std::printf("%s: %s in %.2f s at %zu shapes\n", p.name.c_str(),
                std::string(rules::prove::verdict_name(p.verdict)).c_str(), p.seconds,
                p.bounds.size());
    if (p.counterexample) std::printf("  counterexample: %s\n", p.counterexample->text.c_str());
    all = all && p.verdict == rules::prove::Verdict::Proved;
  }
  return all;
}

}  // namespace

int main(int argc, char** argv) {
  fs::path dir = argc > 1 ? fs::path(argv[1]) : fs::temp_directory_path() / "eqfuse_custom_rule";
  fs::create_directories(dir);
  fs::path sound = write_file(dir / "sound.rules", kSound);
  fs::path wrong = write_file(dir / "wrong.rules", std::string(kSound) + kWrong);

  bool sound_proved = prove_file(sound);
  bool wrong_proved = prove_file(wrong);

  // y = relu(|x|) * 2
  ir::GraphBuilder b("relu_abs");
  ir::ValueId x = b.input("x", ir::DType::f32, {ir::Dim::symbol("batch"), ir::Dim(16)});
  ir::ValueId two = b.weight("two", ir::Tensor::from_doubles(ir::DType::f32, {}, {2}));
  b.output(b.op("Mul", {b.op("Relu", {b.op("Abs", {x})}), two}));
  ir::Graph graph = std::move(b).finish();

  optimizer::OptimizeOptions options;
  options.rule_files = {wrong.string()};  // refused: one of its rules is not proved
  bool refused = false;
  try {
    optimizer::optimize(graph, options);
  } catch (const Error& e) {
    refused = true;
    std::printf("optimize with %s refused: %s\n", wrong.filename().string().c_str(), e.what());
  }

  options.rule_files = {sound.string()};        // instead of the library
  optimizer::set_phases(options, {"algebra"});  // rewriting alone, to see the rule's effect
  optimizer::OptimizeResult result = optimizer::optimize(graph, options);
  size_t relus = result.report.ops_after.count("Relu") ? result.report.ops_after.at("Relu") : 0;
  std::printf("with %s: Relu ops %zu -> %zu, verification %s\n", sound.filename().string().c_str(),
              result.report.ops_before.at("Relu"), relus, result.report.verified.c_str());

  // Why: the Relu of the model is gone, replaced by what the rule proved equal to it.
  bool blamed = false;
  for (const optimizer::Replacement& r : result.report.explained.replaced) {
    std::printf("  %s (%s) is now %s, by %s\n", r.node.c_str(), r.op.c_str(), r.now.c_str(),
                r.rules.at(0).c_str());
    blamed = blamed || (r.op == "Relu" && r.rules == std::vector<std::string>{"relu-of-abs"});
  }

  bool ok = sound_proved && !wrong_proved && refused && relus == 0 && blamed &&
            result.report.verified == "passed";
  std::printf("%s\n", ok ? "as expected" : "NOT AS EXPECTED");
  return ok ? 0 : 1;
}
