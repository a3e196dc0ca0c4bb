// The arena: every step-local array placed in one device allocation by its lifetime. Arrays whose
// lifetimes do not overlap share bytes; placement is first fit in order of size (largest first),
// deterministic for a given list.
#pragma once

#include <cstdint>
#include <vector>

namespace lathe::plan {

struct ArenaRequest {
  int64_t bytes = 0;
  int first = 0;  // the first step (group) that writes it
  int last = 0;   // the last step that reads it (inclusive)
};

struct ArenaLayout {
  std::vector<int64_t> offsets;  // one per request, 256-byte aligned
  int64_t size = 0;              // bytes the arena needs
};

ArenaLayout place_in_arena(const std::vector<ArenaRequest>& requests);

}  // namespace lathe::plan
