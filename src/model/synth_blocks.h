// Random weights written straight into a block format, at memory speed: valid blocks whose values
// lie within [-bound, bound], without the cost of quantizing floats (a K-quant's search would take
// minutes for an 8B model). Formats without a direct writer return false; the caller quantizes.
#pragma once

#include "gguf/ggml_type.h"

#include <cstdint>

namespace lathe {

// A small, fast, splittable generator (splitmix64): one state per row keeps the fill deterministic
// whatever the number of threads.
struct SynthRng {
  uint64_t state;
  uint64_t next() {
    uint64_t z = (state += 0x9E3779B97F4A7C15ull);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
  }
  double uniform() { return static_cast<double>(next() >> 11) * 0x1.0p-53; }  // [0, 1)
};

// Fills n values (a whole number of blocks) of `type` at dst. Returns false if the type has no
// direct writer.
bool write_random_blocks(GgmlType type, SynthRng& rng, double bound, uint8_t* dst, int64_t n);

}  // namespace lathe
