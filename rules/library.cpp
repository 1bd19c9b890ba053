#include "rules/library.h"

#include <string>

#include "rules/parser.h"

namespace eqfuse::rules {

RuleSet library_rules() {
  RuleSet all;
  for (const auto& [name, text] : library_texts()) {
    RuleSet one = parse_rules(text, "rules/library/" + std::string(name));
    for (Rule& r : one.rules) all.rules.push_back(std::move(r));
    all.fusion.add(one.fusion);
  }
  return all;
}

}  // namespace eqfuse::rules
