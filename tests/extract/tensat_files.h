#pragma once
// The ten tensat e-graphs and the figures ../shared/egraphs/README.md gives for them.
#include <array>
#include <filesystem>
#include <string>

#include "tests/test_data.h"

namespace eqfuse::test {

struct TensatFile {
  const char* name;
  double greedy;            // bottom-up greedy DAG cost (README)
  double greedy_tolerance;  // relative; nasneta's greedy figure depends on tie-breaking
  double best_known;
};

inline constexpr std::array<TensatFile, 10> kTensatFiles{{
    {"bert", 0.824704, 1e-5, 0.824704},
    {"bert_acyclic", 0.827000, 1e-5, 0.827000},
    {"resnet50", 4.396867, 1e-5, 4.396867},
    {"resnet50_acyclic", 4.425745, 1e-5, 4.415993},
    {"vgg", 4.852382, 1e-5, 4.850757},
    {"vgg_acyclic", 4.866775, 1e-5, 4.866775},
    {"nasneta", 18.80, 0.01, 16.356074},
    {"nasneta_acyclic", 18.76, 0.01, 16.339247},
    {"nasrnn", 0.972425, 1e-5, 0.963339},
    {"nasrnn_acyclic", 1.089810, 1e-5, 1.089810},
}};

inline const TensatFile& tensat_file(const std::string& name) {
  for (const auto& f : kTensatFiles)
    if (name == f.name) return f;
  throw std::out_of_range(name);
}

inline std::filesystem::path tensat_path(const std::string& name) {
  return shared_dir() / "egraphs" / "tensat" / (name + ".json");
}

}  // namespace eqfuse::test
