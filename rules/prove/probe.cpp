#include "rules/prove/probe.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <random>

#include "ir/interpreter.h"
#include "support/error.h"

namespace eqfuse::rules::prove {

namespace {

constexpr int64_t kMaxKernelRuns = 200000;

class KernelRunner {
 public:
  KernelRunner(const ir::Graph& graph, const ir::Node& node, const std::vector<ProbeInput>& inputs)
      : graph_(graph), node_(node), inputs_(inputs) {
    for (uint32_t s = 0; s < inputs.size(); ++s)
      if (inputs[s].present && !inputs[s].fixed) symbolic_.push_back(s);
    // Probe in float64 where the kernel accepts it (exact coefficients like 1/3), else in the
    // input's own type.
    for (ir::DType dtype : {ir::DType::f64, ir::DType::f32}) {
      dtype_ = dtype;
      try {
        base_ = run(zeros());
        ok_ = true;
        return;
      } catch (const Error&) {
      }
    }
  }

  bool ok() const { return ok_; }
  bool exact() const { return dtype_ == ir::DType::f64; }
  const std::vector<uint32_t>& symbolic() const { return symbolic_; }
  const std::vector<std::vector<double>>& base() const { return base_; }
  int64_t size(uint32_t slot) const { return ir::product(inputs_[slot].dims); }

  std::vector<ir::Tensor> zeros() const {
    std::vector<ir::Tensor> v(inputs_.size());
    for (uint32_t s : symbolic_) v[s] = ir::Tensor(dtype_, inputs_[s].dims);
    return v;
  }

  std::vector<std::vector<double>> run(const std::vector<ir::Tensor>& values) {
    if (++runs_ > kMaxKernelRuns) fail("probe: too many kernel runs");
    std::vector<const ir::Tensor*> args;
    for (uint32_t s = 0; s < inputs_.size(); ++s) {
      const ProbeInput& in = inputs_[s];
      args.push_back(!in.present ? nullptr : in.fixed ? in.fixed : &values[s]);
    }
    std::vector<ir::Tensor> outs = ir::evaluate_node(graph_, node_, args);
    std::vector<std::vector<double>> result;
    for (const ir::Tensor& t : outs) result.push_back(t.to_doubles());
    return result;
  }

  std::vector<ir::Tensor> random(std::mt19937_64& rng) const {
    std::vector<ir::Tensor> v = zeros();
    std::uniform_real_distribution<double> u(-1, 1);
    for (uint32_t s : symbolic_)
      for (int64_t i = 0; i < v[s].numel(); ++i) v[s].set(i, u(rng));
    return v;
  }

 private:
  const ir::Graph& graph_;
  const ir::Node& node_;
  const std::vector<ProbeInput>& inputs_;
  std::vector<uint32_t> symbolic_;
  ir::DType dtype_ = ir::DType::f64;
  std::vector<std::vector<double>> base_;
  bool ok_ = false;
  int64_t runs_ = 0;
};

// Some kernels compute in float32 whatever their operands (Conv): a looser check still tells a
// multi-affine op from a nonlinear one, whose errors are of the order of the values.
double tolerance(const KernelRunner& r) {
  return r.exact() ? 1e-5 : 1e-4;
}

bool fits(const Polynomials& p, KernelRunner& runner, std::mt19937_64& rng) {
  for (int trial = 0; trial < 2; ++trial) {
    std::vector<ir::Tensor> x = runner.random(rng);
    std::vector<std::vector<double>> got = runner.run(x);
    if (got.size() < p.size()) return false;
    for (size_t k = 0; k < p.size(); ++k) {
      if (got[k].size() != p[k].size()) return false;
      for (size_t e = 0; e < p[k].size(); ++e) {
        double sum = 0, scale = 1;
        for (const Monomial& m : p[k][e]) {
          double term = m.coefficient;
          for (const Factor& f : m.factors) term *= x[f.input].get(f.element);
          sum += term;
          scale += std::abs(term);
        }
        if (!(std::abs(sum - got[k][e]) <= tolerance(runner) * scale)) {
          if (std::getenv("EQFUSE_PROVE_DEBUG"))
            std::fprintf(stderr,
                         "probe: output %zu element %zu: polynomial %.17g, kernel %.17g tol %g\n",
                         k, e, sum, got[k][e], tolerance(runner) * scale);
          return false;
        }
      }
    }
  }
  return true;
}

void add_terms(Polynomials& p, const std::vector<std::vector<double>>& delta,
               const std::vector<Factor>& factors, double threshold) {
  for (size_t k = 0; k < p.size(); ++k)
    for (size_t e = 0; e < p[k].size(); ++e)
      if (std::abs(delta[k][e]) > threshold) p[k][e].push_back({delta[k][e], factors});
}

std::vector<std::vector<double>> minus(std::vector<std::vector<double>> a,
                                       const std::vector<std::vector<double>>& b) {
  for (size_t k = 0; k < a.size(); ++k)
    for (size_t e = 0; e < a[k].size(); ++e) a[k][e] -= b[k][e];
  return a;
}

}  // namespace

std::optional<Polynomials> probe_multiaffine(const ir::Graph& graph, const ir::Node& node,
                                             const std::vector<ProbeInput>& inputs) {
  KernelRunner runner(graph, node, inputs);
  if (!runner.ok()) return std::nullopt;
  std::mt19937_64 rng(12345);
  double threshold = runner.exact() ? 1e-12 : 1e-6;
  const auto& base = runner.base();
  Polynomials p(base.size());
  for (size_t k = 0; k < base.size(); ++k) p[k].resize(base[k].size());
  add_terms(p, base, {}, 0);
  try {
    // Linear terms: lin[s][i] = f(e_i at slot s) - f(0).
    std::vector<std::vector<std::vector<std::vector<double>>>> lin(inputs.size());
    for (uint32_t s : runner.symbolic()) {
      std::vector<ir::Tensor> x = runner.zeros();
      for (int64_t i = 0; i < runner.size(s); ++i) {
        x[s].set(i, 1);
        lin[s].push_back(minus(runner.run(x), base));
        x[s].set(i, 0);
        add_terms(p, lin[s].back(), {{s, i}}, threshold);
      }
    }
    if (fits(p, runner, rng)) return p;
    // Bilinear terms between two inputs, by inclusion-exclusion.
    const auto& sym = runner.symbolic();
    int64_t runs = 0;
    for (size_t a = 0; a < sym.size(); ++a)
      for (size_t b = a + 1; b < sym.size(); ++b) runs += runner.size(sym[a]) * runner.size(sym[b]);
    if (runs > kMaxKernelRuns) return std::nullopt;
    for (size_t a = 0; a < sym.size(); ++a) {
      for (size_t b = a + 1; b < sym.size(); ++b) {
        uint32_t s = sym[a], t = sym[b];
        std::vector<ir::Tensor> x = runner.zeros();
        for (int64_t i = 0; i < runner.size(s); ++i) {
          x[s].set(i, 1);
          for (int64_t j = 0; j < runner.size(t); ++j) {
            x[t].set(j, 1);
            auto d = minus(minus(minus(runner.run(x), lin[s][static_cast<size_t>(i)]),
                                 lin[t][static_cast<size_t>(j)]),
                           base);
            add_terms(p, d, {{s, i}, {t, j}}, threshold);
            x[t].set(j, 0);
          }
          x[s].set(i, 0);
        }
      }
    }
    if (std::getenv("EQFUSE_PROVE_DEBUG")) {
      size_t terms = 0;
      for (const auto& out : p)
        for (const auto& e : out) terms += e.size();
      std::fprintf(stderr, "probe %s: %zu symbolic inputs, %zu terms, exact %d\n",
                   node.op_type.c_str(), sym.size(), terms, int(runner.exact()));
    }
    if (fits(p, runner, rng)) return p;
  } catch (const Error& e) {
    if (std::getenv("EQFUSE_PROVE_DEBUG")) std::fprintf(stderr, "probe: %s\n", e.what());
  }
  return std::nullopt;
}

std::optional<Windows> probe_window(const ir::Graph& graph, const ir::Node& node,
                                    const std::vector<ProbeInput>& inputs) {
  KernelRunner runner(graph, node, inputs);
  if (!runner.ok() || runner.symbolic().size() != 1 || runner.symbolic()[0] != 0)
    return std::nullopt;
  std::mt19937_64 rng(777);
  try {
    for (bool is_min : {false, true}) {
      double mark = is_min ? -1 : 1;
      Windows w;
      w.is_min = is_min;
      const auto& base = runner.base();
      for (const auto& out : base) w.outputs.emplace_back(out.size());
      std::vector<ir::Tensor> x = runner.zeros();
      for (int64_t i = 0; i < runner.size(0); ++i) {
        x[0].set(i, mark);
        auto got = runner.run(x);
        for (size_t k = 0; k < got.size(); ++k)
          for (size_t e = 0; e < got[k].size(); ++e)
            if (got[k][e] == mark) w.outputs[k][e].push_back(i);
        x[0].set(i, 0);
      }
      bool good = true;
      for (int trial = 0; trial < 2 && good; ++trial) {
        std::vector<ir::Tensor> r = runner.random(rng);
        auto got = runner.run(r);
        for (size_t k = 0; k < got.size() && good; ++k) {
          for (size_t e = 0; e < got[k].size() && good; ++e) {
            const auto& win = w.outputs[k][e];
            if (win.empty()) {
              good = false;
              break;
            }
            double best = r[0].get(win[0]);
            for (int64_t i : win)
              best = is_min ? std::min(best, r[0].get(i)) : std::max(best, r[0].get(i));
            if (std::abs(best - got[k][e]) > tolerance(runner) * (1 + std::abs(best))) good = false;
          }
        }
      }
      if (good) return w;
    }
  } catch (const Error&) {
  }
  return std::nullopt;
}

}  // namespace eqfuse::rules::prove
