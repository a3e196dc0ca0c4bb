#include "runtime/cuda_driver.h"

#include "base/digest.h"
#include "runtime/cuda_api.h"

#include <fmt/format.h>

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <map>
#include <mutex>
#include <set>

namespace lathe::cuda {

// The loaded driver; only reached after gpu_available() said yes (Context's constructor checks).
static const DriverApi& D() {
  std::string why;
  const DriverApi* d = driver_api(&why);
  if (!d) throw CudaError(why);
  return *d;
}

static const NvrtcApi& N() {
  std::string why;
  const NvrtcApi* n = nvrtc_api(&why);
  if (!n) throw CudaError(why);
  return *n;
}

void check(CUresult r, const char* what) {
  if (r == CUDA_SUCCESS) return;
  const char* name = nullptr;
  const char* text = nullptr;
  D().cuGetErrorName(r, &name);
  D().cuGetErrorString(r, &text);
  throw CudaError(fmt::format("{}: {}: {}", what, name ? name : "unknown CUDA error",
                              text ? text : "no description"));
}

bool gpu_present(std::string* why) {
  if (!driver_api(why)) return false;
  CUresult r = D().cuInit(0);
  if (r != CUDA_SUCCESS) {
    if (why) {
      const char* name = nullptr;
      D().cuGetErrorName(r, &name);
      *why = fmt::format("no usable GPU: the CUDA driver did not start ({})", name ? name : "unknown");
    }
    return false;
  }
  int count = 0;
  if (D().cuDeviceGetCount(&count) != CUDA_SUCCESS || count == 0) {
    if (why) *why = "no usable GPU: the CUDA driver sees no device";
    return false;
  }
  return true;
}

bool gpu_available(std::string* why) {
  if (!gpu_present(why)) return false;
  // The kernel library needs compute capability 9.0 or later (thread block clusters, bulk copies with
  // transaction barriers, the tiles' TMA): an earlier card is refused here, by name, not by NVRTC's
  // errors when the library is compiled for it.
  CUdevice dev = 0;
  int major = 0, minor = 0;
  if (D().cuDeviceGet(&dev, 0) == CUDA_SUCCESS &&
      D().cuDeviceGetAttribute(&major, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR, dev) == CUDA_SUCCESS &&
      D().cuDeviceGetAttribute(&minor, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR, dev) == CUDA_SUCCESS &&
      major < kMinComputeMajor) {
    if (why) {
      char name[256] = {};
      D().cuDeviceGetName(name, sizeof name, dev);
      *why = fmt::format("no usable GPU: {} has compute capability {}.{}, and Lathe's GPU kernels need {}.0 or later "
                         "(Hopper: H100, H200)",
                         name, major, minor, kMinComputeMajor);
    }
    return false;
  }
  return true;
}

Context::Context() {
  std::string why;
  if (!gpu_available(&why)) throw CudaError(why);
  check(D().cuDeviceGet(&device_, 0), "cuDeviceGet");
  check(D().cuDevicePrimaryCtxRetain(&ctx_, device_), "retaining the device's context");
  check(D().cuCtxSetCurrent(ctx_), "cuCtxSetCurrent");
  char name[256] = {};
  check(D().cuDeviceGetName(name, sizeof name, device_), "cuDeviceGetName");
  info_.name = name;
  check(D().cuDeviceGetAttribute(&info_.cc_major, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR, device_), "attribute");
  check(D().cuDeviceGetAttribute(&info_.cc_minor, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR, device_), "attribute");
  check(D().cuDeviceGetAttribute(&info_.sm_count, CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT, device_), "attribute");
  check(D().cuDeviceGetAttribute(&info_.l2_bytes, CU_DEVICE_ATTRIBUTE_L2_CACHE_SIZE, device_), "attribute");
  check(D().cuDeviceGetAttribute(&info_.shared_optin_bytes, CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK_OPTIN, device_),
        "attribute");
  refresh_memory();
}

Context::Context(const DeviceInfo& virtual_device) : info_(virtual_device) {}

Context& Context::get() {
  if (Recorder* r = recorder()) {
    static Context virtual_context{DeviceInfo{}};
    virtual_context.info_ = r->device();
    return virtual_context;
  }
  static std::once_flag once;
  static std::unique_ptr<Context> ctx;
  std::call_once(once, [] { ctx.reset(new Context()); });
  if (!ctx) throw CudaError("no usable GPU");
  ctx->make_current();
  return *ctx;
}

void Context::make_current() const {
  if (!ctx_) return;  // the virtual context of a recording
  check(D().cuCtxSetCurrent(ctx_), "cuCtxSetCurrent"); }

DeviceInfo Context::refresh_memory() {
  if (!ctx_) return info_;
  check(D().cuMemGetInfo(&info_.free_memory, &info_.total_memory), "cuMemGetInfo");
  return info_;
}

DeviceBuffer::DeviceBuffer(size_t bytes, const char* what) : bytes_(bytes) {
  if (Recorder* r = recorder()) {
    ptr_ = r->allocate(bytes, what);
    return;
  }
  Context::get();
  if (bytes == 0) return;
  const CUresult r = D().cuMemAlloc(&ptr_, bytes);
  if (r == CUDA_ERROR_OUT_OF_MEMORY) {
    size_t free = 0, total = 0;
    D().cuMemGetInfo(&free, &total);
    throw CudaError(fmt::format("too little GPU memory for the {}: {:.3f} GB asked, {:.3f} GB free of {:.3f} GB",
                                what, bytes / 1e9, free / 1e9, total / 1e9));
  }
  check(r, what);
}

DeviceBuffer& DeviceBuffer::operator=(DeviceBuffer&& o) noexcept {
  if (this != &o) {
    if (ptr_ && !Recorder::is_virtual(ptr_)) D().cuMemFree(ptr_);
    ptr_ = o.ptr_;
    bytes_ = o.bytes_;
    o.ptr_ = 0;
    o.bytes_ = 0;
  }
  return *this;
}

DeviceBuffer::~DeviceBuffer() {
  if (ptr_ && !Recorder::is_virtual(ptr_)) D().cuMemFree(ptr_);
}

void DeviceBuffer::upload(const void* src, size_t bytes, size_t offset) {
  LATHE_CHECK(offset + bytes <= bytes_);
  if (Recorder::is_virtual(ptr_)) {
    LATHE_CHECK(recorder() != nullptr);
    recorder()->write(ptr_ + offset, src, bytes, false);
    return;
  }
  if (bytes) check(D().cuMemcpyHtoD(ptr_ + offset, src, bytes), "copying to the GPU");
  // A copy from pageable memory may still be in flight when cuMemcpyHtoD returns, and work on
  // non-blocking streams does not wait for it: finish it here (uploads happen at load time).
  check(D().cuCtxSynchronize(), "copying to the GPU");
}

void DeviceBuffer::download(void* dst, size_t bytes, size_t offset) const {
  LATHE_CHECK(offset + bytes <= bytes_);
  if (Recorder::is_virtual(ptr_)) internal_fail("reading back a buffer of a recording");
  if (bytes) check(D().cuMemcpyDtoH(dst, ptr_ + offset, bytes), "copying from the GPU");
}

void DeviceBuffer::zero() {
  if (Recorder::is_virtual(ptr_)) {
    LATHE_CHECK(recorder() != nullptr);
    recorder()->write(ptr_, nullptr, bytes_, true);
    return;
  }
  if (bytes_) check(D().cuMemsetD8(ptr_, 0, bytes_), "cuMemsetD8");
  check(D().cuCtxSynchronize(), "cuMemsetD8");
}

PinnedBuffer::PinnedBuffer(size_t bytes) : bytes_(bytes) {
  if (recorder()) throw CudaError("pinned host memory has no place in a recording (the virtual device is large)");
  Context::get();
  if (bytes) check(D().cuMemHostAlloc(&ptr_, bytes, CU_MEMHOSTALLOC_DEVICEMAP | CU_MEMHOSTALLOC_PORTABLE),
                   "allocating pinned host memory");
}

PinnedBuffer& PinnedBuffer::operator=(PinnedBuffer&& o) noexcept {
  if (this != &o) {
    if (ptr_) D().cuMemFreeHost(ptr_);
    ptr_ = o.ptr_;
    bytes_ = o.bytes_;
    o.ptr_ = nullptr;
    o.bytes_ = 0;
  }
  return *this;
}

PinnedBuffer::~PinnedBuffer() {
  if (ptr_) D().cuMemFreeHost(ptr_);
}

CUdeviceptr PinnedBuffer::device_ptr() const {
  CUdeviceptr p = 0;
  check(D().cuMemHostGetDevicePointer(&p, ptr_, 0), "mapping pinned memory for the GPU");
  return p;
}

Stream::Stream() {
  Context::get();
  check(D().cuStreamCreate(&s_, CU_STREAM_NON_BLOCKING), "cuStreamCreate");
}

Stream::~Stream() {
  if (s_) D().cuStreamDestroy(s_);
}

void Stream::synchronize() const { check(D().cuStreamSynchronize(s_), "running the GPU work"); }

std::string cache_directory() {
  if (const char* dir = std::getenv("LATHE_CACHE_DIR")) return dir;
  if (const char* home = std::getenv("HOME")) return (std::filesystem::path(home) / ".cache/lathe/kernels").string();
  return (std::filesystem::temp_directory_path() / "lathe-kernels").string();
}

namespace {

void nvrtc_check(nvrtcResult r, const char* what) {
  if (r != NVRTC_SUCCESS) throw CudaError(fmt::format("{}: {}", what, N().nvrtcGetErrorString(r)));
}

std::filesystem::path cache_dir() { return std::filesystem::path(cache_directory()); }

}  // namespace

std::vector<char> nvrtc_compile(const std::string& source, const std::string& name,
                                const std::vector<std::string>& options, const std::string& arch) {
  nvrtcProgram prog = nullptr;
  nvrtc_check(N().nvrtcCreateProgram(&prog, source.c_str(), name.c_str(), 0, nullptr, nullptr),
              "nvrtcCreateProgram");
  std::vector<std::string> all = {"--gpu-architecture=" + arch, "-std=c++17", "-default-device"};
  // cuda_fp16.h and friends: from the toolkit beside NVRTC.
  for (const char* dir : {static_cast<const char*>(std::getenv("CUDA_HOME")), "/usr/local/cuda"}) {
    if (dir && std::filesystem::exists(std::filesystem::path(dir) / "include/cuda_fp16.h")) {
      all.push_back(std::string("-I") + dir + "/include");
      break;
    }
  }
  all.insert(all.end(), options.begin(), options.end());
  std::vector<const char*> argv;
  for (const std::string& o : all) argv.push_back(o.c_str());
  const nvrtcResult r = N().nvrtcCompileProgram(prog, static_cast<int>(argv.size()), argv.data());
  size_t log_size = 0;
  N().nvrtcGetProgramLogSize(prog, &log_size);
  std::string log(log_size, '\0');
  if (log_size > 1) N().nvrtcGetProgramLog(prog, log.data());
  if (r != NVRTC_SUCCESS) {
    N().nvrtcDestroyProgram(&prog);
    throw CudaError(fmt::format("compiling {} with NVRTC for {} failed:\n{}", name, arch, log));
  }
  size_t size = 0;
  nvrtc_check(N().nvrtcGetCUBINSize(prog, &size), "nvrtcGetCUBINSize");
  std::vector<char> cubin(size);
  nvrtc_check(N().nvrtcGetCUBIN(prog, cubin.data()), "nvrtcGetCUBIN");
  N().nvrtcDestroyProgram(&prog);
  return cubin;
}

namespace {

// The cache key of a compilation: the source, the architecture, the options and NVRTC's version.
std::string module_digest(const std::string& source, const std::string& arch, const std::vector<std::string>& options) {
  std::string key = source + "\n//arch " + arch;
  for (const std::string& o : options) key += "\n//option " + o;
  int nvrtc_major = 0, nvrtc_minor = 0;
  N().nvrtcVersion(&nvrtc_major, &nvrtc_minor);
  key += fmt::format("\n//nvrtc {}.{}", nvrtc_major, nvrtc_minor);
  return sha256_hex(key);
}

// The cached cubin of a digest, else compiled and written to the cache (a cache that cannot be
// written is not an error). `from_cache`: whether it was found.
std::vector<char> cached_cubin(const std::string& digest, const std::string& source, const std::string& name,
                               const std::vector<std::string>& options, const std::string& arch, bool* from_cache) {
  const std::filesystem::path file = cache_dir() / (digest + ".cubin");
  std::vector<char> cubin;
  if (std::ifstream in(file, std::ios::binary); in) cubin.assign(std::istreambuf_iterator<char>(in), {});
  *from_cache = !cubin.empty();
  if (cubin.empty()) {
    cubin = nvrtc_compile(source, name, options, arch);
    std::error_code ec;
    std::filesystem::create_directories(cache_dir(), ec);
    const std::filesystem::path tmp = file.string() + ".tmp";
    if (std::ofstream out(tmp, std::ios::binary); out) {
      out.write(cubin.data(), static_cast<std::streamsize>(cubin.size()));
      out.close();
      std::filesystem::rename(tmp, file, ec);
    }
  }
  return cubin;
}

}  // namespace

Module Module::compile(const std::string& source, const std::string& name,
                       const std::vector<std::string>& options) {
  const Context& ctx = Context::get();
  const std::string arch = ctx.info().arch();
  Module m;
  m.digest_ = module_digest(source, arch, options);
  const std::vector<char> cubin = cached_cubin(m.digest_, source, name, options, arch, &m.from_cache_);
  check(D().cuModuleLoadData(&m.mod_, cubin.data()), "loading the compiled kernels");
  return m;
}

std::string Module::precompile(const std::string& source, const std::string& name, const std::string& arch,
                               const std::vector<std::string>& options) {
  const std::string digest = module_digest(source, arch, options);
  bool from_cache = false;
  cached_cubin(digest, source, name, options, arch, &from_cache);
  const std::filesystem::path file = cache_dir() / (digest + ".cubin");
  if (!std::filesystem::exists(file)) throw CudaError(fmt::format("could not write {} (the kernel cache)", file.string()));
  return file.string();
}

Module::~Module() {
  if (mod_) D().cuModuleUnload(mod_);
}

CUfunction Module::function(const std::string& name) const {
  CUfunction f = nullptr;
  const CUresult r = D().cuModuleGetFunction(&f, mod_, name.c_str());
  if (r == CUDA_ERROR_NOT_FOUND) throw CudaError(fmt::format("no kernel named '{}' in the module", name));
  check(r, "cuModuleGetFunction");
  return f;
}

CUdeviceptr Module::global(const std::string& name, size_t* bytes) const {
  CUdeviceptr p = 0;
  size_t n = 0;
  const CUresult r = D().cuModuleGetGlobal(&p, &n, mod_, name.c_str());
  if (r == CUDA_ERROR_NOT_FOUND) throw CudaError(fmt::format("no device variable named '{}' in the module", name));
  check(r, "cuModuleGetGlobal");
  if (bytes) *bytes = n;
  return p;
}

namespace {
thread_local bool programmatic_launch_on = true;
}  // namespace

void set_programmatic_launch(bool on) { programmatic_launch_on = on; }

namespace {
thread_local LaunchCollector* active_collector = nullptr;

void collect_launch(LaunchCollector& c, CUfunction f, Dim3 grid, Dim3 block, unsigned shared_bytes,
                    const std::vector<void*>& args, const char* what) {
  CollectedOp op;
  op.function = f;
  op.grid = grid;
  op.block = block;
  op.shared_bytes = shared_bytes;
  op.what = what ? what : "";
  if (!D().cuFuncGetName || !D().cuFuncGetParamInfo)
    throw UserError(
        "the persistent decode step reads each launch's kernel name and parameters with cuFuncGetName and "
        "cuFuncGetParamInfo, which this NVIDIA driver lacks (the latter came with CUDA 12.4); run without --persistent "
        "(LATHE_PERSISTENT unset), or update the driver");
  const char* name = nullptr;
  check(D().cuFuncGetName(&name, f), what);
  op.kernel = name ? name : "";
  for (size_t i = 0; i < args.size(); ++i) {
    size_t offset = 0, size = 0;
    check(D().cuFuncGetParamInfo(f, i, &offset, &size), what);
    if (op.params.size() < offset + size) op.params.resize(offset + size);
    std::memcpy(op.params.data() + offset, args[i], size);
    op.offsets.push_back(offset);
  }
  size_t offset = 0, size = 0;
  if (D().cuFuncGetParamInfo(f, args.size(), &offset, &size) == CUDA_SUCCESS)
    throw CudaError(fmt::format("{}: kernel {} takes more than the {} parameters given", what, op.kernel, args.size()));
  c.ops.push_back(std::move(op));
}
}  // namespace

void set_launch_collector(LaunchCollector* collector) { active_collector = collector; }

void replay(const CollectedOp& op, CUstream stream) {
  if (op.copy) {
    copy_async(op.dst, op.src, op.bytes, stream, op.what.c_str());
    return;
  }
  std::vector<unsigned char> params = op.params;  // cuLaunchKernel copies the values at the call
  std::vector<void*> args;
  for (size_t off : op.offsets) args.push_back(params.data() + off);
  launch(op.function, op.grid, op.block, op.shared_bytes, stream, std::move(args), op.what.c_str());
}

int max_resident_blocks(CUfunction f, int threads, unsigned shared_bytes) {
  check(D().cuFuncSetAttribute(f, CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES, static_cast<int>(shared_bytes)),
        "setting a kernel's shared memory");
  int n = 0;
  check(D().cuOccupancyMaxActiveBlocksPerMultiprocessor(&n, f, threads, shared_bytes), "asking a kernel's occupancy");
  return n;
}

namespace {
// LATHE_CARVEOUT=N (a measuring knob, 0..100): every kernel's preferred shared-memory carveout, in
// percent of the most (CU_FUNC_ATTRIBUTE_PREFERRED_SHARED_MEMORY_CARVEOUT), set once a function; unset
// leaves the driver's choice. An SM changes its split between L1 and shared memory only when idle, so
// a small kernel between two large ones may hold the next one's blocks off its SM.
void prefer_carveout(CUfunction f, const char* what) {
  static const int carveout = [] {
    const char* v = std::getenv("LATHE_CARVEOUT");
    return v ? std::clamp(std::atoi(v), 0, 100) : -1;
  }();
  if (carveout < 0) return;
  static std::mutex mu;
  static std::set<CUfunction> done;
  std::lock_guard<std::mutex> lock(mu);
  if (done.insert(f).second)
    check(D().cuFuncSetAttribute(f, CU_FUNC_ATTRIBUTE_PREFERRED_SHARED_MEMORY_CARVEOUT, carveout), what);
}

// A kernel's static shared memory (its __shared__ arrays), asked of the driver once a function.
int static_shared_bytes(CUfunction f, const char* what) {
  static std::mutex mu;
  static std::map<CUfunction, int> known;
  std::lock_guard<std::mutex> lock(mu);
  auto it = known.find(f);
  if (it != known.end()) return it->second;
  int bytes = 0;
  check(D().cuFuncGetAttribute(&bytes, CU_FUNC_ATTRIBUTE_SHARED_SIZE_BYTES, f), what);
  return known[f] = bytes;
}

// cuLaunchKernelEx with at most one launch attribute (CU_LAUNCH_ATTRIBUTE_IGNORE: none), after opting f in to its
// dynamic shared memory where that and its static shared memory pass 48 KB together (without the opt-in the
// driver refuses such a launch: CUDA_ERROR_INVALID_VALUE).
void launch_with(CUfunction f, Dim3 grid, Dim3 block, unsigned shared_bytes, CUstream stream, std::vector<void*>& args,
                 const CUlaunchAttribute& attr, const char* what) {
  prefer_carveout(f, what);
  if (shared_bytes > 0 && shared_bytes + static_cast<unsigned>(static_shared_bytes(f, what)) > 48 * 1024)
    check(D().cuFuncSetAttribute(f, CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES, static_cast<int>(shared_bytes)),
          what);
  CUlaunchConfig config{};
  config.gridDimX = grid.x;
  config.gridDimY = grid.y;
  config.gridDimZ = grid.z;
  config.blockDimX = block.x;
  config.blockDimY = block.y;
  config.blockDimZ = block.z;
  config.sharedMemBytes = shared_bytes;
  config.hStream = stream;
  config.attrs = const_cast<CUlaunchAttribute*>(&attr);
  config.numAttrs = attr.id != CU_LAUNCH_ATTRIBUTE_IGNORE ? 1 : 0;
  check(D().cuLaunchKernelEx(&config, f, args.data(), nullptr), what);
}
}  // namespace

void launch_cooperative(CUfunction f, Dim3 grid, Dim3 block, unsigned shared_bytes, CUstream stream,
                        std::vector<void*> args, const char* what) {
  CUlaunchAttribute attr{};
  attr.id = CU_LAUNCH_ATTRIBUTE_COOPERATIVE;
  attr.value.cooperative = 1;
  launch_with(f, grid, block, shared_bytes, stream, args, attr, what);
}

void launch(CUfunction f, Dim3 grid, Dim3 block, unsigned shared_bytes, CUstream stream,
            std::vector<void*> args, const char* what) {
  if (Recorder* r = recorder()) {
    r->launch(f, grid, block, shared_bytes, args);
    return;
  }
  if (active_collector) {
    collect_launch(*active_collector, f, grid, block, shared_bytes, args, what);
    return;
  }
  // Programmatic dependent launch: a kernel may be launched while the one before it still runs; every
  // library kernel begins with lathe_pdl_entry() (common.cuh), which waits for its predecessor to
  // finish before reading anything, then lets its successor launch (the decode attention and the
  // router's product let theirs launch later: attention.cuh, moe_route_epilogue.cuh). LATHE_PDL=0
  // turns it off.
  static const bool pdl_allowed = [] {
    const char* env = std::getenv("LATHE_PDL");
    return !(env && std::string(env) == "0");
  }();
  CUlaunchAttribute attr{};
  if (pdl_allowed && programmatic_launch_on) {
    attr.id = CU_LAUNCH_ATTRIBUTE_PROGRAMMATIC_STREAM_SERIALIZATION;
    attr.value.programmaticStreamSerializationAllowed = 1;
  }
  launch_with(f, grid, block, shared_bytes, stream, args, attr, what);
}

void copy_async(CUdeviceptr dst, CUdeviceptr src, size_t bytes, CUstream stream, const char* what) {
  if (Recorder* r = recorder()) {
    r->copy(dst, src, bytes);
    return;
  }
  if (active_collector) {
    CollectedOp op;
    op.copy = true;
    op.dst = dst;
    op.src = src;
    op.bytes = bytes;
    op.what = what ? what : "";
    active_collector->ops.push_back(std::move(op));
    return;
  }
  check(D().cuMemcpyDtoDAsync(dst, src, bytes, stream), what);
}

namespace {
Recorder* active_recorder = nullptr;
}  // namespace

Recorder* recorder() { return active_recorder; }

Recorder::Recorder(const DeviceInfo& device, ParamSizes param_sizes)
    : device_(device), param_sizes_(std::move(param_sizes)) {
  if (active_recorder) internal_fail("a recording is already active");
  active_recorder = this;
}

Recorder::~Recorder() { active_recorder = nullptr; }

bool Recorder::locate(CUdeviceptr p, size_t* buffer, size_t* offset) const {
  if (!is_virtual(p)) return false;
  const size_t b = static_cast<size_t>((p - kVirtualBase) >> kSpanBits);
  const size_t o = static_cast<size_t>((p - kVirtualBase) & ((CUdeviceptr{1} << kSpanBits) - 1));
  if (b >= buffers_.size() || o > buffers_[b].bytes) return false;  // one past the end may be passed
  *buffer = b;
  *offset = o;
  return true;
}

CUdeviceptr Recorder::allocate(size_t bytes, const char* what) {
  if (bytes == 0) return 0;
  LATHE_CHECK(bytes < (size_t{1} << kSpanBits));
  buffers_.push_back({bytes, what ? what : ""});
  return kVirtualBase + (static_cast<CUdeviceptr>(buffers_.size() - 1) << kSpanBits);
}

void Recorder::write(CUdeviceptr dst, const void* src, size_t bytes, bool zero) {
  RecordedWrite w;
  if (!locate(dst, &w.buffer, &w.offset)) internal_fail("a write to an address the recording did not give");
  w.bytes = bytes;
  w.zero = zero;
  w.kept = !zero && bytes <= kKeptUpload;
  if (w.kept) w.data.assign(static_cast<const unsigned char*>(src), static_cast<const unsigned char*>(src) + bytes);
  writes_.push_back(std::move(w));
}

CUfunction Recorder::function(const std::string& name) {
  for (size_t i = 0; i < functions_.size(); ++i)
    if (functions_[i] == name) return reinterpret_cast<CUfunction>(static_cast<uintptr_t>(i + 1));
  functions_.push_back(name);
  return reinterpret_cast<CUfunction>(static_cast<uintptr_t>(functions_.size()));
}

void Recorder::launch(CUfunction f, Dim3 grid, Dim3 block, unsigned shared_bytes, const std::vector<void*>& args) {
  const uintptr_t handle = reinterpret_cast<uintptr_t>(f);
  if (handle == 0 || handle > functions_.size()) internal_fail("a launch of a kernel the recording did not name");
  RecordedOp op;
  op.kernel = functions_[handle - 1];
  const std::vector<size_t> sizes = param_sizes_(op.kernel);
  if (sizes.size() != args.size())
    internal_fail("{} takes {} parameters; the launch passed {}", op.kernel, sizes.size(), args.size());
  op.grid = grid;
  op.block = block;
  op.shared_bytes = shared_bytes;
  for (size_t i = 0; i < args.size(); ++i) {
    const auto* p = static_cast<const unsigned char*>(args[i]);
    op.args.emplace_back(p, p + sizes[i]);
  }
  ops_.push_back(std::move(op));
}

void Recorder::copy(CUdeviceptr dst, CUdeviceptr src, size_t bytes) {
  RecordedOp op;
  op.kind = RecordedOp::Kind::copy;
  op.dst = dst;
  op.src = src;
  op.bytes = bytes;
  ops_.push_back(std::move(op));
}

CapturedGraph::~CapturedGraph() {
  if (exec_) D().cuGraphExecDestroy(exec_);
  if (graph_) D().cuGraphDestroy(graph_);
}

void CapturedGraph::begin(const Stream& s) {
  check(D().cuStreamBeginCapture(s.handle(), CU_STREAM_CAPTURE_MODE_THREAD_LOCAL), "starting a graph capture");
}

void CapturedGraph::end(const Stream& s) {
  check(D().cuStreamEndCapture(s.handle(), &graph_), "ending a graph capture");
  check(D().cuGraphInstantiate(&exec_, graph_, 0), "instantiating the captured graph");
}

void CapturedGraph::replay(const Stream& s) const {
  LATHE_CHECK(exec_ != nullptr);
  check(D().cuGraphLaunch(exec_, s.handle()), "replaying the step's graph");
}

EventTimer::EventTimer() {
  Context::get();
  check(D().cuEventCreate(&a_, CU_EVENT_DEFAULT), "cuEventCreate");
  check(D().cuEventCreate(&b_, CU_EVENT_DEFAULT), "cuEventCreate");
}

EventTimer::~EventTimer() {
  if (a_) D().cuEventDestroy(a_);
  if (b_) D().cuEventDestroy(b_);
}

void EventTimer::start(const Stream& s) { check(D().cuEventRecord(a_, s.handle()), "cuEventRecord"); }

float EventTimer::stop(const Stream& s) {
  check(D().cuEventRecord(b_, s.handle()), "cuEventRecord");
  check(D().cuEventSynchronize(b_), "cuEventSynchronize");
  float ms = 0;
  check(D().cuEventElapsedTime(&ms, a_, b_), "cuEventElapsedTime");
  return ms;
}

}  // namespace lathe::cuda
