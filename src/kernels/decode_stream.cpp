#include "kernels/decode_stream.h"

#include "runtime/cuda_api.h"
#include "runtime/cuda_driver.h"

#include <algorithm>
#include <cstdlib>
#include <map>
#include <memory>
#include <mutex>
#include <string_view>
#include <vector>

namespace lathe::kernels {

namespace {
// LATHE_DECODE_K35 (read once): Q2_K, Q3_K and Q5_K on the decode row walk and on the tiles unless it
// is 0, which keeps them on the general product (gemv_product.cuh), the form they had before. On by
// default since their kernel tests and checks passed on an H100 (tg128 2.1-3.0x; docs/perf.md,
// forty-second session).
bool g_k35 = [] {
  const char* v = std::getenv("LATHE_DECODE_K35");
  return !(v && v[0] == '0' && v[1] == 0);
}();

// A format the setting keeps off the row walk and the tiles.
bool held_off(GgmlType t) { return !g_k35 && (t == GgmlType::Q2_K || t == GgmlType::Q3_K || t == GgmlType::Q5_K); }
}  // namespace

bool set_decode_k35(bool on) {
  const bool before = g_k35;
  g_k35 = on;
  return before;
}

const DecodeFormat* decode_format(GgmlType t) {
  if (held_off(t)) return nullptr;
  static const DecodeFormat q8_0{"q8_0", 32, 64}, q2_k{"q2_k", 256, 16}, q3_k{"q3_k", 256, 16}, q4_k{"q4_k", 256, 16},
      q5_k{"q5_k", 256, 8}, q6_k{"q6_k", 256, 12};
  switch (t) {
    case GgmlType::Q2_K: return &q2_k;
    case GgmlType::Q8_0: return &q8_0;
    case GgmlType::Q3_K: return &q3_k;
    case GgmlType::Q4_K: return &q4_k;
    case GgmlType::Q5_K: return &q5_k;
    case GgmlType::Q6_K: return &q6_k;
    default: return nullptr;
  }
}

const DecodeTileFormat* decode_tile_format(GgmlType t) {
  if (held_off(t)) return nullptr;
  return decode_tile_format_listed(t);
}

const DecodeTileFormat* decode_tile_format_listed(GgmlType t) {
  // x_offset: Q4_K's x stays where the row walk stages it (its rings fit in the decode rings' area);
  // Q6_K's rings (16 warps x 3 x 16 x 240 bytes, 128 of alignment) are larger, so x follows them.
  // Q5_K's (16 x 3 x 16 x 176 bytes, 128 of alignment), Q3_K's (16 x 4 x 16 x 144: a 110-byte unit 0-14
  // bytes into a box of 144) and Q2_K's (16 x 5 x 16 x 112: an 84-byte unit 0-12 bytes in) fit there too.
  static const DecodeTileFormat q2_k{"q2_k", 84, 112, 5, kDecodeStageBytes}, q3_k{"q3_k", 110, 144, 4, kDecodeStageBytes},
      q4_k{"q4_k", 144, 144, 4, kDecodeStageBytes}, q5_k{"q5_k", 176, 176, 3, kDecodeStageBytes},
      q6_k{"q6_k", 210, 240, 3, 128 + 16 * 3 * kDecodeTileRows * 240};
  switch (t) {
    case GgmlType::Q2_K: return &q2_k;
    case GgmlType::Q3_K: return &q3_k;
    case GgmlType::Q4_K: return &q4_k;
    case GgmlType::Q5_K: return &q5_k;
    case GgmlType::Q6_K: return &q6_k;
    default: return nullptr;
  }
}

namespace {
bool g_weights_evict_first = false;
}  // namespace

void set_weights_evict_first(bool on) { g_weights_evict_first = on; }

const char* dense_kernel_format(GgmlType t) {
  if (t == GgmlType::Q8_0 && g_weights_evict_first) return "q8_0_ef";
  const DecodeFormat* f = decode_format(t);
  return f ? f->name : nullptr;
}

int64_t decode_chunks_per_row(const DecodeFormat& f, int64_t k) {
  const int64_t units = k / f.unit_values;
  return (units + f.chunk_units - 1) / f.chunk_units;
}

int64_t decode_half_chunks_per_row(const DecodeFormat& f, int64_t k) {
  const int64_t units = k / f.unit_values, half = f.chunk_units / 2;
  return (units + half - 1) / half;
}

namespace {
// LATHE_DECODE_PAIRS (a measuring knob, read once): 0 never pairs, 1 pairs every product but Q6_K's,
// unset or anything else the rule below.
const int g_decode_pairs = [] {
  const char* v = std::getenv("LATHE_DECODE_PAIRS");
  return v && (v[0] == '0' || v[0] == '1') && v[1] == 0 ? v[0] - '0' : -1;
}();
}  // namespace

bool decode_pairs_pay(const DecodeFormat& f, int64_t n_out, int64_t k) {
  if (std::string_view(f.name) == "q6_k" || g_decode_pairs == 0) return false;
  if (g_decode_pairs == 1) return true;
  return (k / f.unit_values) % f.chunk_units != 0 || n_out * k <= (int64_t{4} << 20);
}

int64_t staged_levels_bytes(int64_t values, Activations a) {
  return values * (a == Activations::int8x2 ? 2 : 1) + values / 2;
}

int64_t shared_optin_bytes() {
  // While recording (lathe emit), the virtual device's: the plan is the one the target card would run.
  if (const cuda::Recorder* r = cuda::recorder()) return r->device().shared_optin_bytes;
  static const int64_t bytes = [] {
    const cuda::DriverApi* d = cuda::driver_api();
    CUdevice dev = 0;
    int v = 0;
    if (!d || d->cuDeviceGet(&dev, 0) != CUDA_SUCCESS ||
        d->cuDeviceGetAttribute(&v, CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK_OPTIN, dev) != CUDA_SUCCESS)
      return int64_t{0};
    return static_cast<int64_t>(v);
  }();
  return bytes;
}

CUdeviceptr launcher_scratch(int use, size_t bytes) {
  static std::mutex mu;
  static std::map<int, std::vector<std::unique_ptr<cuda::DeviceBuffer>>> buffers;
  std::lock_guard<std::mutex> lock(mu);
  auto& b = buffers[use];
  if (b.empty() || b.back()->bytes() < bytes)
    b.push_back(std::make_unique<cuda::DeviceBuffer>(std::max<size_t>(bytes, 1 << 16), "launcher fallback scratch"));
  return b.back()->ptr();
}

}  // namespace lathe::kernels
