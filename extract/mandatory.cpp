#include "extract/mandatory.h"

#include <algorithm>
#include <cstdint>

namespace eqfuse::extract {

std::vector<MandatoryPair> mandatory_pairs(const ExtractionProblem& p,
                                           const MandatoryOptions& options) {
  const size_t num_classes = p.num_classes();
  std::vector<std::vector<NodeIndex>> parents(num_classes);
  for (NodeIndex n = 0; n < p.num_nodes(); ++n)
    for (ClassIndex k : p.children(n))
      if (parents[k].empty() || parents[k].back() != n) parents[k].push_back(n);

  // needed_by[D]: the e-classes that die with D. Stamps avoid clearing per D.
  std::vector<std::vector<ClassIndex>> needed_by(num_classes);
  std::vector<uint32_t> node_stamp(p.num_nodes(), 0), class_stamp(num_classes, 0);
  std::vector<uint32_t> count_stamp(num_classes, 0), removed_nodes(num_classes, 0);
  std::vector<ClassIndex> stack;
  size_t num_pairs = 0;
  for (ClassIndex d = 0; d < num_classes && num_pairs <= options.max_pairs; ++d) {
    const uint32_t stamp = d + 1;
    class_stamp[d] = stamp;
    stack.assign(1, d);
    while (!stack.empty()) {
      ClassIndex k = stack.back();
      stack.pop_back();
      for (NodeIndex n : parents[k]) {
        if (node_stamp[n] == stamp) continue;
        node_stamp[n] = stamp;
        ClassIndex c = p.node_class(n);
        if (class_stamp[c] == stamp) continue;
        if (count_stamp[c] != stamp) {
          count_stamp[c] = stamp;
          removed_nodes[c] = 0;
        }
        if (++removed_nodes[c] == p.nodes(c).size()) {
          class_stamp[c] = stamp;
          stack.push_back(c);
          needed_by[d].push_back(c);
        }
      }
    }
    std::sort(needed_by[d].begin(), needed_by[d].end());
    num_pairs += needed_by[d].size();
  }

  std::vector<MandatoryPair> pairs;
  const size_t words = (num_classes + 63) / 64;
  if (num_classes * words * sizeof(uint64_t) > options.max_matrix_bytes) {
    std::vector<char> is_root(num_classes, 0);
    for (ClassIndex r : p.roots()) is_root[r] = 1;
    for (ClassIndex d = 0; d < num_classes; ++d)
      for (ClassIndex c : needed_by[d])
        if (is_root[c]) pairs.push_back({d, c});
    return pairs;
  }
  // Transitive reduction: c is implied for D when some c' that needs D is itself needed by c.
  std::vector<uint64_t> matrix(num_classes * words, 0);
  for (ClassIndex d = 0; d < num_classes; ++d)
    for (ClassIndex c : needed_by[d]) matrix[d * words + c / 64] |= uint64_t{1} << (c % 64);
  std::vector<uint64_t> implied(words);
  for (ClassIndex d = 0; d < num_classes; ++d) {
    if (needed_by[d].empty()) continue;
    std::fill(implied.begin(), implied.end(), 0);
    for (ClassIndex c : needed_by[d]) {
      const uint64_t* row = &matrix[c * words];
      for (size_t w = 0; w < words; ++w) implied[w] |= row[w];
    }
    for (ClassIndex c : needed_by[d])
      if (!(implied[c / 64] >> (c % 64) & 1)) pairs.push_back({d, c});
  }
  return pairs;
}

}  // namespace eqfuse::extract
