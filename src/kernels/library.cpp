#include "kernels/library.h"

#include <map>
#include <memory>
#include <mutex>

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
    if (f.name != "common.cuh") add(f);
  return out;
}

const cuda::Module& library() {
  static std::mutex mu;
  static std::unique_ptr<cuda::Module> module;
  std::lock_guard<std::mutex> lock(mu);
  if (!module) module = std::make_unique<cuda::Module>(cuda::Module::compile(library_source(), "lathe_kernels.cu"));
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
