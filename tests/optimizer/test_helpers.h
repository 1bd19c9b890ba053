#pragma once
// Helpers shared by the optimizer tests: random inputs, comparing runs, and a tiny smallest-term
// choice (extraction proper is extract/'s; tests only need a deterministic acyclic pick).
#include <random>
#include <unordered_map>
#include <vector>

#include "egraph/symbol.h"
#include "ir/interpreter.h"
#include "optimizer/tensor_egraph.h"

namespace eqfuse::test {

inline std::vector<ir::Tensor> random_inputs(const ir::Graph& g, uint64_t seed = 7) {
  std::mt19937_64 rng(seed);
  std::uniform_real_distribution<double> dist(-2, 2);
  std::vector<ir::Tensor> out;
  for (ir::ValueId v : g.inputs()) {
    const ir::TensorType& t = g.value(v).type;
    std::vector<int64_t> dims;
    for (const ir::Dim& d : t.shape.dims()) dims.push_back(d.is_static() ? d.value() : 2);
    ir::Tensor x(t.dtype, dims);
    for (int64_t i = 0; i < x.numel(); ++i)
      x.set(i, ir::is_floating(t.dtype) ? dist(rng) : static_cast<double>(rng() % 5));
    out.push_back(std::move(x));
  }
  return out;
}

inline bool same_results(const std::vector<ir::Tensor>& a, const std::vector<ir::Tensor>& b,
                         double tol = 1e-5) {
  if (a.size() != b.size()) return false;
  for (size_t i = 0; i < a.size(); ++i) {
    if (a[i].dims() != b[i].dims() || a[i].dtype() != b[i].dtype()) return false;
    for (int64_t k = 0; k < a[i].numel(); ++k)
      if (std::abs(a[i].get(k) - b[i].get(k)) > tol * (1 + std::abs(a[i].get(k)))) return false;
  }
  return true;
}

// Per class, the node of least term size (children's sizes summed), iterated to a fixpoint.
inline optimizer::NodeChoice smallest_choice(const optimizer::TensorEGraph& teg) {
  const egraph::EGraph& eg = *teg.egraph;
  auto best =
      std::make_shared<std::unordered_map<egraph::EClassId, std::pair<double, egraph::NodeId>>>();
  for (bool changed = true; changed;) {
    changed = false;
    for (egraph::EClassId c : eg.classes()) {
      for (egraph::NodeId n : eg.class_nodes(c)) {
        double cost = 1;
        for (egraph::EClassId k : eg.children(n)) {
          auto it = best->find(eg.find(k));
          cost = it == best->end() ? 1e18 : cost + it->second.first;
        }
        auto it = best->find(c);
        if (cost < 1e17 && (it == best->end() || cost < it->second.first)) {
          (*best)[c] = {cost, n};
          changed = true;
        }
      }
    }
  }
  return [best, &eg](egraph::EClassId c) { return best->at(eg.find(c)).second; };
}

}  // namespace eqfuse::test
