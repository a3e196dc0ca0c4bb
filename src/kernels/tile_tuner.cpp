#include "kernels/tile_tuner.h"

#include "runtime/cuda_driver.h"

#include <nlohmann/json.hpp>

#include <algorithm>
#include <cstdlib>
#include <fstream>
#include <limits>
#include <vector>

namespace lathe::kernels {

TileTuner::TileTuner(std::filesystem::path file) : file_(std::move(file)) {
  std::ifstream in(file_);
  if (!in) return;
  try {
    const nlohmann::json j = nlohmann::json::parse(in);
    for (const auto& [key, v] : j.at("choices").items())
      choices_[key] = {v.at("index").get<int>(), v.at("us").get<double>()};
  } catch (const std::exception&) {
    choices_.clear();  // a cache: a damaged file is measured again
  }
}

std::optional<int> TileTuner::known(const std::string& key, int n_candidates) const {
  auto it = choices_.find(key);
  if (it == choices_.end() || it->second.index < 0 || it->second.index >= n_candidates) return std::nullopt;
  return it->second.index;
}

int TileTuner::choose(const std::string& key, int n_candidates, const std::function<double(int)>& time_us) {
  if (n_candidates <= 0) internal_fail("tile tuner: no candidates for '{}'", key);
  if (auto k = known(key, n_candidates)) return *k;
  Choice best{0, std::numeric_limits<double>::infinity()};
  for (int i = 0; i < n_candidates; ++i) {
    const double us = time_us(i);
    if (us < best.us) best = {i, us};
  }
  choices_[key] = best;
  save();
  return best.index;
}

void TileTuner::save() const {
  nlohmann::json j;
  j["what"] = "the fastest tile of each kernel shape measured on this card (Lathe; delete to measure again)";
  for (const auto& [key, c] : choices_) j["choices"][key] = {{"index", c.index}, {"us", c.us}};
  std::error_code ec;
  std::filesystem::create_directories(file_.parent_path(), ec);
  // Written beside, then renamed: a reader never sees half a file.
  const std::filesystem::path tmp = file_.string() + ".partial";
  {
    std::ofstream out(tmp);
    if (!out) return;
    out << j.dump(1) << "\n";
  }
  std::filesystem::rename(tmp, file_, ec);
}

double time_launch_us(const std::function<void(CUstream)>& launch) {
  cuda::Stream s;
  cuda::EventTimer timer;
  launch(s.handle());
  s.synchronize();
  std::vector<float> ms;
  for (int rep = 0; rep < 3; ++rep) {
    timer.start(s);
    launch(s.handle());
    ms.push_back(timer.stop(s));
  }
  std::sort(ms.begin(), ms.end());
  return 1e3 * ms[1];
}

TileTuner& card_tuner() {
  static TileTuner tuner = [] {
    const cuda::DeviceInfo& d = cuda::Context::get().info();
    std::string name = d.name;
    for (char& c : name)
      if (!std::isalnum(static_cast<unsigned char>(c))) c = '_';
    return TileTuner(std::filesystem::path(cuda::cache_directory()) / ("tiles-" + name + "-" + d.arch() + ".json"));
  }();
  return tuner;
}

bool tuning_enabled() {
  const char* v = std::getenv("LATHE_TUNE");
  return !(v && std::string(v) == "0");
}

}  // namespace lathe::kernels
