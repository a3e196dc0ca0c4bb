#include "runtime/persistent_step.h"

#include "base/error.h"
#include "kernels/library.h"

#include <fmt/format.h>

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <map>

namespace lathe {

namespace {

// kernels/step_persistent.cuh's lathe_phase, byte for byte.
struct Phase {
  int32_t kind = 0;
  int32_t grid_x = 1, grid_y = 1, grid_z = 1;
  int32_t threads = 0;
  int32_t early = 0;
  uint64_t prefetch[3] = {0, 0, 0};
  uint64_t prefetch_bytes[3] = {0, 0, 0};
  alignas(16) unsigned char params[256] = {};
};
static_assert(sizeof(Phase) == 336, "step_persistent.cuh's lathe_phase is 336 bytes");

// The kinds, as step_persistent.cuh numbers them, with the parameter list each mirrors: its count
// and where its last byte ends (the .cuh's param structs are static_assert-ed to the same sizes).
struct KindInfo {
  const char* kernel;  // without the contract suffix
  int kind;
  size_t n_params, end;
};
constexpr KindInfo kKinds[] = {
    {"lathe_gemv1_q8_0", 1, 9, 56},       {"lathe_gemv1_q4_k", 2, 9, 56},       {"lathe_gemv1_q6_k", 3, 9, 56},
    {"lathe_gemvm_q8_0", 4, 26, 180},     {"lathe_gemvm_q4_k", 5, 26, 180},     {"lathe_gemvm_q6_k", 6, 26, 180},
    {"lathe_gemvm_q4_k_q6_k", 7, 26, 180}, {"lathe_rope_append", 8, 19, 124},    {"lathe_attn_decode_64", 9, 21, 128},
    {"lathe_attn_decode_128", 10, 21, 128}, {"lathe_attn_decode_256", 11, 21, 128},
    // The attention's blocks of 8 warps: the same kinds (the phase runs the body its block size names).
    {"lathe_attn_decode_64_w8", 9, 21, 128}, {"lathe_attn_decode_128_w8", 10, 21, 128},
};
constexpr int kRopeKind = 8, kFirstAttentionKind = 9;
bool is_product(int kind) { return kind >= 1 && kind <= 7; }

const KindInfo* kind_info(int kind) {
  for (const KindInfo& k : kKinds)
    if (k.kind == kind) return &k;
  return nullptr;
}

template <class T>
T param_at(const cuda::CollectedOp& op, size_t index) {
  T v;
  std::memcpy(&v, op.params.data() + op.offsets.at(index), sizeof(T));
  return v;
}

// The weight spans a product phase reads: (address, bytes) for each matrix.
std::vector<std::pair<uint64_t, uint64_t>> product_weights(const cuda::CollectedOp& op, int kind) {
  std::vector<std::pair<uint64_t, uint64_t>> spans;
  if (kind <= 3) {  // gemv1: w, row_bytes, ..., n_out (5)
    spans.push_back({param_at<uint64_t>(op, 0), param_at<uint64_t>(op, 1) * static_cast<uint64_t>(param_at<int>(op, 5))});
  } else {  // gemvm: w0..w2 (0-2), rb0..rb2 (6-8), n0..n2 (9-11)
    for (size_t s = 0; s < 3; ++s) {
      const uint64_t w = param_at<uint64_t>(op, s);
      const int64_t n = param_at<int>(op, 9 + s);
      if (w && n > 0) spans.push_back({w, static_cast<uint64_t>(param_at<int64_t>(op, 6 + s)) * static_cast<uint64_t>(n)});
    }
  }
  return spans;
}

double env_number(const char* name, double fallback) {
  const char* v = std::getenv(name);
  if (!v || !*v) return fallback;
  char* end = nullptr;
  const double d = std::strtod(v, &end);
  if (end == v || *end) fail("{}={} is not a number", name, v);
  return d;
}

}  // namespace

int persistent_phase_kind(std::string_view kernel, kernels::Activations a) {
  // A merged product's _early form (its first fills' count differs, not its sums) is its kind.
  if (kernel.starts_with("lathe_gemvm_") && kernel.ends_with("_early")) kernel.remove_suffix(6);
  const std::string_view suffix = a == kernels::Activations::int8x2 ? "_int8x2" : a == kernels::Activations::int8 ? "_int8" : "";
  for (const KindInfo& k : kKinds) {
    const std::string_view base = k.kernel;
    if (k.kind >= kRopeKind) {
      if (kernel == base) return k.kind;  // no contract in the name
    } else if (!suffix.empty() && kernel.size() == base.size() + suffix.size() && kernel.substr(0, base.size()) == base &&
               kernel.substr(base.size()) == suffix) {
      return k.kind;
    }
  }
  return 0;
}

std::vector<std::pair<size_t, size_t>> persistent_runs(const std::vector<int>& kinds, size_t min_ops) {
  std::vector<std::pair<size_t, size_t>> runs;
  size_t i = 0;
  while (i < kinds.size()) {
    if (kinds[i] == 0) {
      ++i;
      continue;
    }
    size_t j = i;
    while (j < kinds.size() && kinds[j] != 0) ++j;
    if (j - i >= std::max<size_t>(min_ops, 1)) runs.push_back({i, j});
    i = j;
  }
  return runs;
}

PersistentOptions PersistentOptions::from_environment() {
  PersistentOptions o;
  o.early = static_cast<int>(std::clamp(env_number("LATHE_PERSISTENT_EARLY", o.early), 0.0, 32.0));
  o.prefetch_mb = std::max(0.0, env_number("LATHE_PERSISTENT_PREFETCH_MB", o.prefetch_mb));
  return o;
}

PersistentStep::PersistentStep(const plan::StepPlan& plan, kernels::Activations a, const PersistentOptions& options,
                               CUstream stream) {
  if (a == kernels::Activations::f32) fail("the persistent decode step runs the int8 and int8x2 contracts, not f32");
  {
    cuda::LaunchCollector collector;
    cuda::set_launch_collector(&collector);
    try {
      plan.run(stream);
    } catch (...) {
      cuda::set_launch_collector(nullptr);
      throw;
    }
    cuda::set_launch_collector(nullptr);
    ops_ = std::move(collector.ops);
  }
  std::vector<int> kinds;
  for (const cuda::CollectedOp& op : ops_) {
    int kind = op.copy ? 0 : persistent_phase_kind(op.kernel, a);
    if (kind) {
      const KindInfo& k = *kind_info(kind);
      const size_t end = op.offsets.empty() ? 0 : op.params.size();
      if (op.offsets.size() != k.n_params || end != k.end)
        throw InternalError(fmt::format("kernel {} takes {} parameters ending at byte {}; step_persistent.cuh expects "
                                        "{} ending at {}",
                                        op.kernel, op.offsets.size(), end, k.n_params, k.end));
      if (op.block.x > 512 || op.block.x % 32 != 0 || op.block.y != 1 || op.block.z != 1) kind = 0;
    }
    kinds.push_back(kind);
  }
  const auto runs = persistent_runs(kinds);

  const cuda::DeviceInfo& device = cuda::Context::get().info();
  blocks_ = device.sm_count;
  kernel_ = kernels::kernel(a == kernels::Activations::int8x2 ? "lathe_step_persistent_int8x2" : "lathe_step_persistent_int8");
  if (const char* k = std::getenv("LATHE_PERSISTENT_KERNEL"); k && std::string(k) == "products" &&
      a == kernels::Activations::int8x2)
    kernel_ = kernels::kernel("lathe_step_persistent_products_int8x2");

  std::vector<Phase> table;
  std::vector<std::pair<size_t, size_t>> segments;  // (first phase, phases) of each run
  std::vector<unsigned> shared;
  for (const auto& [begin, end] : runs) {
    const size_t first = table.size();
    unsigned smem = 0;
    for (size_t i = begin; i < end; ++i) {
      const cuda::CollectedOp& op = ops_[i];
      Phase ph;
      ph.kind = kinds[i];
      ph.grid_x = static_cast<int32_t>(op.grid.x);
      ph.grid_y = static_cast<int32_t>(op.grid.y);
      ph.grid_z = static_cast<int32_t>(op.grid.z);
      ph.threads = static_cast<int32_t>(op.block.x);
      ph.early = options.early;
      LATHE_CHECK(op.params.size() <= sizeof(ph.params));
      std::memcpy(ph.params, op.params.data(), op.params.size());
      if (is_product(ph.kind) && op.grid.x > static_cast<unsigned>(blocks_))
        fail("{}: a product of {} blocks on {} SMs cannot run in the persistent step", op.what, op.grid.x, blocks_);
      // A small phase's idle warps ask L2 for the first bytes of the next product's weights.
      if (!is_product(ph.kind)) {
        for (size_t j = i + 1; j < end; ++j) {
          if (!is_product(kinds[j])) continue;
          const auto spans = product_weights(ops_[j], kinds[j]);
          const uint64_t budget = static_cast<uint64_t>(options.prefetch_mb * 1e6);
          for (size_t s = 0; s < spans.size() && s < 3; ++s) {
            ph.prefetch[s] = spans[s].first;
            ph.prefetch_bytes[s] = std::min<uint64_t>(spans[s].second, budget / spans.size());
          }
          break;
        }
      }
      smem = std::max(smem, op.shared_bytes);
      phase_kinds_.push_back(ph.kind);
      if (const char* dry = std::getenv("LATHE_PERSISTENT_DRY"); dry && std::string(dry) == "1")
        ph.kind = 0;  // barriers alone: for timing them, never right
      table.push_back(ph);
    }
    segments.push_back({first, end - begin});
    shared.push_back(smem);
    replaced_ += end - begin;
  }
  if (!table.empty()) {
    const unsigned most = *std::max_element(shared.begin(), shared.end());
    if (static_cast<int>(most) > device.shared_optin_bytes)
      fail("the persistent step needs {} bytes of shared memory a block; the card allows {}", most, device.shared_optin_bytes);
    const int resident = cuda::max_resident_blocks(kernel_, 512, most);
    if (resident < 1)
      fail("the persistent step's kernel cannot keep a block on an SM ({} bytes of shared memory, 512 threads)", most);
    tables_ = cuda::DeviceBuffer(table.size() * sizeof(Phase), "persistent step phases");
    tables_.upload(table.data(), table.size() * sizeof(Phase));
    sync_ = cuda::DeviceBuffer(segments.size() * 2 * sizeof(uint32_t), "persistent step barriers");
    sync_.zero();
    if (const char* t = std::getenv("LATHE_PERSISTENT_TRACE"); t && std::string(t) == "1") {
      trace_ = cuda::DeviceBuffer((table.size() * (1 + static_cast<size_t>(blocks_)) + segments.size()) * sizeof(uint64_t),
                                  "persistent step trace");
      trace_.zero();
    }
  }
  size_t r = 0;
  for (size_t i = 0; i < ops_.size();) {
    if (r < runs.size() && runs[r].first == i) {
      Item it;
      it.table = tables_.ptr() + segments[r].first * sizeof(Phase);
      it.phases = static_cast<int>(segments[r].second);
      it.shared_bytes = shared[r];
      it.sync = sync_.ptr() + r * 2 * sizeof(uint32_t);
      it.first_phase = segments[r].first;
      if (trace_.ptr())
        it.trace = trace_.ptr() + (segments[r].first * (1 + static_cast<size_t>(blocks_)) + r) * sizeof(uint64_t);
      items_.push_back(it);
      i = runs[r].second;
      ++r;
    } else {
      Item it;
      it.op = i++;
      items_.push_back(it);
    }
  }
}

void PersistentStep::run(CUstream stream) const {
  for (const Item& it : items_) {
    if (it.phases == 0) {
      cuda::replay(ops_[it.op], stream);
      continue;
    }
    CUdeviceptr table = it.table, sync = it.sync, trace = it.trace;
    int n = it.phases;
    cuda::launch_cooperative(kernel_, {static_cast<unsigned>(blocks_), 1, 1}, {512, 1, 1}, it.shared_bytes, stream,
                             {&table, &n, &sync, &trace}, "the persistent decode step");
  }
}

std::string PersistentStep::trace_summary() const {
  if (!trace_.ptr()) return "";
  std::vector<uint64_t> t(trace_.bytes() / sizeof(uint64_t));
  trace_.download(t.data(), trace_.bytes());
  std::map<std::string, std::pair<double, int>> by_kind;
  double total = 0;
  for (const Item& it : items_) {
    if (it.phases == 0) continue;
    const size_t base = (it.trace - trace_.ptr()) / sizeof(uint64_t);
    for (int p = 0; p < it.phases; ++p) {
      const double us = static_cast<double>(t[base + p + 1] - t[base + p]) / 1e3;
      const int kind = phase_kinds_[it.first_phase + p];
      auto& e = by_kind[kind_info(kind)->kernel];
      e.first += us;
      e.second += 1;
      total += us;
    }
  }
  std::string out = fmt::format("persistent phases, one step: {:.1f} us\n", total);
  // The phases of the second layer one by one (a layer is 6 phases of the dense models).
  for (const Item& it : items_) {
    if (it.phases < 12) continue;
    const size_t base = (it.trace - trace_.ptr()) / sizeof(uint64_t);
    size_t op = 0;
    for (const Item& j : items_) {  // the plan op of the item's first phase
      if (&j == &it) break;
      op += j.phases ? static_cast<size_t>(j.phases) : 1;
    }
    // Each phase: its time, then when the blocks finished its work, from its start (first, median,
    // last): the spread is the phase's tail.
    for (int p = 6; p < 12; ++p) {
      std::vector<double> ends;
      for (int b = 0; b < blocks_; ++b)
        ends.push_back(static_cast<double>(t[base + it.phases + 1 + static_cast<size_t>(p) * blocks_ + b] - t[base + p]) / 1e3);
      std::sort(ends.begin(), ends.end());
      out += fmt::format("  phase {:>3}: {:>7.2f} us, blocks done at {:>6.2f} / {:>6.2f} / {:>6.2f} us  {}\n", p,
                         static_cast<double>(t[base + p + 1] - t[base + p]) / 1e3, ends.front(), ends[ends.size() / 2],
                         ends.back(), ops_[op + static_cast<size_t>(p)].what);
    }
    break;
  }
  for (const auto& [name, v] : by_kind)
    out += fmt::format("  {:<24} {:>4} phases {:>9.1f} us {:>7.2f} us each\n", name, v.second, v.first, v.first / v.second);
  return out;
}

std::string PersistentStep::describe() const {
  size_t persistent = 0;
  for (const Item& it : items_) persistent += it.phases > 0;
  return fmt::format("persistent decode step: {} of {} launches run as phases of {} persistent launches; {} launches a step",
                     replaced_, ops_.size(), persistent, items_.size());
}

}  // namespace lathe
