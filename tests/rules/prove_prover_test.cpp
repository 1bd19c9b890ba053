// The prover on hand-built graph pairs (its real interface) and on parsed rules.
#include <catch2/catch.hpp>

#include "ir/builder.h"
#include "rules/parser.h"
#include "rules/prove/prover.h"

using namespace eqfuse;
using namespace eqfuse::rules::prove;
using ir::DType;
using ir::GraphBuilder;
using ir::ValueId;

namespace {

// lhs(x, y) == rhs(x, y)? over f32 inputs of the given dims.
template <typename Side>
GraphProof prove_pair(std::vector<std::vector<ir::Dim>> dims, Side lhs, Side rhs) {
  GraphBuilder b("pair");
  std::vector<ValueId> in;
  for (size_t i = 0; i < dims.size(); ++i)
    in.push_back(b.input("x" + std::to_string(i), DType::f32, dims[i]));
  ValueId l = lhs(b, in);
  ValueId r = rhs(b, in);
  b.output(l);
  b.output(r);
  ir::Graph g = std::move(b).finish();
  z3::context ctx;
  return prove_graph(g, 1, ctx);
}

using Side = std::function<ValueId(GraphBuilder&, const std::vector<ValueId>&)>;

RuleProof prove_text(const std::string& text) {
  rules::RuleSet set = rules::parse_rules(text);
  REQUIRE(set.rules.size() == 1);
  return prove_rule(set.rules[0]);
}

}  // namespace

TEST_CASE("elementwise commutativity is proved, its sub-twin refuted", "[rules][prove][fast]") {
  GraphProof add = prove_pair({{2, 3}, {3}}, Side([](GraphBuilder& b, auto& x) {
                                return b.op("Add", {x[0], x[1]});
                              }),
                              Side([](GraphBuilder& b, auto& x) {
                                return b.op("Add", {x[1], x[0]});
                              }));
  CHECK(add.verdict == Verdict::Proved);
  GraphProof sub = prove_pair({{2, 2}, {2, 2}}, Side([](GraphBuilder& b, auto& x) {
                                return b.op("Sub", {x[0], x[1]});
                              }),
                              Side([](GraphBuilder& b, auto& x) {
                                return b.op("Sub", {x[1], x[0]});
                              }));
  CHECK(sub.verdict == Verdict::Refuted);
  REQUIRE(sub.counterexample);
  CHECK(sub.counterexample->text.find("x0") != std::string::npos);
}

TEST_CASE("MatMul associativity and transpose rules are proved", "[rules][prove][fast]") {
  GraphProof assoc = prove_pair({{2, 3}, {3, 2}, {2, 2}}, Side([](GraphBuilder& b, auto& x) {
                                  return b.op("MatMul", {b.op("MatMul", {x[0], x[1]}), x[2]});
                                }),
                                Side([](GraphBuilder& b, auto& x) {
                                  return b.op("MatMul", {x[0], b.op("MatMul", {x[1], x[2]})});
                                }));
  CHECK(assoc.verdict == Verdict::Proved);
  ir::AttrList perm = {{"perm", std::vector<int64_t>{1, 0}}};
  GraphProof t = prove_pair(
      {{2, 3}, {3, 2}}, Side([&](GraphBuilder& b, auto& x) {
        return b.op("Transpose", {b.op("MatMul", {x[0], x[1]})}, perm);
      }),
      Side([&](GraphBuilder& b, auto& x) {
        return b.op("MatMul", {b.op("Transpose", {x[1]}, perm), b.op("Transpose", {x[0]}, perm)});
      }));
  CHECK(t.verdict == Verdict::Proved);
}

TEST_CASE("exp laws come from ground axioms, division needs a nonzero divisor",
          "[rules][prove][fast]") {
  GraphProof exp = prove_pair({{2}, {2}}, Side([](GraphBuilder& b, auto& x) {
                                return b.op("Exp", {b.op("Add", {x[0], x[1]})});
                              }),
                              Side([](GraphBuilder& b, auto& x) {
                                return b.op("Mul", {b.op("Exp", {x[0]}), b.op("Exp", {x[1]})});
                              }));
  CHECK(exp.verdict == Verdict::Proved);
  GraphProof div =
      prove_pair({{2}, {2}}, Side([](GraphBuilder& b, auto& x) {
                   return b.op("Div", {b.op("Mul", {x[0], x[1]}), x[1]});
                 }),
                 Side([](GraphBuilder& b, auto& x) { return b.op("Identity", {x[0]}); }));
  CHECK(div.verdict == Verdict::Refuted);
}

TEST_CASE("rules are proved at several bindings and state them", "[rules][prove][fast]") {
  RuleProof p =
      prove_text("(rewrite mul-add-distribute (Mul ?a (Add ?b ?c)) (Add (Mul ?a ?b) (Mul ?a ?c)))");
  CHECK(p.verdict == Verdict::Proved);
  CHECK(p.bounds.size() >= 2);
  RuleProof w = prove_text("(rewrite relu-add (Relu (Add ?a ?b)) (Add (Relu ?a) (Relu ?b)))");
  CHECK(w.verdict == Verdict::Refuted);
  REQUIRE(w.counterexample);
  CHECK(w.counterexample->json.contains("inputs"));
}

TEST_CASE("Conv is multi-affine: scaling its input scales its output", "[rules][prove][fast]") {
  GraphProof conv = prove_pair({{1, 2, 3, 3}, {2, 2, 2, 2}, {}}, Side([](GraphBuilder& b, auto& x) {
                                 return b.op("Conv", {b.op("Mul", {x[0], x[2]}), x[1]});
                               }),
                               Side([](GraphBuilder& b, auto& x) {
                                 return b.op("Mul", {b.op("Conv", {x[0], x[1]}), x[2]});
                               }));
  INFO(conv.reason);
  CHECK(conv.verdict == Verdict::Proved);
}
