#include "rules/prove/prover.h"

#include <fmt/format.h>

#include <algorithm>
#include <chrono>
#include <map>
#include <set>

#include "rules/checker.h"
#include "rules/prove/bindings.h"
#include "rules/prove/encode.h"
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
  }
  return "unknown";
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
                      {"exhausted", c.exhausted}};
  for (const auto& [name, r] : c.ranks) j["ranks"][name] = r;
  for (const auto& [name, v] : c.attrs) j["attrs"][name] = v;
  return j;
}

GraphProof prove_graph(const ir::Graph& graph, size_t num_lhs, z3::context& ctx,
                       const ProveOptions& options, const std::vector<std::string>& nonzero,
                       std::set<std::string>* proved) {
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
      z3::expr diff = (lhs[e] - rhs[e]).simplify(som);
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
      z3::check_result result = solver.check();
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

RuleProof prove_rule(const Rule& rule, const ProveOptions& options) {
  auto start = std::chrono::steady_clock::now();
  RuleProof r;
  r.name = rule.name;
  auto finish = [&]() -> RuleProof {
    r.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    return r;
  };
  std::vector<RuleBinding> bindings;
  try {
    check_rule(rule);
    Enumeration en = enumerate_bindings(rule, options.shapes);
    bindings = std::move(en.bindings);
    r.coverage = coverage_json(en.coverage);
    r.coverage_text = en.coverage.str();
  } catch (const Error& e) {
    r.verdict = Verdict::Invalid;
    r.reason = e.what();
    return finish();
  }
  if (bindings.empty()) {
    r.verdict = Verdict::Unknown;
    r.reason = "no binding within the bounds satisfies the rule's conditions";
    return finish();
  }
  z3::context ctx;
  std::set<std::string> proved;  // structures of element queries already proved (one context)
  int unknowns = 0;
  r.verdict = Verdict::Proved;
  size_t num_lhs = rule.lhs.size();
  for (const RuleBinding& b : bindings) {
    std::vector<std::string> nonzero;
    std::string where = binding_string(b);
    GraphProof gp;
    try {
      ir::Graph g = instantiate_rule(rule, symbolic_binding(rule, b, nonzero));
      gp = prove_graph(g, num_lhs, ctx, options, nonzero, &proved);
    } catch (const z3::exception& e) {
      gp.verdict = Verdict::Unknown;
      gp.reason = std::string("Z3: ") + e.msg();
    } catch (const Error& e) {
      gp.verdict = Verdict::Invalid;
      gp.reason = e.what();
    }
    r.bounds.push_back(where);
    if (gp.verdict == Verdict::Proved) continue;
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
    }
    // Later bindings may still refute the rule, but each unknown may have cost a timeout.
    if (++unknowns == 3) break;
  }
  // The numeric witness, at the proof's bindings and a few larger random ones.
  ShapeChoice wider = options.shapes;
  wider.dims = {1, 2, 3, 4};
  wider.wanted = static_cast<size_t>(options.witness_bindings);
  wider.max_tries = 3000;
  wider.seed = options.shapes.seed + 7919;
  std::vector<RuleBinding> witness = bindings;
  for (RuleBinding& b : sampled_bindings(rule, wider)) witness.push_back(std::move(b));
  uint64_t seed = 1;
  size_t index = 0;
  for (const RuleBinding& b : witness) {
    ++index;
    std::vector<std::string> nonzero;
    std::optional<NumericFailure> failure;
    ir::Graph g;
    try {
      g = instantiate_rule(rule, symbolic_binding(rule, b, nonzero));
      failure = numeric_check(g, num_lhs, nonzero, options.witness_trials, seed++);
    } catch (const Error&) {
      continue;  // a binding the interpreter cannot run (an unsupported kernel) checks nothing
    }
    if (!failure) continue;
    std::string where = binding_string(b);
    if (failure->mismatch.element < 0) {
      r.verdict = Verdict::Invalid;
      r.reason = "the two sides have different shapes at " + where;
      return finish();
    }
    r.counterexample =
        make_counterexample(g, failure->inputs, failure->mismatch, where, "numeric witness");
    if (r.verdict == Verdict::Proved && index <= bindings.size()) {
      r.verdict = Verdict::Unknown;
      r.reason = "the numeric witness disagrees with the proof at " + where + " (an encoding bug?)";
    } else {
      r.verdict = Verdict::Refuted;
      r.reason = r.verdict == Verdict::Proved
                     ? "refuted by the numeric witness, beyond the proof's bounds"
                     : "refuted by the numeric witness";
    }
    return finish();
  }
  return finish();
}

}  // namespace eqfuse::rules::prove
