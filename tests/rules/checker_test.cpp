// Conditions, representative shapes, instantiate_rule and the shape check of right-hand sides.
#include "rules/checker.h"

#include <catch2/catch.hpp>

#include "ir/interpreter.h"
#include "rules/condition.h"
#include "rules/parser.h"
#include "rules/shapes.h"

using namespace eqfuse;
using namespace eqfuse::rules;
using ir::DType;

namespace {

Rule one_rule(const std::string& text) {
  return parse_rules(text, "t.rules").rules.at(0);
}

bool eval(const std::string& cond, const RuleBinding& b) {
  Condition c{parse_sexpr(cond), cond};
  return holds(c, BindingView(b));
}

ir::TensorType f32(std::vector<ir::Dim> dims) {
  return {DType::f32, ir::Shape(std::move(dims))};
}

std::string check_error(const std::string& text) {
  try {
    check_rule(one_rule(text));
  } catch (const Error& e) {
    return e.what();
  }
  return "";
}

}  // namespace

TEST_CASE("conditions: shapes, dims, dtypes, arithmetic, constants") {
  RuleBinding b;
  b.types["x"] = f32({2, 3});
  b.types["y"] = f32({3, 4});
  b.types["s"] = f32({ir::Dim::symbol("batch"), 3});
  b.types["t"] = f32({ir::Dim::symbol("batch"), 1});
  b.types["i"] = {DType::i64, ir::Shape({3})};
  b.attrs["p"] = ir::AttrValue(std::vector<int64_t>{1, 0});
  b.attrs["a"] = ir::AttrValue(int64_t{-1});
  b.values["z"] = ir::Tensor(DType::f32, {3});
  b.values["one"] = ir::Tensor::from_doubles(DType::f32, {}, {1.0});
  CHECK(eval("(rank ?x 2)", b));
  CHECK_FALSE(eval("(rank ?x 3)", b));
  CHECK(eval("(= (dim ?x -1) (dim ?y 0))", b));
  CHECK(eval("(dim-value ?y 1 4)", b));
  CHECK(eval("(= (+ (dim ?x 1) 1) 4)", b));
  CHECK(eval("(= (* (dim ?x 0) (dim ?x 1)) (numel ?x))", b));
  CHECK(eval("(< (rank ?i) (rank ?x))", b));
  CHECK(eval("(= (% ?a (rank ?x)) 1)", b));
  CHECK(eval("(= ?p (list 1 0))", b));
  CHECK(eval("(= (nth ?p 0) 1)", b));
  CHECK(eval("(= (len ?p) (rank ?x))", b));
  CHECK(eval("(= (shape ?x) (list 2 3))", b));
  CHECK(eval("(broadcastable ?x ?z)", b));
  CHECK_FALSE(eval("(broadcastable ?x ?y)", b));
  CHECK(eval("(broadcastable ?s ?t)", b));
  CHECK(eval("(same-shape ?s (Relu ?s))", b));
  CHECK(eval("(same-shape ?x (MatMul ?x (Transpose :perm (1 0) ?x)))", b) == false);
  CHECK(eval("(= (dim ?s 0) (dim ?t 0))", b));     // same symbol
  CHECK_FALSE(eval("(= (dim ?s 0) 2)", b));        // unknown: does not hold
  CHECK_FALSE(eval("(not (= (dim ?s 0) 2))", b));  // still unknown
  CHECK(eval("(dtype ?i i64)", b));
  CHECK(eval("(is-float ?x)", b));
  CHECK(eval("(is-int ?i)", b));
  CHECK(eval("(and (const ?z) (zero ?z) (not (nonzero ?z)))", b));
  CHECK(eval("(and (scalar ?one) (one ?one) (value ?one 1))", b));
  CHECK_FALSE(eval("(const ?x)", b));
  CHECK(eval("(or (rank ?x 5) (rank ?y 2))", b));
  CHECK_FALSE(eval("(rank ?unbound 2)", b));
  CHECK(eval("(distinct ?x ?y)", b));
  CHECK_FALSE(eval("(distinct ?x ?x)", b));
}

TEST_CASE("shapes: representative bindings satisfy the left-hand side and the conditions") {
  Rule r = one_rule(
      "(rewrite mm-assoc (MatMul (MatMul ?a ?b) ?c) (MatMul ?a (MatMul ?b ?c)) "
      ":when (rank ?a 2) (rank ?b 2) (rank ?c 2))");
  std::vector<RuleBinding> bs = representative_bindings(r);
  REQUIRE(bs.size() >= 2);
  for (const RuleBinding& b : bs) {
    CHECK(b.types.at("a").shape.rank() == 2);
    CHECK(b.types.at("a").shape[1] == b.types.at("b").shape[0]);
  }
  Rule t =
      one_rule("(rewrite tt (Transpose (Transpose ?x :perm ?p) :perm ?q) ?x :when (rank ?x 3))");
  for (const RuleBinding& b : representative_bindings(t)) CHECK(b.types.at("x").shape.rank() == 3);
  CHECK_FALSE(representative_bindings(t).empty());
  Rule c = one_rule(
      "(rewrite mul-one (Mul ?x ?c) ?x :when (one ?c) (broadcastable ?x ?c) (same-shape ?x (Mul ?x "
      "?c)))");
  auto cb = representative_bindings(c);
  REQUIRE_FALSE(cb.empty());
  CHECK(cb[0].values.at("c").get(0) == 1.0);
}

TEST_CASE("instantiate_rule: inputs are the class variables, outputs LHS roots then results") {
  Rule r = one_rule(
      "(rewrite tt (Transpose (Transpose ?x :perm ?p) :perm ?p) ?x :when (= ?p (list 1 0)))");
  ir::Graph g =
      instantiate_rule(r, {{"x", f32({2, 3})}}, {{"p", ir::AttrValue(std::vector<int64_t>{1, 0})}});
  REQUIRE(g.inputs().size() == 1);
  REQUIRE(g.outputs().size() == 2);
  CHECK(g.value(g.outputs()[0]).type == f32({2, 3}));
  ir::Tensor x = ir::Tensor::from_doubles(DType::f32, {2, 3}, {1, 2, 3, 4, 5, 6});
  std::vector<ir::Tensor> out = ir::Interpreter(g).run({x});
  CHECK(out[0].same_bits(out[1]));

  Rule mm = parse_rules(R"((rewrite merge-matmul (multi (MatMul ?x ?w1) (MatMul ?x ?w2))
      (multi (Proj :index 0 (Split :axis -1 :split ((dim ?w1 -1) (dim ?w2 -1)) (MatMul ?x (Concat :axis -1 ?w1 ?w2))))
             (Proj :index 1 (Split :axis -1 :split ((dim ?w1 -1) (dim ?w2 -1)) (MatMul ?x (Concat :axis -1 ?w1 ?w2)))))
      :when (rank ?w1 2) (rank ?w2 2)))")
                .rules[0];
  ir::Graph mg =
      instantiate_rule(mm, {{"x", f32({2, 3})}, {"w1", f32({3, 4})}, {"w2", f32({3, 5})}}, {});
  REQUIRE(mg.outputs().size() == 4);
  CHECK(mg.value(mg.outputs()[1]).type == f32({2, 5}));
  CHECK(mg.value(mg.outputs()[3]).type == f32({2, 5}));
  CHECK_NOTHROW(check_rule(mm));
  // Without the rank conditions the rule is wrong for 1-D weights (MatMul then contracts them),
  // and the checker finds it.
  Rule loose = mm;
  loose.conditions.clear();
  CHECK_THROWS_WITH(check_rule(loose), Catch::Contains("fails shape inference"));
  CHECK_THROWS_WITH(instantiate_rule(mm, {{"x", f32({2, 3})}}, {}),
                    Catch::Contains("no type given for variable '?w1'"));
}

TEST_CASE("checker: a right-hand side that fails shape inference is rejected") {
  // MatMul's operands swapped: (2,3)x(3,4) holds, (3,4)x(2,3) does not infer.
  std::string e =
      check_error("(rewrite bad-swap (MatMul ?a ?b) (MatMul ?b ?a) :when (rank ?a 2) (rank ?b 2))");
  CHECK_THAT(e, Catch::Contains("t.rules:1:34") && Catch::Contains("fails shape inference") &&
                    Catch::Contains("?a: f32["));
  // a right-hand side of another type
  e = check_error(
      "(rewrite bad-t (Relu ?x) (Transpose :perm (1 0) ?x) :when (rank ?x 2) (!= (dim ?x 0) (dim "
      "?x 1)))");
  CHECK_THAT(e,
             Catch::Contains("has type f32[") && Catch::Contains("where the left-hand side has"));
  // a concat on the wrong axis
  e = check_error(R"((rewrite bad-axis (multi (MatMul ?x ?w1) (MatMul ?x ?w2))
      (multi (Proj :index 0 (Split :axis 0 :split ((dim ?w1 -1) (dim ?w2 -1)) (MatMul ?x (Concat :axis 0 ?w1 ?w2))))
             (Proj :index 1 (Split :axis 0 :split ((dim ?w1 -1) (dim ?w2 -1)) (MatMul ?x (Concat :axis 0 ?w1 ?w2)))))
      :when (rank ?x 2) (rank ?w1 2) (rank ?w2 2)))");
  CHECK_THAT(e, Catch::Contains("fails shape inference"));
  // good rules pass, and a rule no shape satisfies gets a warning rather than an error
  RuleSet set = parse_rules(
      "(rewrite ok (Transpose (Transpose ?x :perm (1 0)) :perm (1 0)) ?x)\n"
      "(rewrite never (Relu ?x) ?x :when (rank ?x 2) (rank ?x 3))");
  check_rules(set);
  REQUIRE(set.warnings.size() == 1);
  CHECK_THAT(set.warnings[0], Catch::Contains("'never'"));
}
