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

TEST_CASE("Round is half to even: its laws are proved, rounding half up refuted",
          "[rules][prove][fast]") {
  RuleProof twice = prove_text("(rewrite round-round (Round (Round ?x)) (Round ?x))");
  INFO(twice.reason);
  CHECK(twice.verdict == Verdict::Proved);
  // Laws that relate the floors of two different arguments (Round(-x) = -Round(x), or a shift
  // by an even integer) are true but Z3 4.8.12 gives up on them within the limits: unknown.
  RuleProof up =
      prove_text("(rewrite round-up (Round ?x) (Floor (Add ?x (Constant :value_float 0.5))))");
  CHECK(up.verdict == Verdict::Refuted);
  REQUIRE(up.counterexample);
  CHECK(up.counterexample->json.value("found_by", "") == "Z3 counterexample");
}

// Z3 4.8.12 decides integer division by a constant (linear integer arithmetic) but gives up on
// division by a variable (nonlinear), so the true rules divide by constants; wrong rules with a
// variable divisor are still refuted, since finding a model is the easy direction.
TEST_CASE("integer Div truncates toward zero and gives 0 for a zero divisor",
          "[rules][prove][fast]") {
  for (int divisor : {2, -3, 0}) {
    RuleProof neg = prove_text(
        "(rewrite idiv-neg (Div (Neg ?a) ?c) (Neg (Div ?a ?c)) "
        ":when (dtype ?a i64) (dtype ?c i64) (value ?c " +
        std::to_string(divisor) + "))");
    INFO("divisor " << divisor << ": " << neg.reason);
    CHECK(neg.verdict == Verdict::Proved);
  }
  // Division does not cancel: (1 / 2) * 2 is 0, and so is (1 / 0) * 0.
  RuleProof cancel = prove_text(
      "(rewrite idiv-cancel (Mul (Div ?a ?b) ?b) ?a "
      ":when (dtype ?a i64) (dtype ?b i64) (same-shape ?a ?b))");
  CHECK(cancel.verdict == Verdict::Refuted);
  REQUIRE(cancel.counterexample);
  CHECK(cancel.counterexample->json.value("found_by", "") == "Z3 counterexample");
}

TEST_CASE("integer Mod follows ONNX's fmod attribute for the sign", "[rules][prove][fast]") {
  // fmod 0 takes the sign of the divisor: (-a) mod -3 = -(a mod 3).
  RuleProof mod = prove_text(
      "(rewrite mod-neg-both (Mod (Neg ?a) ?m) (Neg (Mod ?a (Neg ?m))) "
      ":when (dtype ?a i64) (dtype ?m i64) (value ?m -3))");
  INFO(mod.reason);
  CHECK(mod.verdict == Verdict::Proved);
  // fmod 1 takes the sign of the dividend: fmod(-a, 3) = -fmod(a, 3)...
  RuleProof fmod = prove_text(
      "(rewrite fmod-neg (Mod :fmod 1 (Neg ?a) ?c) (Neg (Mod :fmod 1 ?a ?c)) "
      ":when (dtype ?a i64) (dtype ?c i64) (value ?c 3))");
  INFO(fmod.reason);
  CHECK(fmod.verdict == Verdict::Proved);
  // ... which fmod 0 does not: (-1) mod 3 is 2.
  RuleProof wrong = prove_text(
      "(rewrite mod-neg (Mod (Neg ?a) ?b) (Neg (Mod ?a ?b)) :when (dtype ?a i64) (dtype ?b i64))");
  CHECK(wrong.verdict == Verdict::Refuted);
  REQUIRE(wrong.counterexample);
  CHECK(wrong.counterexample->json.value("found_by", "") == "Z3 counterexample");
}

TEST_CASE("proofs state their bounds", "[rules][prove][fast]") {
  RuleProof p =
      prove_text("(rewrite t (Transpose :perm ?p (Neg ?x)) (Neg (Transpose :perm ?p ?x)))");
  CHECK(p.verdict == Verdict::Proved);
  CHECK(p.coverage.at("attrs").at("p").size() >= 34);  // every permutation of ranks 0-4
  CHECK(p.coverage.at("ranks").at("x").size() == 5);
  CHECK(p.coverage_text.find("ranks ?x {0,1,2,3,4}") != std::string::npos);
  CHECK(p.coverage.at("bindings").get<size_t>() == p.bounds.size());
}
