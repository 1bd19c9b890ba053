#include "rules/prove/prover.h"

#include <fmt/format.h>

#include <algorithm>
#include <chrono>
#include <map>
#include <set>

#include "ir/interpreter.h"
#include "rules/checker.h"
#include "rules/condition.h"
#include "rules/prove/bindings.h"
#include "rules/prove/encode.h"
#include "rules/prove/watchdog.h"
#include "rules/prove/witness.h"
#include "support/error.h"

namespace eqfuse::rules::prove {

std::string_view verdict_name(Verdict v) {
  switch (v) {
    case Verdict::Proved:
      return "proved";
    case Verdict::Refuted:
      return "refuted";
    case Verdict::Unknown:
      return "unknown";
    case Verdict::Invalid:
      return "invalid";
    case Verdict::Unseparated:
      return "unseparated";
  }
  return "unknown";
}

std::optional<Verdict> parse_verdict(std::string_view name) {
  for (Verdict v : {Verdict::Proved, Verdict::Refuted, Verdict::Unknown, Verdict::Invalid,
                    Verdict::Unseparated})
    if (verdict_name(v) == name) return v;
  return std::nullopt;
}

namespace {

std::string values_str(const ir::Tensor& t) {
  std::string s = "[";
  for (int64_t i = 0; i < t.numel(); ++i) s += (i ? ", " : "") + fmt::format("{:.6g}", t.get(i));
  return s + "]";
}

Counterexample make_counterexample(const ir::Graph& graph, const std::vector<ir::Tensor>& inputs,
                                   const Mismatch& m, const std::string& binding,
                                   const std::string& how) {
  Counterexample c;
  c.json["binding"] = binding;
  c.json["found_by"] = how;
  std::string text = how + (binding.empty() ? "" : " at " + binding) + ":";
  for (size_t i = 0; i < inputs.size(); ++i) {
    const std::string& name = graph.value(graph.inputs()[i]).name;
    c.json["inputs"][name] = {{"shape", inputs[i].dims()}, {"values", inputs[i].to_doubles()}};
    text += fmt::format(" {} = {}{};", name, ir::Shape::from_dims(inputs[i].dims()).str(),
                        values_str(inputs[i]));
  }
  c.json["output"] = m.output;
  c.json["element"] = m.element;
  c.json["lhs"] = m.lhs;
  c.json["rhs"] = m.rhs;
  text += fmt::format(" output {} element {}: left side {:.9g}, right side {:.9g}", m.output,
                      m.element, m.lhs, m.rhs);
  c.text = text;
  return c;
}

// What the conditions say about constant class variables.
void scan_facts(const Sexpr& e, std::map<std::string, std::string>& facts) {
  if (!e.is_list() || e.items.empty()) return;
  const Sexpr& head = e.items[0];
  if (head.is_symbol("not")) return;
  if (head.kind == Sexpr::Kind::Symbol && e.items.size() >= 2 &&
      e.items[1].kind == Sexpr::Kind::Var) {
    const std::string& f = head.text;
    std::string& fact = facts[e.items[1].text];
    if (f == "zero" || f == "one" || f == "value") fact = "fixed";
    if (f == "nonzero" && fact != "fixed") fact = "nonzero";
  }
  for (const Sexpr& item : e.items) scan_facts(item, facts);
}

// Constants the rule only requires to be constant (or nonzero) are proved for every value:
// they become symbolic inputs. Those whose value a condition fixes keep it.
RuleBinding symbolic_binding(const Rule& rule, const RuleBinding& b,
                             std::vector<std::string>& nonzero) {
  std::map<std::string, std::string> facts;
  for (const Condition& c : rule.conditions) scan_facts(c.form, facts);
  RuleBinding out = b;
  for (const auto& [name, value] : b.values) {
    if (!ir::is_floating(value.dtype()) || facts[name] == "fixed") continue;
    out.types[name] = value.type();
    out.values.erase(name);
    if (facts[name] == "nonzero") nonzero.push_back(name);
  }
  return out;
}

// A key for a query's structure up to renaming of the input constants: the output elements of
// a binding (every position of a convolution, every element of an elementwise rule) and the
// bindings of one rule mostly ask the same question about different inputs, and Z3's answer
// cannot depend on the names. Two independent 64-bit hashes over the term DAG, with each input
// constant replaced by the order of its first appearance (and whether it is assumed nonzero).
std::string structure_key(const z3::expr& root, const std::set<unsigned>& nonzero) {
  struct Hash {
    uint64_t a, b;
  };
  auto mix = [](Hash h, uint64_t x) {
    h.a = (h.a ^ x) * 1099511628211ULL;
    h.b = (h.b + x + 0x9e3779b97f4a7c15ULL) * 0xbf58476d1ce4e5b9ULL;
    h.b ^= h.b >> 31;
    return h;
  };
  auto mix_text = [&](Hash h, const std::string& t) {
    for (unsigned char c : t) h = mix(h, c);
    return mix(h, 0xff);
  };
  std::map<unsigned, Hash> memo;
  uint64_t next_input = 0;
  std::vector<std::pair<z3::expr, bool>> stack = {{root, false}};
  while (!stack.empty()) {
    auto [e, expanded] = stack.back();
    stack.pop_back();
    unsigned id = e.id();
    if (memo.count(id)) continue;
    if (!e.is_app()) {
      memo[id] = mix_text({1, 2}, e.to_string());  // quantifiers and variables: as written
      continue;
    }
    unsigned n = e.num_args();
    if (!expanded && n > 0) {
      stack.push_back({e, true});
      for (unsigned i = n; i-- > 0;) stack.push_back({e.arg(i), false});
      continue;
    }
    z3::func_decl d = e.decl();
    Hash h = mix({3, 4}, static_cast<uint64_t>(d.decl_kind()));
    h = mix(h, static_cast<uint64_t>(e.get_sort().sort_kind()));
    if (e.is_numeral()) {
      h = mix_text(h, e.get_decimal_string(40));
    } else if (d.decl_kind() == Z3_OP_UNINTERPRETED && n == 0) {
      h = mix(h, next_input++);
      h = mix(h, nonzero.count(id) ? 1 : 0);
    } else {
      if (d.decl_kind() == Z3_OP_UNINTERPRETED) h = mix_text(h, d.name().str());
      for (unsigned i = 0; i < n; ++i) {
        const Hash& c = memo.at(e.arg(i).id());
        h = mix(mix(h, c.a), c.b);
      }
    }
    memo[id] = h;
  }
  const Hash& h = memo.at(root.id());
  return fmt::format("{:016x}{:016x}", h.a, h.b);
}

}  // namespace

nlohmann::json coverage_json(const BindingCoverage& c) {
  nlohmann::json j = {{"ranks", nlohmann::json::object()}, {"dim_sizes", c.dim_sizes},
                      {"attrs", nlohmann::json::object()}, {"bindings", c.bindings},
                      {"candidates", c.candidates},        {"features", c.features},
                      {"uncovered", c.uncovered},          {"cap", c.cap},
                      {"exhausted", c.exhausted},          {"dim_pairs", c.dim_pairs},
                      {"attr_pairs", c.attr_pairs},        {"unseparated", c.unseparated}};
  for (const auto& [name, r] : c.ranks) j["ranks"][name] = r;
  for (const auto& [name, v] : c.attrs) j["attrs"][name] = v;
  return j;
}

nlohmann::json proof_json(const RuleProof& p) {
  nlohmann::json j = {{"name", p.name},
                      {"verdict", verdict_name(p.verdict)},
                      {"seconds", p.seconds},
                      {"cached", p.from_cache},
                      {"bounds", p.bounds},
                      {"coverage", p.coverage},
                      {"coverage_text", p.coverage_text}};
  if (!p.reason.empty()) j["reason"] = p.reason;
  if (p.counterexample) {
    j["counterexample"] = p.counterexample->json;
    j["counterexample"]["text"] = p.counterexample->text;
  }
  return j;
}

GraphProof prove_graph(const ir::Graph& graph, size_t num_lhs, z3::context& ctx,
                       const ProveOptions& options, const std::vector<std::string>& nonzero,
                       std::set<std::string>* proved, Watchdog* watchdog,
                       std::chrono::steady_clock::time_point deadline) {
  GraphProof proof;
  Primitives prims(ctx);
  Encoder encoder(prims);
  Encoding enc;
  try {
    enc = encoder.encode(graph);
  } catch (const Error& e) {
    proof.verdict = e.kind() == Error::Kind::Unsupported ? Verdict::Unknown : Verdict::Invalid;
    proof.reason = e.what();
    return proof;
  }
  z3::solver solver(ctx);
  z3::params params(ctx);
  params.set("rlimit", options.rlimit);
  // A backstop: some nonlinear queries overrun the resource limit in Z3 4.8.12.
  params.set("timeout", options.timeout_ms);
  solver.set(params);
  std::set<unsigned> nonzero_ids;
  for (size_t i = 0; i < graph.inputs().size(); ++i) {
    const std::string& name = graph.value(graph.inputs()[i]).name;
    if (std::find(nonzero.begin(), nonzero.end(), name) == nonzero.end()) continue;
    for (const z3::expr& x : enc.inputs[i]) {
      solver.add(x != ctx.real_val(0));
      nonzero_ids.insert(x.id());
    }
  }
  z3::params som(ctx);
  som.set("som", true);
  // Expand fully: the default blow-up cap (10x) leaves s * (a sum of 24 products) unexpanded, and
  // the cancellation it hides then sends Z3's nonlinear solver past every limit.
  som.set("som_blowup", 1000000u);
  for (size_t k = 0; k < num_lhs; ++k) {
    const Terms& lhs = enc.outputs.at(k);
    const Terms& rhs = enc.outputs.at(k + num_lhs);
    if (lhs.size() != rhs.size()) {
      proof.verdict = Verdict::Invalid;
      proof.reason =
          fmt::format("output {}: the sides have {} and {} elements", k, lhs.size(), rhs.size());
      return proof;
    }
    for (size_t e = 0; e < lhs.size(); ++e) {
      if (z3::eq(lhs[e], rhs[e])) continue;
      // The query's wall-clock limit, over the simplifier and the solver alike.
      auto now = std::chrono::steady_clock::now();
      auto query_deadline = now + std::chrono::milliseconds(options.timeout_ms);
      bool rule_limit = deadline < query_deadline;
      if (watchdog) watchdog->arm(std::min(query_deadline, deadline));
      auto timed_out = [&](const std::string& where) {
        proof.verdict = Verdict::Unknown;
        proof.timed_out = true;
        proof.reason = rule_limit ? "time limit: the rule's limit was reached in " + where
                                  : fmt::format(
                                        "time limit: the query limit of {} ms was reached "
                                        "in {}",
                                        options.timeout_ms, where);
        return proof;
      };
      std::string where = fmt::format("output {} element {}", k, e);
      z3::expr diff(ctx);
      try {
        diff = (lhs[e] - rhs[e]).simplify(som);
      } catch (const z3::exception&) {
        if (watchdog && watchdog->disarm()) return timed_out("the simplifier at " + where);
        throw;
      }
      if (watchdog && watchdog->disarm()) return timed_out("the simplifier at " + where);
      int64_t v = 1;
      if (diff.is_numeral() && diff.is_numeral_i64(v) && v == 0) continue;
      std::string key;
      if (proved) {
        // Over both sides, not the simplified difference: the axioms come from both, and a
        // renamed copy of a proved equation is proved.
        key = structure_key(lhs[e] - rhs[e], nonzero_ids);
        if (proved->count(key)) continue;
      }
      ++proof.queries;
      solver.push();
      for (const z3::expr& axiom : prims.ground_axioms({lhs[e], rhs[e], diff})) solver.add(axiom);
      solver.add(diff != ctx.real_val(0));
      if (watchdog) watchdog->arm(std::min(query_deadline, deadline));
      z3::check_result result = solver.check();
      if (watchdog && watchdog->disarm()) return timed_out(where);
      if (result == z3::unsat) {
        solver.pop();
        if (proved) proved->insert(key);
        continue;
      }
      if (result == z3::unknown) {
        proof.verdict = Verdict::Unknown;
        proof.reason =
            fmt::format("output {} element {}: Z3 gave up ({})", k, e, solver.reason_unknown());
        solver.pop();
        return proof;
      }
      z3::model model = solver.get_model();
      std::vector<ir::Tensor> inputs;
      for (size_t i = 0; i < graph.inputs().size(); ++i) {
        const ir::Value& in = graph.value(graph.inputs()[i]);
        ir::Tensor t(ir::is_floating(in.type.dtype) ? ir::DType::f64 : in.type.dtype,
                     in.type.shape.static_dims());
        for (size_t j = 0; j < enc.inputs[i].size(); ++j)
          t.set(static_cast<int64_t>(j), numeral_to_double(model.eval(enc.inputs[i][j], true)));
        inputs.push_back(std::move(t));
      }
      solver.pop();
      std::optional<Mismatch> m;
      try {
        m = compare_sides(graph, num_lhs, inputs);
      } catch (const Error& err) {
        proof.verdict = Verdict::Unknown;
        proof.reason = std::string("a Z3 counterexample could not be replayed: ") + err.what();
        return proof;
      }
      if (!m) {
        proof.verdict = Verdict::Unknown;
        proof.reason = fmt::format(
            "output {} element {}: Z3 found a counterexample over the uninterpreted functions "
            "that does not replay in float64",
            k, e);
        return proof;
      }
      proof.verdict = Verdict::Refuted;
      proof.counterexample = make_counterexample(graph, inputs, *m, "", "Z3 counterexample");
      return proof;
    }
  }
  return proof;
}

namespace {

// Where the two sides' types first disagree at the enumerated bindings (the right side has
// another type, or fails shape inference where the left side and the conditions hold).
struct TypeFailure {
  const RuleBinding* binding = nullptr;
  std::string message;
  bool rhs_fails = false;  // no type at all (else a different one)
};

std::optional<TypeFailure> first_type_failure(const Rule& rule,
                                              const std::vector<RuleBinding>& bindings,
                                              size_t& typed) {
  typed = 0;
  std::optional<TypeFailure> first;
  for (const RuleBinding& b : bindings) {
    BindingView view(b);
    bool ok = true;
    for (size_t i = 0; i < rule.rhs.size() && ok; ++i) {
      auto left = term_types(rule.lhs[i], view);
      auto right = term_types(rule.rhs[i], view);
      if (!right) {
        ok = false;
        if (first) continue;
        std::string why;
        try {
          instantiate_rule(rule, b);
        } catch (const Error& e) {
          why = std::string(": ") + e.what();
        }
        first = TypeFailure{&b, "the right-hand side fails shape inference" + why, true};
      } else if (left && (*left)[0] != (*right)[0]) {
        ok = false;
        if (first && !first->rhs_fails) continue;
        first = TypeFailure{&b,
                            fmt::format("the right-hand side has type {} where the left-hand "
                                        "side has {}",
                                        (*right)[0].str(), (*left)[0].str()),
                            false};
      }
    }
    typed += ok;
  }
  return first;
}

// A shape counterexample, replayed: the interpreter runs both sides at the binding (random
// inputs) and the outputs' shapes differ, or the right side cannot even be built.
Counterexample shape_counterexample(const Rule& rule, const TypeFailure& f,
                                    const std::string& where) {
  Counterexample c;
  c.json["binding"] = where;
  c.json["found_by"] = "shape inference";
  c.text = "at " + where + ": " + f.message;
  try {
    std::vector<std::string> nonzero;
    ir::Graph g = instantiate_rule(rule, *f.binding);
    std::mt19937_64 rng(1);
    std::vector<ir::Tensor> inputs = random_inputs(g, nonzero, rng);
    std::vector<ir::Tensor> outs = ir::Interpreter(as_float64(g)).run(inputs);
    size_t n = rule.lhs.size();
    for (size_t k = 0; k < n; ++k) {
      if (outs.at(k).dims() == outs.at(k + n).dims()) continue;
      c.json["output"] = k;
      c.json["lhs_shape"] = outs[k].dims();
      c.json["rhs_shape"] = outs[k + n].dims();
      c.text += fmt::format(" (replayed: the interpreter gives output {} the shapes {} and {})", k,
                            ir::Shape::from_dims(outs[k].dims()).str(),
                            ir::Shape::from_dims(outs[k + n].dims()).str());
      break;
    }
  } catch (const Error& e) {
    c.json["rhs_error"] = e.what();
  }
  return c;
}

}  // namespace

RuleProof prove_rule(const Rule& rule, const ProveOptions& options,
                     std::chrono::steady_clock::time_point file_deadline) {
  using Clock = std::chrono::steady_clock;
  auto start = Clock::now();
  auto deadline =
      std::min(file_deadline, start + std::chrono::duration_cast<Clock::duration>(
                                          std::chrono::duration<double>(options.rule_seconds)));
  RuleProof r;
  r.name = rule.name;
  auto finish = [&]() -> RuleProof {
    r.seconds = std::chrono::duration<double>(Clock::now() - start).count();
    return r;
  };
  Enumeration en;
  try {
    en = enumerate_bindings(rule, options.shapes);
    r.coverage = coverage_json(en.coverage);
    r.coverage_text = en.coverage.str();
  } catch (const Error& e) {
    r.verdict = Verdict::Invalid;
    r.reason = e.what();
    return finish();
  }
  const std::vector<RuleBinding>& bindings = en.bindings;
  if (bindings.empty()) {
    r.verdict = Verdict::Unknown;
    r.reason = "no binding within the bounds satisfies the rule's conditions";
    return finish();
  }
  size_t typed = 0;
  if (auto failure = first_type_failure(rule, bindings, typed)) {
    std::string where = binding_string(*failure->binding);
    r.bounds.push_back(where);
    if (failure->rhs_fails && typed == 0) {  // a malformed rule, not a wrong one
      r.verdict = Verdict::Invalid;
      r.reason = "at every binding " + failure->message + " (e.g. at " + where + ")";
      return finish();
    }
    r.verdict = Verdict::Refuted;
    r.reason = where + ": " + failure->message;
    r.counterexample = shape_counterexample(rule, *failure, where);
    return finish();
  }
  auto ctx = std::make_unique<z3::context>();
  auto watchdog = std::make_unique<Watchdog>(*ctx);
  std::set<std::string> proved;  // structures of element queries already proved
  int unknowns = 0;
  size_t done = 0;
  r.verdict = Verdict::Proved;
  size_t num_lhs = rule.lhs.size();
  for (const RuleBinding& b : bindings) {
    std::string where = binding_string(b);
    if (Clock::now() >= deadline) {
      r.verdict = Verdict::Unknown;
      r.timed_out = true;
      r.reason = fmt::format("time limit: proved at {} of {} bindings before the limit", done,
                             bindings.size());
      break;
    }
    std::vector<std::string> nonzero;
    GraphProof gp;
    try {
      ir::Graph g = instantiate_rule(rule, symbolic_binding(rule, b, nonzero));
      gp = prove_graph(g, num_lhs, *ctx, options, nonzero, &proved, watchdog.get(), deadline);
    } catch (const z3::exception& e) {
      gp.verdict = Verdict::Unknown;
      gp.reason = std::string("Z3: ") + e.msg();
    } catch (const Error& e) {
      gp.verdict = Verdict::Invalid;
      gp.reason = e.what();
    }
    r.bounds.push_back(where);
    if (gp.timed_out) {  // an interrupted context stays canceled: start a fresh one
      watchdog.reset();
      ctx = std::make_unique<z3::context>();
      watchdog = std::make_unique<Watchdog>(*ctx);
    }
    if (gp.verdict == Verdict::Proved) {
      ++done;
      continue;
    }
    if (gp.verdict == Verdict::Refuted || gp.verdict == Verdict::Invalid) {
      r.verdict = gp.verdict;
      r.reason = gp.reason.empty() ? "" : where + ": " + gp.reason;
      if (gp.counterexample) {
        r.counterexample = gp.counterexample;
        r.counterexample->json["binding"] = where;
        r.counterexample->text = "at " + where + ": " + r.counterexample->text;
      }
      return finish();
    }
    if (r.verdict == Verdict::Proved) {
      r.verdict = Verdict::Unknown;
      r.reason = where + ": " + gp.reason;
      if (gp.timed_out) r.timed_out = true;
    }
    if (gp.timed_out && Clock::now() >= deadline) {
      r.reason +=
          fmt::format(" (proved at {} of {} bindings before the limit)", done, bindings.size());
      break;
    }
    // Later bindings may still refute the rule, but each unknown may have cost a timeout.
    if (++unknowns == 3) break;
  }
  // The numeric witness, at the proof's bindings and at the enumeration's wider ones.
  std::vector<const RuleBinding*> witness;
  for (const RuleBinding& b : bindings) witness.push_back(&b);
  for (const RuleBinding& b : en.witness) witness.push_back(&b);
  uint64_t seed = 1;
  size_t index = 0;
  for (const RuleBinding* b : witness) {
    ++index;
    if (Clock::now() >= deadline) break;  // the rule's limit holds for the witness too
    std::vector<std::string> nonzero;
    std::optional<NumericFailure> failure;
    ir::Graph g;
    try {
      g = instantiate_rule(rule, symbolic_binding(rule, *b, nonzero));
      failure =
          numeric_check(g, num_lhs, nonzero, options.witness_trials, seed++, options.witness_rtol);
    } catch (const Error&) {
      continue;  // a binding the interpreter cannot run (an unsupported kernel) checks nothing
    }
    if (!failure) continue;
    std::string where = binding_string(*b);
    if (failure->mismatch.element < 0) {
      r.verdict = Verdict::Refuted;
      r.reason = "the two sides have different numbers of elements at " + where;
      r.counterexample = make_counterexample(g, failure->inputs, failure->mismatch, where,
                                             "numeric witness (shapes differ)");
      return finish();
    }
    r.counterexample =
        make_counterexample(g, failure->inputs, failure->mismatch, where, "numeric witness");
    if (r.verdict == Verdict::Proved && index <= bindings.size()) {
      r.verdict = Verdict::Unknown;
      r.reason = "the numeric witness disagrees with the proof at " + where + " (an encoding bug?)";
    } else {
      r.reason = r.verdict == Verdict::Proved
                     ? "refuted by the numeric witness, beyond the proof's bounds"
                     : "refuted by the numeric witness";
      r.verdict = Verdict::Refuted;
    }
    return finish();
  }
  if (r.verdict == Verdict::Proved && !en.coverage.unseparated.empty()) {
    const auto& u = en.coverage.unseparated;
    r.verdict = Verdict::Unseparated;
    r.reason = "proved at bounds that do not separate " + u[0];
    for (size_t i = 1; i < std::min<size_t>(u.size(), 3); ++i) r.reason += "; " + u[i];
    if (u.size() > 3) r.reason += fmt::format("; and {} more pairs", u.size() - 3);
  }
  return finish();
}

}  // namespace eqfuse::rules::prove
