// The decode products' edge stamps (runtime/product_stamps.h, a measuring knob): with the library
// compiled with them, every block of a decode GEMV (row and paired bodies) and of the merged q/k/v and
// gate/up products leaves one record, with its launch's weights, shape, a distinct block index and SM,
// and times in the order the block passes them; a new set starts empty.
#include "gguf/block_format.h"
#include "kernels/gemv_launch.h"
#include "kernels/gemv_multi_launch.h"
#include "runtime/product_stamps.h"
#include "test_product_helpers.h"

#include <gtest/gtest.h>

#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <random>
#include <set>
#include <sstream>
#include <string>
#include <vector>

namespace lathe::kernels {
namespace {

using cuda::DeviceBuffer;
using namespace test;

// Before any kernel is compiled in this process: the library with the stamps.
const bool g_stamps_env = [] {
  setenv("LATHE_STAMPS", "/tmp/lathe_test_product_stamps.csv", 1);
  return true;
}();

struct Record {
  std::string weights;
  long long n_out, k, sm, block, entry, wait, x, first, end, xa, xb, xc;
};

std::vector<Record> read_records(const std::string& path, long long* dropped) {
  std::ifstream in(path);
  std::string line;
  std::getline(in, line);  // "# N block records, D dropped past the buffer"
  long long n = 0;
  std::sscanf(line.c_str(), "# %lld block records, %lld dropped", &n, dropped);
  std::getline(in, line);  // the column names
  std::vector<Record> r;
  while (std::getline(in, line)) {
    for (char& c : line) c = c == ',' ? ' ' : c;
    std::istringstream s(line);
    Record x;
    s >> x.weights >> x.n_out >> x.k >> x.sm >> x.block >> x.entry >> x.wait >> x.x >> x.first >> x.end >> x.xa >> x.xb >>
        x.xc;
    r.push_back(x);
  }
  EXPECT_EQ(static_cast<long long>(r.size()), n);
  return r;
}

TEST(ProductStamps, EveryBlockOfEveryProductOnceInOrder) {
  LATHE_NEED_GPU();
  ASSERT_TRUE(g_stamps_env);
  cuda::Stream s;
  std::mt19937 rng(7);
  const int sm_count = cuda::Context::get().info().sm_count;
  struct Shape {
    int64_t n_out, k;
  };
  // 4096 x 4096 takes the row body, 1024 x 1024 the paired one (a partial last chunk).
  const Shape shapes[] = {{4096, 4096}, {1024, 1024}};
  std::vector<DeviceBuffer> keep;
  std::vector<std::pair<std::string, Shape>> launched;
  auto hex = [](CUdeviceptr p) {
    char b[32];
    std::snprintf(b, sizeof b, "%llx", static_cast<unsigned long long>(p));
    return std::string(b);
  };
  const std::string path = cuda::product_stamps_file();
  {
    cuda::ProductStamps stamps(1 << 16);
    for (const Shape& sh : shapes) {
      const std::vector<uint8_t> m = random_matrix(GgmlType::Q8_0, sh.n_out, sh.k, rng);
      keep.push_back(upload(m));
      const CUdeviceptr w = keep.back().ptr();
      DeviceBuffer xd = upload(random_values(sh.k, rng)), yd(sh.n_out * sizeof(float));
      DeviceBuffer q(static_cast<size_t>(quantized_activation_bytes(1, sh.k, Activations::int8x2)));
      quantize_activations(xd.ptr(), 1, sh.k, Activations::int8x2, q.ptr(), s.handle());
      gemv(WeightMatrix{GgmlType::Q8_0, w, sh.n_out, sh.k}, Activations::int8x2, q.ptr(), 1, yd.ptr(), s.handle());
      s.synchronize();
      launched.push_back({hex(w), sh});
      // The merged gate/up (and SwiGLU) of another matrix and this one: one launch, recorded under the
      // first (gate's) address.
      keep.push_back(upload(random_matrix(GgmlType::Q8_0, sh.n_out, sh.k, rng)));
      const CUdeviceptr g = keep.back().ptr();
      const WeightMatrix gate{GgmlType::Q8_0, g, sh.n_out, sh.k}, up{GgmlType::Q8_0, w, sh.n_out, sh.k};
      gemv_gate_up_swiglu(gate, up, Activations::int8x2, q.ptr(), yd.ptr(), s.handle(), 1);
      s.synchronize();
      launched.push_back({hex(g), sh});
    }
    stamps.write(path);
  }
  long long dropped = -1;
  const std::vector<Record> r = read_records(path, &dropped);
  EXPECT_EQ(dropped, 0);
  ASSERT_FALSE(r.empty());
  // Records in launch order: each launch's blocks (any order among them) before the next launch's,
  // which reads other weights.
  size_t i = 0;
  for (const auto& [weights, sh] : launched) {
    std::set<long long> blocks;
    while (i < r.size() && r[i].weights == weights) {
      const Record& x = r[i++];
      EXPECT_TRUE(blocks.insert(x.block).second) << "block " << x.block << " twice";
      EXPECT_EQ(x.k, sh.k);
      EXPECT_TRUE(x.n_out == sh.n_out) << x.n_out;
      EXPECT_LT(x.sm, sm_count);
      EXPECT_LE(0, x.entry);
      EXPECT_LE(x.entry, x.wait);
      EXPECT_LE(x.wait, x.x);
      if (x.first >= 0) {  // -1: warp 0 had no chunk
        EXPECT_LE(x.x, x.first);
        EXPECT_LE(x.first, x.end);
      }
      EXPECT_LE(x.x, x.end);
      // Inside x: the copy's landing (xa; xb, xc not passed), between the wait and x in place.
      EXPECT_LE(x.wait, x.xa);
      EXPECT_LE(x.xa, x.x);
      EXPECT_EQ(x.xb, -1);
      EXPECT_EQ(x.xc, -1);
    }
    EXPECT_GT(blocks.size(), 0u) << weights;
    EXPECT_LE(static_cast<int>(blocks.size()), sm_count);
    EXPECT_EQ(*blocks.rbegin() + 1, static_cast<long long>(blocks.size())) << "blocks 0.." << blocks.size() - 1;
  }
  EXPECT_EQ(i, r.size());
  // A new set starts empty: nothing ran since.
  {
    cuda::ProductStamps again(16);
    again.write(path);
  }
  long long d2 = -1;
  EXPECT_TRUE(read_records(path, &d2).empty());
  std::remove(path.c_str());
}

}  // namespace
}  // namespace lathe::kernels
