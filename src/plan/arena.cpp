#include "plan/arena.h"

#include <algorithm>
#include <numeric>

namespace lathe::plan {

ArenaLayout place_in_arena(const std::vector<ArenaRequest>& requests) {
  constexpr int64_t kAlign = 256;
  ArenaLayout out;
  out.offsets.assign(requests.size(), 0);
  std::vector<size_t> order(requests.size());
  std::iota(order.begin(), order.end(), 0);
  std::stable_sort(order.begin(), order.end(), [&](size_t a, size_t b) { return requests[a].bytes > requests[b].bytes; });
  std::vector<size_t> placed;
  for (size_t i : order) {
    const ArenaRequest& r = requests[i];
    const int64_t bytes = (std::max<int64_t>(r.bytes, 1) + kAlign - 1) / kAlign * kAlign;
    // Ranges taken by placed arrays that live at the same time, sorted by offset.
    std::vector<std::pair<int64_t, int64_t>> busy;
    for (size_t j : placed) {
      const ArenaRequest& q = requests[j];
      if (q.last < r.first || r.last < q.first) continue;
      const int64_t qb = (std::max<int64_t>(q.bytes, 1) + kAlign - 1) / kAlign * kAlign;
      busy.push_back({out.offsets[j], out.offsets[j] + qb});
    }
    std::sort(busy.begin(), busy.end());
    int64_t at = 0;
    for (const auto& [b, e] : busy) {
      if (at + bytes <= b) break;
      at = std::max(at, e);
    }
    out.offsets[i] = at;
    out.size = std::max(out.size, at + bytes);
    placed.push_back(i);
  }
  return out;
}

}  // namespace lathe::plan
