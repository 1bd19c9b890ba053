#include "extract/scc.h"

#include <algorithm>
#include <utility>

namespace eqfuse::extract {

std::vector<uint32_t> strongly_connected_components(const std::vector<std::vector<uint32_t>>& edges,
                                                    uint32_t* num_components) {
  const uint32_t n = static_cast<uint32_t>(edges.size());
  constexpr uint32_t kUnseen = UINT32_MAX;
  std::vector<uint32_t> index(n, kUnseen), low(n, 0), comp(n, kUnseen);
  std::vector<char> on_stack(n, 0);
  std::vector<uint32_t> stack;
  std::vector<std::pair<uint32_t, uint32_t>> call;
  uint32_t next_index = 0, count = 0;
  for (uint32_t s = 0; s < n; ++s) {
    if (index[s] != kUnseen) continue;
    call.push_back({s, 0});
    index[s] = low[s] = next_index++;
    stack.push_back(s);
    on_stack[s] = 1;
    while (!call.empty()) {
      auto [v, i] = call.back();
      if (i < edges[v].size()) {
        ++call.back().second;
        uint32_t w = edges[v][i];
        if (index[w] == kUnseen) {
          index[w] = low[w] = next_index++;
          stack.push_back(w);
          on_stack[w] = 1;
          call.push_back({w, 0});
        } else if (on_stack[w]) {
          low[v] = std::min(low[v], index[w]);
        }
        continue;
      }
      call.pop_back();
      if (!call.empty()) low[call.back().first] = std::min(low[call.back().first], low[v]);
      if (low[v] == index[v]) {
        uint32_t w;
        do {
          w = stack.back();
          stack.pop_back();
          on_stack[w] = 0;
          comp[w] = count;
        } while (w != v);
        ++count;
      }
    }
  }
  *num_components = count;
  return comp;
}

}  // namespace eqfuse::extract
