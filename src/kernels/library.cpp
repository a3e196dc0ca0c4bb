#include "kernels/library.h"

#include "base/error.h"

#include <algorithm>
#include <cstdlib>
#include <map>
#include <memory>
#include <mutex>
#include <regex>
#include <sstream>

namespace lathe::kernels {

std::string library_source() {
  std::string out = "// The Lathe kernel library (src/kernels/*.cuh), compiled as one unit.\n";
  auto add = [&](const KernelFile& f) {
    out += "// ---- file: " + std::string(f.name) + "\n";
    out += f.text;
    if (!out.empty() && out.back() != '\n') out += '\n';
  };
  for (const KernelFile& f : kernel_files())
    if (f.name == "common.cuh") add(f);
  for (const KernelFile& f : kernel_files())
    if (f.name != "common.cuh" && !is_sm90a_only_file(f.name)) add(f);
  return out;
}

bool is_sm90a_only_file(std::string_view name) { return name.starts_with("gemm_wgmma"); }

std::string library_90a_source() {
  std::string out = "// The Lathe sm_90a kernels (src/kernels/gemm_wgmma*.cuh and what they use), one unit.\n";
  auto add = [&](const KernelFile& f) {
    out += "// ---- file: " + std::string(f.name) + "\n";
    out += f.text;
    if (!out.empty() && out.back() != '\n') out += '\n';
  };
  for (std::string_view name : {"common.cuh", "gemm_f16.cuh", "gemm_f16_blocks.cuh"})
    for (const KernelFile& f : kernel_files())
      if (f.name == name) add(f);
  for (const KernelFile& f : kernel_files())
    if (is_sm90a_only_file(f.name)) add(f);
  return out;
}

const std::vector<std::string>& sm90a_options() {
  static const std::vector<std::string> options = {"--gpu-architecture=sm_90a"};
  return options;
}

const cuda::Module& library_90a() {
  static std::mutex mu;
  static std::unique_ptr<cuda::Module> module;
  std::lock_guard<std::mutex> lock(mu);
  if (!module) {
    const cuda::DeviceInfo& info = cuda::Context::get().info();
    if (info.cc_major != 9 || info.cc_minor != 0)
      throw cuda::CudaError("the sm_90a kernels run only on compute capability 9.0 cards, not " + info.arch());
    module = std::make_unique<cuda::Module>(
        cuda::Module::compile(library_90a_source(), "lathe_kernels_90a.cu", sm90a_options()));
  }
  return *module;
}

CUfunction kernel_90a(const std::string& name) {
  LATHE_CHECK(cuda::recorder() == nullptr);
  static std::mutex mu;
  static std::map<std::string, CUfunction> cache;
  const cuda::Module& m = library_90a();
  std::lock_guard<std::mutex> lock(mu);
  auto it = cache.find(name);
  if (it != cache.end()) return it->second;
  CUfunction f = m.function(name);
  cache[name] = f;
  return f;
}

const std::vector<std::string>& library_options() {
  static const std::vector<std::string> options = [] {
    std::vector<std::string> o;
    const char* v = std::getenv("LATHE_STAMPS");
    if (v && *v) o.push_back("-DLATHE_PRODUCT_STAMPS");
    const char* d = std::getenv("LATHE_KERNEL_DEFINES");
    std::istringstream words(d ? d : "");
    static const std::regex define("-DLATHE_[A-Z0-9_]+(=[0-9]+)?");
    for (std::string w; words >> w;) {
      if (!std::regex_match(w, define))
        fail("LATHE_KERNEL_DEFINES: '{}' is not of the form -DLATHE_NAME or -DLATHE_NAME=N", w);
      o.push_back(w);
    }
    return o;
  }();
  return options;
}

bool library_has_stamps() {
  const std::vector<std::string>& o = library_options();
  return std::find(o.begin(), o.end(), "-DLATHE_PRODUCT_STAMPS") != o.end();
}

const cuda::Module& library() {
  static std::mutex mu;
  static std::unique_ptr<cuda::Module> module;
  std::lock_guard<std::mutex> lock(mu);
  if (!module)
    module = std::make_unique<cuda::Module>(
        cuda::Module::compile(library_source(), "lathe_kernels.cu", library_options()));
  return *module;
}

CUfunction kernel(const std::string& name) {
  if (cuda::Recorder* r = cuda::recorder()) return r->function(name);  // recording: a handle for the name
  static std::mutex mu;
  static std::map<std::string, CUfunction> cache;
  const cuda::Module& m = library();
  std::lock_guard<std::mutex> lock(mu);
  auto it = cache.find(name);
  if (it != cache.end()) return it->second;
  CUfunction f = m.function(name);
  cache[name] = f;
  return f;
}

}  // namespace lathe::kernels
