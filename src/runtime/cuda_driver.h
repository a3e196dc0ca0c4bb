// The CUDA driver API, wrapped: a context on the device, modules compiled from CUDA C++ source by
// NVRTC (cached on disk by digest, so a second run compiles nothing), device and pinned memory,
// streams, events, kernel launches and captured graphs. Every failure is a CudaError (a UserError)
// that says what was being done: no GPU, no driver, too little memory, a kernel that did not compile.
#pragma once

#include "base/error.h"

#include <cuda.h>

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

namespace lathe::cuda {

class CudaError : public UserError {
 public:
  using UserError::UserError;
};

// Throws CudaError("<what>: <CUDA's name for the error>: <its description>") unless r is success.
void check(CUresult r, const char* what);

// The earliest compute capability the kernel library compiles for (9.0: Hopper).
constexpr int kMinComputeMajor = 9;

// Whether a usable GPU is present: a driver, a device, of compute capability kMinComputeMajor.0 or
// later; `why` says what is missing when not. Never throws.
bool gpu_available(std::string* why = nullptr);
// Whether a driver and a device are present, usable or not (an earlier card than gpu_available takes).
bool gpu_present(std::string* why = nullptr);

struct DeviceInfo {
  std::string name;
  int cc_major = 0, cc_minor = 0;
  int sm_count = 0;
  size_t total_memory = 0, free_memory = 0;
  int l2_bytes = 0;
  int shared_optin_bytes = 0;  // the most dynamic shared memory a block may opt in to
  std::string arch() const { return "sm_" + std::to_string(cc_major * 10 + cc_minor); }
};

// The primary context of device 0, made current on the calling thread. Throws CudaError when there
// is no GPU or no driver.
class Context {
 public:
  static Context& get();  // while a Recorder is active: a virtual context with the recorder's device
  const DeviceInfo& info() const { return info_; }
  DeviceInfo refresh_memory();  // free memory now
  CUcontext handle() const { return ctx_; }
  void make_current() const;

 private:
  Context();
  explicit Context(const DeviceInfo& virtual_device);  // recording: no driver, no handle
  CUdevice device_ = 0;
  CUcontext ctx_ = nullptr;
  DeviceInfo info_;
};

// Device memory, freed on destruction.
class DeviceBuffer {
 public:
  DeviceBuffer() = default;
  explicit DeviceBuffer(size_t bytes, const char* what = "device buffer");
  DeviceBuffer(DeviceBuffer&& o) noexcept : ptr_(o.ptr_), bytes_(o.bytes_) { o.ptr_ = 0; o.bytes_ = 0; }
  DeviceBuffer& operator=(DeviceBuffer&& o) noexcept;
  ~DeviceBuffer();
  CUdeviceptr ptr() const { return ptr_; }
  size_t bytes() const { return bytes_; }
  void upload(const void* src, size_t bytes, size_t offset = 0);
  void download(void* dst, size_t bytes, size_t offset = 0) const;
  void zero();

 private:
  CUdeviceptr ptr_ = 0;
  size_t bytes_ = 0;
};

// Page-locked host memory the device can read over PCIe (for matrices that do not fit on the device).
class PinnedBuffer {
 public:
  PinnedBuffer() = default;
  explicit PinnedBuffer(size_t bytes);
  PinnedBuffer(PinnedBuffer&& o) noexcept : ptr_(o.ptr_), bytes_(o.bytes_) { o.ptr_ = nullptr; o.bytes_ = 0; }
  PinnedBuffer& operator=(PinnedBuffer&& o) noexcept;
  ~PinnedBuffer();
  void* data() const { return ptr_; }
  size_t bytes() const { return bytes_; }
  CUdeviceptr device_ptr() const;  // the same memory as the device addresses it

 private:
  void* ptr_ = nullptr;
  size_t bytes_ = 0;
};

class Stream {
 public:
  Stream();
  ~Stream();
  Stream(const Stream&) = delete;
  Stream& operator=(const Stream&) = delete;
  CUstream handle() const { return s_; }
  void synchronize() const;

 private:
  CUstream s_ = nullptr;
};

// A module compiled from CUDA C++ source for this device's architecture. Compiled once per
// (source, options, architecture) and cached in the kernel cache directory ($LATHE_CACHE_DIR, or
// ~/.cache/lathe/kernels): the cache key is the SHA-256 of all three.
class Module {
 public:
  static Module compile(const std::string& source, const std::string& name,
                        const std::vector<std::string>& options = {});
  // Compiles for `arch` ("sm_90") into the cache, where compile() on such a device finds it, without
  // a device (deploying: compile once, carry the cache). Returns the cache file; nothing is compiled
  // when it is already there. Only an NVRTC of the same version makes the same key.
  static std::string precompile(const std::string& source, const std::string& name, const std::string& arch,
                                const std::vector<std::string>& options = {});
  Module(Module&& o) noexcept : mod_(o.mod_), digest_(std::move(o.digest_)), from_cache_(o.from_cache_) { o.mod_ = nullptr; }
  ~Module();
  CUfunction function(const std::string& name) const;  // CudaError naming the kernel if absent
  CUdeviceptr global(const std::string& name, size_t* bytes = nullptr) const;  // a __device__ variable
  const std::string& digest() const { return digest_; }
  bool from_cache() const { return from_cache_; }

 private:
  Module() = default;
  CUmodule mod_ = nullptr;
  std::string digest_;
  bool from_cache_ = false;
};

// Compiles source to a cubin with NVRTC (no cache); throws CudaError with the compiler's log.
std::vector<char> nvrtc_compile(const std::string& source, const std::string& name,
                                const std::vector<std::string>& options, const std::string& arch);

struct Dim3 {
  unsigned x = 1, y = 1, z = 1;
};

// Whether launches from this thread may start before the previous kernel ends (programmatic
// dependent launch; every library kernel waits for its predecessor first). On by default; it pays
// for chains of small kernels (a decode step) and costs large ones (prefill): the engine sets it
// per step. LATHE_PDL=0 in the environment turns it off everywhere.
void set_programmatic_launch(bool on);

// Launches f; args are pointers to each parameter's value, as cuLaunchKernel takes them.
void launch(CUfunction f, Dim3 grid, Dim3 block, unsigned shared_bytes, CUstream stream,
            std::vector<void*> args, const char* what);

// A device-to-device copy ordered on the stream (recorded while a Recorder is active).
void copy_async(CUdeviceptr dst, CUdeviceptr src, size_t bytes, CUstream stream, const char* what);

// A cooperative launch (every block resident at once, or a CudaError saying the grid is too large):
// for kernels whose blocks wait for one another (kernels/step_persistent.cuh). Never programmatic.
void launch_cooperative(CUfunction f, Dim3 grid, Dim3 block, unsigned shared_bytes, CUstream stream,
                        std::vector<void*> args, const char* what);

// How many blocks of f (threads a block, shared_bytes of dynamic shared memory, opted in) one SM
// keeps resident at once.
int max_resident_blocks(CUfunction f, int threads, unsigned shared_bytes);

// Collecting a step's launches on a real device (runtime/persistent_step.cpp): while a collector is
// set on this thread, launch() and copy_async() append what they would do to it and do nothing;
// each launch keeps its parameters' bytes at the kernel's own offsets (the driver's parameter table)
// and its kernel's name, so it can be replayed or folded into another kernel's arguments.
struct CollectedOp {
  bool copy = false;
  CUfunction function = nullptr;
  std::string kernel;                  // the function's name
  Dim3 grid, block;
  unsigned shared_bytes = 0;
  std::vector<unsigned char> params;   // the parameter buffer, cuLaunchKernel's layout
  std::vector<size_t> offsets;         // each parameter's offset in it
  CUdeviceptr dst = 0, src = 0;        // copy
  size_t bytes = 0;
  std::string what;
};
struct LaunchCollector {
  std::vector<CollectedOp> ops;
};
void set_launch_collector(LaunchCollector* collector);  // null: launch again

// Replays a collected op on a stream (a launch as launch() makes it, programmatic where allowed).
void replay(const CollectedOp& op, CUstream stream);

// Recording (`lathe emit`): the lane plans a step with no GPU and no driver. While a Recorder is
// active, Context::get() is a virtual device (the recorder's DeviceInfo); DeviceBuffers get virtual
// addresses (buffer i at kVirtualBase + i * kVirtualSpan, so an address names its buffer and offset)
// and their uploads and zeroing are recorded, not done; kernels::kernel returns a handle standing for
// the kernel's name; launch() and copy_async() append to the recorded ops instead of running.
// One Recorder at a time, on the thread that plans; real buffers must not be made while it is active.
struct RecordedBuffer {
  size_t bytes = 0;
  std::string what;  // the allocation's label ("step arena", a tensor's name)
};
struct RecordedWrite {
  size_t buffer = 0, offset = 0, bytes = 0;
  bool zero = false;               // zeroed; else data holds the uploaded bytes
  bool kept = false;               // data kept (uploads larger than kKeptUpload are not)
  std::vector<unsigned char> data;
};
struct RecordedOp {
  enum class Kind { launch, copy } kind = Kind::launch;
  std::string kernel;
  Dim3 grid, block;
  unsigned shared_bytes = 0;
  std::vector<std::vector<unsigned char>> args;  // each parameter's bytes, as passed
  CUdeviceptr dst = 0, src = 0;                  // copy
  size_t bytes = 0;
};

class Recorder {
 public:
  static constexpr CUdeviceptr kVirtualBase = 1ull << 62;
  static constexpr int kSpanBits = 40;
  static constexpr size_t kKeptUpload = 1u << 20;
  // The byte size of each parameter of a kernel, by name (the emitter parses the library's text).
  using ParamSizes = std::function<std::vector<size_t>(const std::string& kernel)>;

  Recorder(const DeviceInfo& device, ParamSizes param_sizes);
  ~Recorder();
  Recorder(const Recorder&) = delete;
  Recorder& operator=(const Recorder&) = delete;

  const DeviceInfo& device() const { return device_; }
  const std::vector<RecordedBuffer>& buffers() const { return buffers_; }
  const std::vector<RecordedWrite>& writes() const { return writes_; }
  const std::vector<RecordedOp>& ops() const { return ops_; }
  void clear_ops() { ops_.clear(); }
  static bool is_virtual(CUdeviceptr p) { return p >= kVirtualBase; }
  // The buffer and offset a virtual address points into; false if it is not one of this recorder's.
  bool locate(CUdeviceptr p, size_t* buffer, size_t* offset) const;

  // Hooks of cuda_driver.cpp and kernels/library.cpp.
  CUdeviceptr allocate(size_t bytes, const char* what);
  void write(CUdeviceptr dst, const void* src, size_t bytes, bool zero);
  CUfunction function(const std::string& name);
  void launch(CUfunction f, Dim3 grid, Dim3 block, unsigned shared_bytes, const std::vector<void*>& args);
  void copy(CUdeviceptr dst, CUdeviceptr src, size_t bytes);

 private:
  DeviceInfo device_;
  ParamSizes param_sizes_;
  std::vector<RecordedBuffer> buffers_;
  std::vector<RecordedWrite> writes_;
  std::vector<RecordedOp> ops_;
  std::vector<std::string> functions_;  // handle i + 1 stands for functions_[i]
};

Recorder* recorder();  // the active one, or null

// A stream's launches captured once and replayed as one graph.
class CapturedGraph {
 public:
  CapturedGraph() = default;
  CapturedGraph(CapturedGraph&& o) noexcept : graph_(o.graph_), exec_(o.exec_) { o.graph_ = nullptr; o.exec_ = nullptr; }
  ~CapturedGraph();
  void begin(const Stream& s);
  void end(const Stream& s);
  void replay(const Stream& s) const;
  bool ready() const { return exec_ != nullptr; }

 private:
  CUgraph graph_ = nullptr;
  CUgraphExec exec_ = nullptr;
};

// Elapsed time between two points of a stream, in milliseconds.
// Where compiled kernels (and tuned tile choices) are kept: $LATHE_CACHE_DIR, else
// ~/.cache/lathe/kernels, else a temporary directory.
std::string cache_directory();

class EventTimer {
 public:
  EventTimer();
  ~EventTimer();
  void start(const Stream& s);
  float stop(const Stream& s);  // synchronizes

 private:
  CUevent a_ = nullptr, b_ = nullptr;
};

}  // namespace lathe::cuda
