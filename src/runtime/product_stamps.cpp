#include "runtime/product_stamps.h"

#include "base/error.h"
#include "kernels/library.h"
#include "runtime/cuda_api.h"

#include <fmt/core.h>

#include <algorithm>
#include <cstdint>
#include <cstdlib>
#include <cstdio>
#include <memory>
#include <vector>

namespace lathe::cuda {

constexpr size_t kWords = 12;  // LATHE_STAMP_WORDS (kernels/common.cuh): a record's 64-bit words

std::string product_stamps_file() {
  const char* v = std::getenv("LATHE_STAMPS");
  return v ? std::string(v) : std::string();
}

ProductStamps::ProductStamps(size_t records) : buffer_(std::max<size_t>(records, 1) * kWords * 8, "product stamps"), records_(records) {
  const Module& m = kernels::library();
  if (!kernels::library_has_stamps())
    throw CudaError("product stamps: the kernel library was compiled without them (set LATHE_STAMPS before the first kernel)");
  stamps_ = m.global("lathe_stamps");
  cap_ = m.global("lathe_stamps_cap");
  used_ = m.global("lathe_stamps_used");
  const uint64_t p = buffer_.ptr();
  const unsigned cap = static_cast<unsigned>(std::min<size_t>(records, UINT32_MAX)), zero = 0;
  check(driver().cuCtxSynchronize(), "waiting for the stamped kernels");
  check(driver().cuMemcpyHtoD(cap_, &cap, sizeof(cap)), "setting the stamps' capacity");
  check(driver().cuMemcpyHtoD(used_, &zero, sizeof(zero)), "clearing the stamps' count");
  check(driver().cuMemcpyHtoD(stamps_, &p, sizeof(p)), "pointing the kernels at the stamps");
  on_ = true;
}

ProductStamps::~ProductStamps() {
  try {
    stop();
  } catch (...) {  // a destructor does not throw; the next CUDA call reports the fault
  }
}

void ProductStamps::stop() {
  if (!on_) return;
  check(driver().cuCtxSynchronize(), "waiting for the stamped kernels");
  const uint64_t null = 0;
  check(driver().cuMemcpyHtoD(stamps_, &null, sizeof(null)), "turning the stamps off");
  on_ = false;
}

void ProductStamps::write(const std::string& path) {
  stop();
  unsigned used = 0;
  check(driver().cuMemcpyDtoH(&used, used_, sizeof(used)), "reading the stamps' count");
  const size_t n = std::min<size_t>(used, records_);
  std::vector<uint64_t> r(n * kWords);
  if (n > 0) buffer_.download(r.data(), n * kWords * 8);
  uint64_t t0 = UINT64_MAX;
  for (size_t i = 0; i < n; ++i) t0 = std::min(t0, r[kWords * i + 3]);
  std::unique_ptr<FILE, int (*)(FILE*)> f(std::fopen(path.c_str(), "w"), &std::fclose);
  if (!f) fail("product stamps: cannot write {}", path);
  fmt::print(f.get(), "# {} block records, {} dropped past the buffer\n", n, used - n);
  fmt::print(f.get(), "weights,n_out,k,sm,block,entry,wait,x,first,end,xa,xb,xc\n");
  auto rel = [t0](uint64_t t) { return t == 0 ? int64_t{-1} : static_cast<int64_t>(t - t0); };
  for (size_t i = 0; i < n; ++i) {
    const uint64_t* q = r.data() + kWords * i;
    fmt::print(f.get(), "{:x},{},{},{},{},{},{},{},{},{},{},{},{}\n", q[0], q[1] & 0xffffffffu, q[1] >> 32, q[2] >> 32,
               q[2] & 0xffffffffu, rel(q[3]), rel(q[4]), rel(q[5]), rel(q[6]), rel(q[7]), rel(q[8]), rel(q[9]),
               rel(q[10]));
  }
}

}  // namespace lathe::cuda
