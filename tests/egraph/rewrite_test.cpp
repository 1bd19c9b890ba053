// Patterns, e-matching, multi-patterns and appliers: known answers.
#include "egraph/rewrite.h"

#include <catch2/catch.hpp>
#include <cmath>
#include <optional>

#include "egraph/runner.h"
#include "egraph/term.h"

using namespace eqfuse::egraph;

namespace {

// Constant folding over + - * / on number leaves: a class whose value is known gets the
// literal as a member.
class ConstantFolding : public Analysis {
 public:
  std::vector<std::optional<double>> value;

  static std::optional<double> number(std::string_view text) {
    char* end = nullptr;
    std::string s(text);
    double v = std::strtod(s.c_str(), &end);
    if (s.empty() || *end != '\0') return std::nullopt;
    return v;
  }
  std::optional<double> eval(const EGraph& g, NodeId n) const {
    auto kids = g.children(n);
    std::string_view op = symbol_name(g.op(n));
    if (kids.empty()) return number(op);
    if (kids.size() != 2) return std::nullopt;
    auto a = value[g.find(kids[0])], b = value[g.find(kids[1])];
    if (!a || !b) return std::nullopt;
    if (op == "+") return *a + *b;
    if (op == "-") return *a - *b;
    if (op == "*") return *a * *b;
    if (op == "/" && *b != 0) return *a / *b;
    return std::nullopt;
  }
  void make(const EGraph& g, NodeId n) override {
    value.resize(std::max<size_t>(value.size(), n + 1));
    value[n] = eval(g, n);
  }
  DidMerge merge(EClassId into, EClassId from) override {
    if (!value[into] && value[from]) {
      value[into] = value[from];
      return {true, false};
    }
    return {false, value[into].has_value() && !value[from]};
  }
  bool join(const EGraph& g, EClassId c, NodeId n) override {
    if (value[c]) return false;
    value[c] = eval(g, n);
    return value[c].has_value();
  }
  void modify(EGraph& g, EClassId c) override {
    if (!value[c]) return;
    double v = *value[c];
    std::string text =
        v == std::floor(v) ? std::to_string(static_cast<long long>(v)) : std::to_string(v);
    g.merge(c, g.add(intern(text)));
  }
};

std::vector<Rewrite> arithmetic_rules() {
  std::vector<Rewrite> rules;
  rules.push_back(Rewrite::make("comm-mul", "(* ?a ?b)", "(* ?b ?a)"));
  rules.push_back(Rewrite::make("assoc-mul", "(* ?a (* ?b ?c))", "(* (* ?a ?b) ?c)"));
  rules.push_back(Rewrite::make("div-mul", "(/ (* ?a ?b) ?c)", "(* ?a (/ ?b ?c))"));
  rules.push_back(Rewrite::make("mul-one", "(* ?a 1)", "?a"));
  Rewrite cancel = Rewrite::make("div-self", "(/ ?a ?a)", "1");
  cancel.conditions.push_back([](const EGraph& g, EClassId, Subst s) {
    // ?a != 0: the class of ?a does not contain the literal 0.
    EClassId zero = g.lookup(intern("0"), kNoAttrs, {});
    return zero == kNoId || g.find(zero) != g.find(s[0]);
  });
  rules.push_back(std::move(cancel));
  return rules;
}

std::vector<Rewrite> ac_rules() {
  std::vector<Rewrite> rules;
  rules.push_back(Rewrite::make("comm-add", "(+ ?a ?b)", "(+ ?b ?a)"));
  rules.push_back(Rewrite::make("assoc-add", "(+ ?a (+ ?b ?c))", "(+ (+ ?a ?b) ?c)"));
  return rules;
}

// Brute-force model of `+` over n distinct leaves saturated under AC: one class per non-empty
// subset, one node per leaf plus one per ordered split of each subset of size >= 2.
std::pair<size_t, size_t> ac_model(int n) {
  size_t classes = 0, nodes = 0;
  for (unsigned s = 1; s < (1u << n); ++s) {
    ++classes;
    if (__builtin_popcount(s) == 1) {
      ++nodes;
      continue;
    }
    for (unsigned a = (s - 1) & s; a != 0; a = (a - 1) & s) ++nodes;  // (+ A S\A), A proper
  }
  return {nodes, classes};
}

}  // namespace

TEST_CASE("(/ (* a 2) 2) saturates to a with constant folding", "[rewrite]") {
  ConstantFolding cf;
  EGraph g(&cf);
  EClassId root = add_term(g, "(/ (* a 2) 2)");
  auto rules = arithmetic_rules();
  RunReport report = run(g, rules);
  CHECK(report.stop_reason == StopReason::Saturated);
  EClassId a = g.lookup(intern("a"), kNoAttrs, {});
  REQUIRE(a != kNoId);
  CHECK(g.find(root) == g.find(a));
}

TEST_CASE("AC of + matches the brute-force model exactly", "[rewrite]") {
  for (int n = 2; n <= 6; ++n) {
    EGraph g;
    std::string term = "x0";
    for (int i = 1; i < n; ++i) term = "(+ x" + std::to_string(i) + " " + term + ")";
    add_term(g, term);
    RunReport report = run(g, ac_rules());
    CHECK(report.stop_reason == StopReason::Saturated);
    auto [nodes, classes] = ac_model(n);
    INFO("n = " << n);
    CHECK(g.num_nodes() == nodes);
    CHECK(g.num_classes() == classes);
  }
}

TEST_CASE("repeated variables and literal leaves", "[rewrite]") {
  EGraph g;
  add_term(g, "(f a a)");
  add_term(g, "(f a b)");
  add_term(g, "(g 0 a)");
  add_term(g, "(g 1 a)");
  g.rebuild();
  VarTable vars;
  Pattern same = Pattern::parse("(f ?x ?x)", vars, true);
  CHECK(Query(same, vars.size()).search(g).size() == 1);
  VarTable v2;
  Pattern lit = Pattern::parse("(g 0 ?y)", v2, true);
  Matches m = Query(lit, v2.size()).search(g);
  REQUIRE(m.size() == 1);
  CHECK(m.subst(0)[0] == g.lookup(intern("a"), kNoAttrs, {}));
  VarTable v3;
  CHECK_THROWS_WITH(Pattern::parse("(f ?x ?z)", v3, false),
                    Catch::Contains("'?x' is not bound by the left-hand side"));
}

TEST_CASE("attribute payloads: literal match, variable binding, rebuild", "[rewrite]") {
  EGraph g;
  EClassId t = add_term(g, "(T :perm (1 0) (T :perm (1 0) x))");
  add_term(g, "(T :perm (0 1) y)");
  add_term(g, "(T z)");
  std::vector<Rewrite> rules;
  rules.push_back(Rewrite::make("tt", "(T :perm ?p (T :perm ?p ?x))", "?x"));
  rules.push_back(Rewrite::make("id", "(T :perm (0 1) ?x)", "?x"));
  rules.push_back(Rewrite::make("swap", "(T :perm ?p ?x)", "(S :perm ?p :k 1 ?x)"));
  RunReport report = run(g, rules);
  CHECK(report.stop_reason == StopReason::Saturated);
  CHECK(g.find(t) == g.lookup(intern("x"), kNoAttrs, {}));
  EClassId y = g.lookup(intern("y"), kNoAttrs, {});
  CHECK(g.lookup(intern("T"), intern_attrs({{intern("perm"), intern("(0 1)")}}),
                 std::vector<EClassId>{y}) == y);
  // (T z) has no :perm, so `swap` does not match it.
  EClassId z = g.lookup(intern("z"), kNoAttrs, {});
  CHECK(g.find(g.lookup(intern("T"), kNoAttrs, std::vector<EClassId>{z})) != z);
  AttrId s_attrs = intern_attrs({{intern("k"), intern("1")}, {intern("perm"), intern("(1 0)")}});
  CHECK(g.lookup(intern("S"), s_attrs, std::vector<EClassId>{g.lookup(intern("x"), 0, {})}) !=
        kNoId);
}

TEST_CASE("multi-patterns match jointly and build shared results", "[rewrite]") {
  EGraph g;
  EClassId x = add_term(g, "(MatMul a b)");
  EClassId y = add_term(g, "(MatMul a c)");
  add_term(g, "(MatMul d c)");
  Rewrite rw =
      Rewrite::make_multi("merge-matmul", {{"x", "(MatMul ?a ?b)"}, {"y", "(MatMul ?a ?c)"}},
                          {{"z", "(MatMul ?a (Concat ?b ?c))"},
                           {"x", "(Proj :index 0 (Split ?z))"},
                           {"y", "(Proj :index 1 (Split ?z))"}});
  g.rebuild();
  Matches m = rw.search(g);
  // Pairs sharing ?a: (a b, a b), (a b, a c), (a c, a b), (a c, a c), (d c, d c).
  CHECK(m.size() == 5);
  std::vector<Rewrite> rules;
  rules.push_back(std::move(rw));
  RunnerOptions opts;
  opts.limits.iterations = 1;
  run(g, rules, opts);
  add_term(g, "(Concat b c)");
  EClassId z = add_term(g, "(MatMul a (Concat b c))");
  EClassId split = g.add(intern("Split"), std::vector<EClassId>{z});
  AttrId idx0 = intern_attrs({{intern("index"), intern("0")}});
  AttrId idx1 = intern_attrs({{intern("index"), intern("1")}});
  CHECK(g.find(x) == g.lookup(intern("Proj"), idx0, std::vector<EClassId>{split}));
  CHECK(g.find(y) == g.lookup(intern("Proj"), idx1, std::vector<EClassId>{split}));
}

TEST_CASE("C++ appliers", "[rewrite]") {
  EGraph g;
  EClassId t = add_term(g, "(neg (neg q))");
  std::vector<Rewrite> rules;
  rules.push_back(Rewrite::make("neg-neg", "(neg (neg ?x))",
                                [](EGraph& eg, EClassId root, Subst s) { eg.merge(root, s[0]); }));
  run(g, rules);
  CHECK(g.find(t) == g.lookup(intern("q"), kNoAttrs, {}));
}

TEST_CASE("parallel search gives the same matches and e-graph as serial", "[rewrite]") {
  auto saturate = [](int threads) {
    EGraph g;
    add_term(g, "(* (+ a (+ b (+ c d))) (+ e (+ f g)))");
    std::vector<Rewrite> rules = ac_rules();
    rules.push_back(Rewrite::make("comm-mul", "(* ?a ?b)", "(* ?b ?a)"));
    rules.push_back(Rewrite::make("dist", "(* ?a (+ ?b ?c))", "(+ (* ?a ?b) (* ?a ?c))"));
    RunnerOptions opts;
    opts.threads = threads;
    opts.limits.iterations = 6;
    run(g, rules, opts);
    std::vector<uint32_t> dump;
    for (NodeId n = 0; n < g.num_node_slots(); ++n) {
      dump.push_back(g.op(n));
      dump.push_back(g.find(n));
      for (EClassId c : g.children(n)) dump.push_back(c);
    }
    return dump;
  };
  auto one = saturate(1);
  CHECK(one.size() > 10000);
  CHECK(one == saturate(2));
  CHECK(one == saturate(4));
}
