// The re-lays of Q8_0 matrices the plan forms at load for ffn_split's launches (ffn_split_launch.h says
// what each layout is for), as plain functions with no Lathe dependency and no checks: lathe's
// launcher file wraps them with its shape checks (relay_down_by_slices, relay_q8_0_levels,
// relay_down_stack_by_slices), and `lathe emit` embeds this file's text in its standalone program,
// which forms the same bytes from the checkpoint at load. A Q8_0 block is 34 bytes: an f16 scale,
// then 32 levels.
#pragma once

#include <cstdint>
#include <cstring>
#include <vector>

namespace lathe_relay {

// down [e][f] (row-major: a row is f / 32 blocks) by 32-column slices: slice b is e consecutive
// blocks, block r being down's block (r, b). down holds e * (f / 32) blocks.
inline std::vector<uint8_t> down_by_slices(const uint8_t* down, int64_t e, int64_t f) {
  const int64_t nb = f / 32;
  std::vector<uint8_t> out(static_cast<size_t>(e * nb * 34));
  for (int64_t r = 0; r < e; ++r)
    for (int64_t b = 0; b < nb; ++b) std::memcpy(out.data() + (b * e + r) * 34, down + (r * nb + b) * 34, 34);
  return out;
}

// n_expert matrices [e][f], one after another, each by down_by_slices.
inline std::vector<uint8_t> down_stack_by_slices(const uint8_t* down, int64_t n_expert, int64_t e, int64_t f) {
  const size_t one = static_cast<size_t>(e * (f / 32) * 34);
  std::vector<uint8_t> out(one * static_cast<size_t>(n_expert));
  for (int64_t x = 0; x < n_expert; ++x) {
    const std::vector<uint8_t> r = down_by_slices(down + static_cast<size_t>(x) * one, e, f);
    std::memcpy(out.data() + static_cast<size_t>(x) * one, r.data(), one);
  }
  return out;
}

// Q8_0 blocks by groups of `group` consecutive blocks: a group's first 16 levels of each block
// [group][16], then their last 16 [group][16], then the scales [group] (f16): the same bytes a group.
// bytes is a whole number of groups.
inline std::vector<uint8_t> levels(const uint8_t* blocks, size_t bytes, int64_t group) {
  const size_t g = static_cast<size_t>(group) * 34;
  std::vector<uint8_t> out(bytes);
  for (size_t at = 0; at + g <= bytes; at += g)
    for (int64_t i = 0; i < group; ++i) {
      const uint8_t* b = blocks + at + static_cast<size_t>(i) * 34;
      uint8_t* o = out.data() + at;
      std::memcpy(o + 16 * i, b + 2, 16);
      std::memcpy(o + 16 * (group + i), b + 18, 16);
      std::memcpy(o + 32 * group + 2 * i, b, 2);
    }
  return out;
}

}  // namespace lathe_relay
