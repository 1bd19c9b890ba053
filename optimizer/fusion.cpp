#include "optimizer/fusion.h"

#include <fmt/format.h>

#include <algorithm>
#include <chrono>
#include <map>
#include <set>
#include <unordered_map>

#include "egraph/symbol.h"
#include "ir/attr_text.h"
#include "ir/kernel_body.h"
#include "ir/op_table.h"
#include "rules/parser.h"
#include "rules/prove/batch.h"
#include "support/error.h"

namespace eqfuse::optimizer {

using egraph::EClassId;
using egraph::NodeId;

namespace {

// Terms over e-classes, hash-consed: a leaf is an e-class, an application an op with its
// payload and children. A fusion unit (an op e-node, a kernel's body) is one term; merging a
// producer into a consumer is substituting the producer's term for its class's leaf, so the
// inputs of a kernel are its term's leaves (equal inputs are one leaf) and equal kernels are one
// term.
class TermTable {
 public:
  struct Term {
    egraph::Symbol op = 0;
    egraph::AttrId attrs = 0;
    EClassId leaf = egraph::kNoId;  // leaves only
    std::vector<uint32_t> kids;
    size_t tree_size = 1;  // applications written as a tree (leaves count 0)
  };

  uint32_t leaf(EClassId c) {
    std::vector<uint32_t> key{0, 0, c};
    return intern(key, [&] {
      Term t;
      t.leaf = c;
      t.tree_size = 0;
      return t;
    });
  }
  uint32_t app(egraph::Symbol op, egraph::AttrId attrs, std::vector<uint32_t> kids) {
    std::vector<uint32_t> key{1, op, attrs};
    key.insert(key.end(), kids.begin(), kids.end());
    return intern(key, [&] {
      Term t;
      t.op = op;
      t.attrs = attrs;
      for (uint32_t k : kids) t.tree_size += terms_[k].tree_size;
      t.kids = std::move(kids);
      return t;
    });
  }
  const Term& operator[](uint32_t id) const { return terms_[id]; }
  bool is_leaf(uint32_t id) const { return terms_[id].leaf != egraph::kNoId; }

  // `t` with the leaf of class `c` replaced by term `with`.
  uint32_t substitute(uint32_t t, EClassId c, uint32_t with) {
    std::unordered_map<uint32_t, uint32_t> memo;
    return substitute(t, leaf(c), with, memo);
  }

  // Leaves in order of first appearance (depth first, left to right) and distinct applications
  // in topological order.
  void walk(uint32_t t, std::vector<EClassId>& leaves, std::vector<uint32_t>& apps) const {
    std::set<uint32_t> seen;
    walk(t, leaves, apps, seen);
  }

 private:
  template <class Make>
  uint32_t intern(const std::vector<uint32_t>& key, Make make) {
    auto it = index_.find(key);
    if (it != index_.end()) return it->second;
    auto id = static_cast<uint32_t>(terms_.size());
    terms_.push_back(make());
    index_.emplace(key, id);
    return id;
  }
  uint32_t substitute(uint32_t t, uint32_t target, uint32_t with,
                      std::unordered_map<uint32_t, uint32_t>& memo) {
    if (t == target) return with;
    if (is_leaf(t)) return t;
    auto done = memo.find(t);
    if (done != memo.end()) return done->second;
    std::vector<uint32_t> kids = terms_[t].kids;
    bool changed = false;
    for (uint32_t& k : kids) {
      uint32_t n = substitute(k, target, with, memo);
      changed = changed || n != k;
      k = n;
    }
    uint32_t out = changed ? app(terms_[t].op, terms_[t].attrs, std::move(kids)) : t;
    memo.emplace(t, out);
    return out;
  }
  void walk(uint32_t t, std::vector<EClassId>& leaves, std::vector<uint32_t>& apps,
            std::set<uint32_t>& seen) const {
    if (!seen.insert(t).second) return;
    if (is_leaf(t)) {
      leaves.push_back(terms_[t].leaf);
      return;
    }
    for (uint32_t k : terms_[t].kids) walk(k, leaves, apps, seen);
    apps.push_back(t);
  }
  struct KeyHash {
    size_t operator()(const std::vector<uint32_t>& v) const {
      size_t h = v.size();
      for (uint32_t x : v) h = h * 0x9E3779B97F4A7C15ull + x;
      return h;
    }
  };
  std::vector<Term> terms_;
  std::unordered_map<std::vector<uint32_t>, uint32_t, KeyHash> index_;
};

class Fuser {
 public:
  Fuser(TensorEGraph& teg, const FusionOptions& options, const std::vector<NodeChoice>& focus)
      : teg_(teg),
        eg_(*teg.egraph),
        options_(options),
        kinds_(options.kinds ? *options.kinds : rules::library_fusion_kinds()) {
    kernel_op_ = egraph::intern(ir::kKernelOp);
    body_key_ = egraph::intern(ir::kKernelBodyAttr);
    for (size_t f = 0; f < focus.size(); ++f) {
      const NodeChoice& choice = focus[f];
      std::vector<EClassId> stack;
      for (EClassId out : teg.outputs) stack.push_back(eg_.find(out));
      std::set<EClassId> seen;
      while (!stack.empty()) {
        EClassId c = stack.back();
        stack.pop_back();
        if (!seen.insert(c).second) continue;
        NodeId n = egraph::kNoId;
        try {
          n = choice(c);
        } catch (const Error&) {
        }
        // A focus node that saturation found congruent to another is read as the one kept.
        n = eg_.live_node(n);
        if (n == egraph::kNoId || eg_.find(n) != c) continue;
        if (choices_.size() <= f) choices_.resize(f + 1);
        choices_[f].push_back(n);
        for (EClassId k : eg_.children(n)) stack.push_back(eg_.find(k));
      }
    }
  }

  FusionReport run() {
    auto start = std::chrono::steady_clock::now();
    report_.enodes_before = eg_.num_nodes();
    if (options_.use_proof_cache) cache_ = std::make_unique<rules::prove::ProofCache>();
    // First what fusing each focus graph alone would give (its e-nodes and its own kernels
    // only, as a pipeline that fixed that graph first would fuse it), so all of those kernels
    // are here too; then everything, algebraic alternatives included.
    report_.stop_reason = "round limit";
    for (phase_ = 0; phase_ <= choices_.size(); ++phase_) {
      lineage_.clear();
      bool saturated = false;
      for (size_t round = 0; round < options_.rounds && !saturated; ++round) {
        ++report_.rounds;
        saturated = !one_round();
      }
      if (phase_ == choices_.size() && saturated) report_.stop_reason = "saturated";
    }
    report_.enodes_after = eg_.num_nodes();
    report_.seconds =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    return std::move(report_);
  }

 private:
  struct Candidate {
    uint32_t term = 0;
    size_t ops = 0;
    bool preferred =
        false;         // grown from the class's first unit (largest kernel, else focus e-node)
    std::string text;  // the body, once kept
  };

  bool is_kernel(NodeId n) const { return eg_.op(n) == kernel_op_; }

  std::string body_of(NodeId n) const {
    for (const auto& [k, v] : egraph::attr_list(eg_.attrs(n)))
      if (k == body_key_) {
        auto s = ir::decode_attr(egraph::symbol_name(v), ir::AttrKind::String);
        if (s) return std::get<std::string>(*s);
      }
    return {};
  }

  // Whether the class is computed at run time: not a graph input (whose class may hold
  // algebraic detours such as Neg(Neg(x)), never worth computing), a weight, a constant or an
  // omitted input.
  bool runtime_class(EClassId c) const {
    const TensorData& d = teg_.data(c);
    if (!d.valid || d.tuple || d.constant || d.none) return false;
    for (NodeId n : eg_.class_nodes(c))
      if (eg_.children(n).empty()) return false;
    return true;
  }

  // A kernel body compiled once per body text: its applications in post-order, each child
  // either an input (?k) or an earlier step. Kernel e-nodes are read every round, and parsing
  // and interning their bodies each time was a tenth of fusion's time.
  struct BodyStep {
    egraph::Symbol op;
    egraph::AttrId attrs;
    std::vector<int64_t> kids;  // >= 0: an earlier step; < 0: input -(k+1)
  };
  using BodyTemplate = std::vector<BodyStep>;  // the last step is the body's root

  static std::optional<int64_t> compile_body(const Sexpr& t, BodyTemplate& out) {
    if (t.kind == Sexpr::Kind::Var) return -static_cast<int64_t>(std::stoul(t.text)) - 1;
    const ir::OpDef* def = ir::find_op(t.items[0].text);
    if (!def) return std::nullopt;
    egraph::AttrList attrs;
    BodyStep step;
    size_t i = 1;
    for (; i + 1 < t.items.size() && t.items[i].kind == Sexpr::Kind::Keyword; i += 2)
      attrs.emplace_back(egraph::intern(t.items[i].text), egraph::intern(t.items[i + 1].str()));
    for (; i < t.items.size(); ++i) {
      auto k = compile_body(t.items[i], out);
      if (!k) return std::nullopt;
      step.kids.push_back(*k);
    }
    step.op = egraph::intern(def->name);
    step.attrs = egraph::intern_attrs(std::move(attrs));
    out.push_back(std::move(step));
    return static_cast<int64_t>(out.size() - 1);
  }

  // The compiled body of `text` (cached by its text); nullptr when it is not an application of
  // known ops (a bare input is not a kernel).
  const BodyTemplate* body_template(const std::string& text) {
    auto it = templates_.find(text);
    if (it == templates_.end()) {
      std::optional<BodyTemplate> compiled;
      try {
        BodyTemplate steps;
        if (auto root = compile_body(ir::kernel_body(text)->term, steps); root && *root >= 0)
          compiled = std::move(steps);
      } catch (const Error&) {
      }
      it = templates_.emplace(text, std::move(compiled)).first;
    }
    return it->second ? &*it->second : nullptr;
  }

  // A body's text (over ?k) as a term over `inputs`.
  std::optional<uint32_t> term_of_body(const std::string& text,
                                       const std::vector<EClassId>& inputs) {
    const BodyTemplate* body = body_template(text);
    if (!body) return std::nullopt;
    std::vector<uint32_t> made;
    made.reserve(body->size());
    for (const BodyStep& step : *body) {
      std::vector<uint32_t> kids;
      kids.reserve(step.kids.size());
      for (int64_t k : step.kids) {
        if (k >= 0) {
          kids.push_back(made[static_cast<size_t>(k)]);
          continue;
        }
        auto input = static_cast<size_t>(-(k + 1));
        if (input >= inputs.size()) return std::nullopt;
        kids.push_back(terms_.leaf(inputs[input]));
      }
      made.push_back(terms_.app(step.op, step.attrs, std::move(kids)));
    }
    return made.back();
  }

  std::optional<uint32_t> unit_of(NodeId n) {
    std::vector<EClassId> children;
    for (EClassId c : eg_.children(n)) {
      const TensorData& d = teg_.data(eg_.find(c));
      if (!d.valid || d.tuple || d.none) return std::nullopt;
      children.push_back(eg_.find(c));
    }
    if (children.empty()) return std::nullopt;
    if (is_kernel(n)) {
      std::optional<uint32_t> t = term_of_body(body_of(n), children);
      if (t) {
        auto made = teg_.fused_from.find(n);
        if (made != teg_.fused_from.end()) sources_.try_emplace(*t, made->second);
      }
      return t;
    }
    const ir::OpDef* def = ir::find_op(egraph::symbol_name(eg_.op(n)));
    if (!def || !fusible_op(*def, kinds_)) return std::nullopt;
    for (const auto& [k, v] : egraph::attr_list(eg_.attrs(n))) {
      std::string_view key = egraph::symbol_name(k), value = egraph::symbol_name(v);
      if (key.starts_with('#') || value.find("#tensor") != std::string_view::npos ||
          !def->find_attr(key))
        return std::nullopt;
    }
    std::vector<uint32_t> kids;
    for (EClassId c : children) kids.push_back(terms_.leaf(c));
    uint32_t t = terms_.app(eg_.op(n), eg_.attrs(n), std::move(kids));
    sources_.try_emplace(t, std::vector<NodeId>{n});
    return t;
  }

  // The e-nodes a merge of `u` and `p` is made of (provenance, for --explain).
  void record_sources(uint32_t merged, uint32_t u, uint32_t p) {
    if (sources_.count(merged)) return;
    std::vector<NodeId> all;
    for (uint32_t part : {u, p})
      if (auto it = sources_.find(part); it != sources_.end())
        all.insert(all.end(), it->second.begin(), it->second.end());
    std::sort(all.begin(), all.end());
    all.erase(std::unique(all.begin(), all.end()), all.end());
    sources_.emplace(merged, std::move(all));
  }

  // The decoded attributes of an application (cached per payload and op).
  const ir::Attributes* attributes(uint32_t t) {
    const auto& term = terms_[t];
    auto key = (static_cast<uint64_t>(term.attrs) << 32) | term.op;
    auto it = attrs_.find(key);
    if (it != attrs_.end()) return it->second ? &*it->second : nullptr;
    const ir::OpDef* def = ir::find_op(egraph::symbol_name(term.op));
    std::optional<ir::Attributes> a;
    if (def) a = teg_.analysis->attributes(term.attrs, *def);
    return (attrs_[key] = std::move(a)) ? &*attrs_[key] : nullptr;
  }

  // The type of a term (cached): a leaf's class type, an application's by inference.
  const ir::TensorType* type_of(uint32_t t) {
    if (types_.size() <= t) types_.resize(t + 1);
    if (types_[t]) return types_[t]->valid ? &types_[t]->type : nullptr;
    TypeSlot slot;
    const auto& term = terms_[t];
    if (terms_.is_leaf(t)) {
      const ir::TensorType* ty = teg_.data(term.leaf).type();
      slot.valid = ty != nullptr;
      if (ty) slot.type = *ty;
    } else if (const ir::Attributes* attrs = attributes(t)) {
      const ir::OpDef* def = ir::find_op(egraph::symbol_name(term.op));
      std::vector<const ir::TensorType*> inputs;
      std::vector<const ir::Tensor*> values;
      bool typed = true;
      std::vector<uint32_t> kids = term.kids;  // type_of may grow terms_' caches, not terms_
      for (uint32_t k : kids) {
        const ir::TensorType* kt = type_of(k);
        typed = typed && kt;
        inputs.push_back(kt);
        values.push_back(terms_.is_leaf(k) ? teg_.data(terms_[k].leaf).value.get() : nullptr);
      }
      std::optional<ir::TermApplication> app;
      if (typed)
        app = ir::make_term_application(*def, *attrs, std::move(inputs), std::move(values));
      // A kernel body's op is single-valued (tuple ops are not fusible).
      std::optional<std::vector<ir::TensorType>> out;
      if (app) out = ir::infer_term_types(*app);
      slot.valid = out && out->size() == 1;
      if (slot.valid) slot.type = (*out)[0];
    }
    types_[t] = slot;
    return slot.valid ? &types_[t]->type : nullptr;
  }

  // The body's text over ?k (k in order of first appearance, as ir/kernel_body.h wants).
  std::string body_text(uint32_t t, const std::vector<EClassId>& leaves) {
    std::map<EClassId, size_t> number;
    for (EClassId c : leaves) number.emplace(c, number.size());
    std::unordered_map<uint32_t, std::string> memo;
    std::function<const std::string&(uint32_t)> print = [&](uint32_t id) -> const std::string& {
      auto done = memo.find(id);
      if (done != memo.end()) return done->second;
      const auto& term = terms_[id];
      std::string s;
      if (terms_.is_leaf(id)) {
        s = "?" + std::to_string(number.at(term.leaf));
      } else {
        s = "(" + std::string(egraph::symbol_name(term.op));
        for (const auto& [k, v] : egraph::attr_list(term.attrs))
          s += fmt::format(" :{} {}", egraph::symbol_name(k), egraph::symbol_name(v));
        std::vector<uint32_t> kids = term.kids;
        for (uint32_t k : kids) s += " " + print(k);
        s += ")";
      }
      return memo.emplace(id, std::move(s)).first->second;
    };
    return print(t);
  }

  // Whether term `t` is a kernel that may join class `c`: within the bounds, of a kind code
  // generation implements, and of the class's type.
  bool legal(uint32_t t, EClassId c, size_t& ops) {
    if (terms_[t].tree_size > options_.max_body_terms) return false;
    std::vector<EClassId> leaves;
    std::vector<uint32_t> apps;
    terms_.walk(t, leaves, apps);
    ops = apps.size();
    if (ops > options_.max_body_ops || leaves.size() > options_.max_inputs) return false;
    const ir::TensorType* ty = type_of(t);
    if (!ty || !(*ty == *teg_.data(c).type())) return false;
    std::unordered_map<uint32_t, int> index;
    for (size_t k = 0; k < leaves.size(); ++k)
      index[terms_.leaf(leaves[k])] = -1 - static_cast<int>(k);
    std::vector<BodyOp> body;
    for (uint32_t a : apps) {
      BodyOp op;
      op.def = ir::find_op(egraph::symbol_name(terms_[a].op));
      op.attrs = attributes(a);
      if (!op.def || !op.attrs) return false;
      std::vector<uint32_t> kids = terms_[a].kids;
      for (uint32_t k : kids) {
        op.inputs.push_back(index.at(k));
        op.input_types.push_back(type_of(k));
      }
      index[a] = static_cast<int>(body.size());
      body.push_back(std::move(op));
    }
    return classify_kernel(body, kinds_).has_value();
  }

  void refuse(const std::string& body, const std::string& why) {
    if (report_.refused.size() < 100) report_.refused.push_back({body, why});
  }

  FusionUnit as_unit(uint32_t t) {
    FusionUnit u;
    std::vector<uint32_t> apps;
    terms_.walk(t, u.inputs, apps);
    u.body = body_text(t, u.inputs);
    return u;
  }

  // The rule "consumer over producer -> kernel" in the rule language, for the prover.
  static std::string instance_rule(const FusionUnit& consumer, size_t slot,
                                   const FusionUnit& producer, const FusionUnit& kernel) {
    auto var = [](EClassId c) { return "?c" + std::to_string(c); };
    auto call = [&](const std::string& body, const std::vector<std::string>& args) {
      std::string s = "(Kernel :body " + ir::encode_attr(ir::AttrValue(body));
      for (const std::string& a : args) s += " " + a;
      return s + ")";
    };
    std::vector<std::string> pargs, cargs, kargs;
    for (EClassId c : producer.inputs) pargs.push_back(var(c));
    for (size_t i = 0; i < consumer.inputs.size(); ++i)
      cargs.push_back(i == slot ? call(producer.body, pargs) : var(consumer.inputs[i]));
    for (EClassId c : kernel.inputs) kargs.push_back(var(c));
    return "(rewrite fuse-check " + call(consumer.body, cargs) + " " + call(kernel.body, kargs) +
           ")";
  }

  // The merge of producer term `p` (of class `x`) into consumer term `u`: by substitution, or
  // by the planted applier, whose kernel must then be proved equal to the substitution's.
  std::optional<uint32_t> merged(uint32_t u, EClassId x, uint32_t p) {
    uint32_t reference = terms_.substitute(u, x, p);
    if (!options_.merge) return reference;
    FusionUnit consumer = as_unit(u), producer = as_unit(p);
    size_t slot = static_cast<size_t>(std::find(consumer.inputs.begin(), consumer.inputs.end(), x) -
                                      consumer.inputs.begin());
    FusionUnit kernel = options_.merge(consumer, slot, producer);
    try {
      ir::kernel_body(kernel.body);  // a malformed body is refused with the parser's reason
    } catch (const Error& e) {
      refuse(kernel.body, e.what());
      return std::nullopt;
    }
    std::optional<uint32_t> t = term_of_body(kernel.body, kernel.inputs);
    if (!t) return std::nullopt;
    if (*t == reference) return t;  // the same term: proved by reflexivity
    std::string text = instance_rule(consumer, slot, producer, kernel);
    auto verdict = z3_verdicts_.find(text);
    if (verdict == z3_verdicts_.end()) {
      std::string why;
      bool ok = false;
      try {
        rules::RuleSet set = rules::parse_rules(text, "<fusion>");
        std::vector<const rules::Rule*> list{&set.rules.at(0)};
        rules::prove::RuleProof proof = rules::prove::prove_rules(list, {}, 1, cache_.get()).at(0);
        ok = proof.verdict == rules::prove::Verdict::Proved;
        why = std::string(rules::prove::verdict_name(proof.verdict)) +
              (proof.reason.empty() ? "" : ": " + proof.reason) +
              (proof.counterexample ? "\n" + proof.counterexample->text : "");
      } catch (const Error& e) {
        why = std::string("not provable: ") + e.what();
      }
      verdict = z3_verdicts_.emplace(text, std::make_pair(ok, why)).first;
      if (ok) ++report_.proved_z3;
      if (!ok) refuse(kernel.body, why);
    }
    return verdict->second.first ? t : std::nullopt;
  }

  // The largest kernel at class c that recomputes nothing: grown from unit u by merging, of
  // the focus graph's producers, only those whose every consumer is already inside the kernel
  // (a post-dominator region, as TVM's fusion forms them), each as the focus graph computes it.
  // The greedy growth above crosses such boundaries and recomputes the shared producer in each
  // consumer; this one stops there, so the two together give extraction both shapes.
  std::optional<Candidate> closed_growth(EClassId c, uint32_t u) {
    if (phase_ >= choices_.size()) return std::nullopt;  // consumers need one focus graph
    std::set<EClassId> inside = {c}, refused;
    uint32_t grown = u;
    size_t grown_ops = 0;
    for (bool merged_one = true; merged_one;) {
      merged_one = false;
      std::vector<EClassId> leaves;
      std::vector<uint32_t> apps;
      terms_.walk(grown, leaves, apps);
      for (EClassId x : leaves) {
        if (refused.count(x)) continue;
        auto unit = chosen_units_.find(x);
        auto users = consumers_.find(x);
        if (unit == chosen_units_.end() || users == consumers_.end()) continue;
        if (!std::includes(inside.begin(), inside.end(), users->second.begin(),
                           users->second.end()))
          continue;  // read outside the kernel too: it stays a kernel input
        if (auto k = try_merge(c, grown, x, unit->second)) {
          grown = k->term;
          grown_ops = k->ops;
          inside.insert(x);
          merged_one = true;
          break;
        }
        refused.insert(x);
      }
    }
    if (grown == u) return std::nullopt;
    return Candidate{grown, grown_ops, true, {}};
  }

  // One merge, if legal and proved.
  std::optional<Candidate> try_merge(EClassId c, uint32_t u, EClassId x, uint32_t p) {
    ++report_.candidates;
    auto key = (static_cast<uint64_t>(u) << 32) | p;
    auto seen = tried_.find({c, key});
    if (seen != tried_.end()) return seen->second;
    std::optional<Candidate> out;
    if (auto t = merged(u, x, p)) {
      record_sources(*t, u, p);
      Candidate k;
      k.term = *t;
      if (!options_.merge) ++report_.proved_reflexive;
      if (legal(k.term, c, k.ops)) out = k;
    }
    tried_.emplace(std::make_pair(c, key), out);
    return out;
  }

  // Units of each class as the round starts, largest kernels first: merges made in this round
  // wait for the next.
  std::unordered_map<EClassId, std::vector<uint32_t>> round_units(
      const std::vector<EClassId>& classes) {
    std::unordered_map<EClassId, std::vector<uint32_t>> units;
    // The focus graphs' e-nodes by their classes as they are now (merges rename classes).
    std::unordered_map<EClassId, std::vector<NodeId>> preferred;
    std::unordered_map<EClassId, NodeId> chosen;
    for (size_t f = 0; f < choices_.size(); ++f)
      for (NodeId focus_node : choices_[f]) {
        NodeId n = eg_.live_node(focus_node);  // kernels' merges may make it congruent too
        if (n == egraph::kNoId) continue;
        auto& list = preferred[eg_.find(n)];
        if (std::find(list.begin(), list.end(), n) == list.end()) list.push_back(n);
        if (f == phase_) chosen.emplace(eg_.find(n), n);
      }
    // The consumers of each class in this phase's focus graph, for growth without recomputation.
    consumers_.clear();
    chosen_units_.clear();
    for (EClassId c : classes) {  // in class order: terms are made in a fixed order
      auto it = chosen.find(c);
      if (it == chosen.end()) continue;
      for (EClassId k : eg_.children(it->second)) consumers_[eg_.find(k)].insert(c);
      if (auto u = unit_of(it->second)) chosen_units_.emplace(c, *u);
    }
    for (EClassId c : classes) {
      if (!runtime_class(c)) continue;
      std::vector<std::pair<std::pair<size_t, size_t>, uint32_t>> kernels;
      std::vector<uint32_t> list;
      std::vector<NodeId> nodes;
      auto pref = preferred.find(c);
      if (!choices_.empty() && pref == preferred.end()) continue;  // outside every focus graph
      if (phase_ < choices_.size()) {
        // One focus graph alone: its e-node and the kernels this phase made.
        auto mine = chosen.find(c);
        if (mine == chosen.end()) continue;
        nodes.push_back(mine->second);
        for (NodeId n : eg_.class_nodes(c))
          if (is_kernel(n) && lineage_.count(eg_.attrs(n))) nodes.push_back(n);
      } else {
        if (pref != preferred.end()) nodes = pref->second;
        for (NodeId n : eg_.class_nodes(c))
          if (std::find(nodes.begin(), nodes.end(), n) == nodes.end()) nodes.push_back(n);
      }
      for (NodeId n : nodes) {
        if (!is_kernel(n) && list.size() >= kOpUnitsPerClass) continue;
        auto u = unit_of(n);
        if (!u) continue;
        if (is_kernel(n)) {
          std::vector<EClassId> leaves;
          std::vector<uint32_t> apps;
          terms_.walk(*u, leaves, apps);
          // Most work fused first, then the least written twice.
          kernels.push_back({{apps.size(), terms_[*u].tree_size}, *u});
        } else if (std::find(list.begin(), list.end(), *u) == list.end()) {
          list.push_back(*u);
        }
      }
      std::stable_sort(kernels.begin(), kernels.end(), [](const auto& a, const auto& b) {
        return a.first.first != b.first.first ? a.first.first > b.first.first
                                              : a.first.second < b.first.second;
      });
      for (size_t i = 0; i < kernels.size() && i < kKernelUnitsPerClass; ++i)
        list.insert(list.begin() + static_cast<std::ptrdiff_t>(i), kernels[i].second);
      if (!list.empty()) units.emplace(c, std::move(list));
    }
    return units;
  }

  bool one_round() {
    std::vector<EClassId> classes(eg_.classes().begin(), eg_.classes().end());
    auto units = round_units(classes);
    std::vector<std::pair<EClassId, Candidate>> added;
    for (EClassId c : classes) {
      auto mine = units.find(c);
      if (mine == units.end()) continue;
      std::vector<Candidate> found;
      std::set<uint32_t> terms;
      auto keep = [&](std::optional<Candidate> k) {
        if (!k || !terms.insert(k->term).second) return;
        std::vector<EClassId> leaves;
        std::vector<uint32_t> apps;
        terms_.walk(k->term, leaves, apps);
        k->text = body_text(k->term, leaves);
        found.push_back(std::move(*k));
      };
      for (size_t ui = 0; ui < mine->second.size(); ++ui) {
        uint32_t u = mine->second[ui];
        std::vector<EClassId> inputs;
        std::vector<uint32_t> apps;
        terms_.walk(u, inputs, apps);
        // One producer at a time: the kernels that stop at a shared producer.
        for (EClassId x : inputs) {
          auto theirs = units.find(x);
          if (theirs == units.end()) continue;
          for (size_t i = 0; i < theirs->second.size() && i < kProducersPerSlot; ++i)
            keep(try_merge(c, u, x, theirs->second[i]));
        }
        if (ui >= kGrownUnitsPerClass) continue;
        // Every producer that fits, the largest of each: the largest kernel at this class.
        uint32_t grown = u;
        size_t grown_ops = 0;
        std::set<EClassId> skipped;
        for (bool merged_one = true; merged_one;) {
          merged_one = false;
          std::vector<EClassId> now;
          apps.clear();
          terms_.walk(grown, now, apps);
          for (EClassId x : now) {
            if (skipped.count(x)) continue;
            auto theirs = units.find(x);
            if (theirs != units.end())
              for (size_t i = 0; i < theirs->second.size() && i < kProducersPerSlot; ++i)
                if (auto k = try_merge(c, grown, x, theirs->second[i])) {
                  grown = k->term;
                  grown_ops = k->ops;
                  merged_one = true;
                  break;
                }
            if (merged_one) break;
            skipped.insert(x);
          }
        }
        if (grown != u) keep(Candidate{grown, grown_ops, ui == 0, {}});
        if (ui == 0) keep(closed_growth(c, u));
      }
      std::stable_sort(found.begin(), found.end(), [&](const Candidate& a, const Candidate& b) {
        if (a.preferred != b.preferred) return a.preferred;
        if (a.ops != b.ops) return a.ops > b.ops;
        return a.text != b.text ? a.text < b.text : a.term < b.term;
      });
      if (found.size() > options_.kernels_per_class) found.resize(options_.kernels_per_class);
      for (const Candidate& k : found) added.emplace_back(c, k);
    }
    size_t before = eg_.num_nodes();
    add_kernels(added);
    eg_.rebuild();
    report_.kernels_added += eg_.num_nodes() - before;
    return eg_.num_nodes() > before;
  }

  // Adds each kept kernel to its class, recording the e-nodes it fuses.
  void add_kernels(const std::vector<std::pair<EClassId, Candidate>>& added) {
    egraph::OriginScope origin(eg_, egraph::intern(kFusionOrigin));
    for (const auto& [c, k] : added) {
      std::vector<EClassId> leaves;
      std::vector<uint32_t> apps;
      terms_.walk(k.term, leaves, apps);
      const std::string& body = k.text;
      // What joins the e-graph is the text and its inputs: read back, they must be the term that
      // was proved, or the printing would be a second, unchecked statement of the kernel.
      std::optional<uint32_t> back = term_of_body(body, leaves);
      if (!back || *back != k.term) {
        refuse(body, "internal: the body read back is not the proved term");
        continue;
      }
      egraph::AttrId attrs =
          egraph::intern_attrs({{body_key_, egraph::intern(ir::encode_attr(ir::AttrValue(body)))}});
      for (EClassId& l : leaves) l = eg_.find(l);
      if (phase_ < choices_.size()) lineage_.insert(attrs);
      size_t slots = eg_.num_node_slots();
      EClassId id = eg_.add(kernel_op_, attrs, leaves);
      if (eg_.num_node_slots() > slots) {
        auto made = sources_.find(k.term);
        if (made != sources_.end())
          teg_.fused_from.emplace(static_cast<NodeId>(slots), made->second);
      }
      eg_.merge(id, c);
    }
  }

  static constexpr size_t kOpUnitsPerClass = 4;      // algebraic alternatives fused per class
  static constexpr size_t kKernelUnitsPerClass = 2;  // kernels grown further per class
  static constexpr size_t kProducersPerSlot = 2;     // producer units tried per input
  static constexpr size_t kGrownUnitsPerClass = 2;   // units grown to the largest kernel
  struct TypeSlot {
    bool valid = false;
    ir::TensorType type;
  };
  TensorEGraph& teg_;
  egraph::EGraph& eg_;
  const FusionOptions& options_;
  const rules::FusionKinds& kinds_;
  egraph::Symbol kernel_op_, body_key_;
  FusionReport report_;
  TermTable terms_;
  std::unordered_map<std::string, std::optional<BodyTemplate>> templates_;  // by body text
  std::vector<std::optional<TypeSlot>> types_;
  std::unordered_map<uint64_t, std::optional<ir::Attributes>> attrs_;
  std::map<std::pair<EClassId, uint64_t>, std::optional<Candidate>> tried_;
  std::map<std::string, std::pair<bool, std::string>> z3_verdicts_;
  std::vector<std::vector<NodeId>> choices_;  // each focus graph's e-nodes
  size_t phase_ = 0;                          // < choices_.size(): that focus graph alone
  std::set<egraph::AttrId> lineage_;          // bodies of the kernels this phase made
  // This round's focus graph (phase_ < choices_.size()): each class's consumers and the unit of
  // its e-node there.
  std::unordered_map<EClassId, std::set<EClassId>> consumers_;
  std::unordered_map<EClassId, uint32_t> chosen_units_;
  std::unique_ptr<rules::prove::ProofCache> cache_;
  std::unordered_map<uint32_t, std::vector<NodeId>> sources_;  // term -> e-nodes it fuses
};

}  // namespace

FusionReport fuse(TensorEGraph& teg, const FusionOptions& options,
                  const std::vector<NodeChoice>& focus) {
  if (!teg.egraph->clean()) teg.egraph->rebuild();
  return Fuser(teg, options, focus).run();
}

}  // namespace eqfuse::optimizer
