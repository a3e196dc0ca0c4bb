// Choosing a kernel's tile shape by measuring, once per card and shape: the candidates are timed on
// the card the first time a shape is planned, the fastest is remembered in a small JSON file in the
// kernel cache directory (one file per card), and later plans (later runs too) read it. A pure
// C++ piece: the measuring is a function the caller gives, so the choosing and the file are tested
// without a GPU.
//
//   TileTuner t(cache_directory() / "tiles-NVIDIA_H200-sm_90.json");
//   int best = t.choose("gemm q8_0 int8x2 rows 512 n 4096 k 4096 tiles 64x128,64x64", 2,
//                       [&](int i) { return microseconds_of(candidate[i]); });
#pragma once

#include <cuda.h>

#include <filesystem>
#include <functional>
#include <map>
#include <optional>
#include <string>

namespace lathe::kernels {

class TileTuner {
 public:
  // Reads the file when it exists; an unreadable or malformed file is ignored (choices are
  // measured again and the file rewritten), never an error: it is a cache.
  explicit TileTuner(std::filesystem::path file);

  // The remembered choice for `key`, if any, that is a valid index below n_candidates.
  std::optional<int> known(const std::string& key, int n_candidates) const;

  // The remembered choice, or: time_us(i) for every candidate i < n_candidates, the smallest time
  // wins (the first on a tie), remembered and written to the file (write errors are ignored).
  // The key should name the candidates, so that a changed candidate list is measured anew.
  int choose(const std::string& key, int n_candidates, const std::function<double(int)>& time_us);

  const std::filesystem::path& file() const { return file_; }

 private:
  void save() const;

  std::filesystem::path file_;
  struct Choice {
    int index = 0;
    double us = 0;
  };
  std::map<std::string, Choice> choices_;
};

// The time of one candidate, as every tuner measures it: `launch` once on a private stream to warm
// (the module's function, the caches), then the median of 3 launches timed by CUDA events, in us.
// Synchronizes: never inside a graph capture.
double time_launch_us(const std::function<void(CUstream)>& launch);

// The tuner of the card in use (file in cuda::cache_directory(), named by the card and its
// architecture); one per process.
TileTuner& card_tuner();

// Whether kernels tune their tiles: on unless LATHE_TUNE=0 (then, and for shapes never tuned, the
// kernels' rules). Measured on the H200 (lathe bench -p 512): qwen3-8b Q4_K_M 20,326 -> 21,061 tok/s
// with the wgmma tiles tuned, Q8_0 28,977 -> 29,087; the int8 GEMM's tiles moved its pp512 6,088 ->
// 6,211 (third session).
bool tuning_enabled();

}  // namespace lathe::kernels
