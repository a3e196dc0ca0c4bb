#include "kernels/tensor_map.h"

#include "base/error.h"

#include <dlfcn.h>

#include <cstring>

namespace lathe::kernels {
namespace {

// cuTensorMapEncodeTiled from the driver library cuda_api already loaded (cuda_api's table has no
// entry for it; dlopen of the same soname returns that handle).
using EncodeTiled = CUresult (*)(CUtensorMap*, CUtensorMapDataType, cuuint32_t, void*, const cuuint64_t*,
                                 const cuuint64_t*, const cuuint32_t*, const cuuint32_t*, CUtensorMapInterleave,
                                 CUtensorMapSwizzle, CUtensorMapL2promotion, CUtensorMapFloatOOBfill);
EncodeTiled encode_tiled(std::string_view who) {
  static EncodeTiled f = [] {
    void* lib = dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL);
    return lib ? reinterpret_cast<EncodeTiled>(dlsym(lib, "cuTensorMapEncodeTiled")) : nullptr;
  }();
  if (!f) internal_fail("{}: the driver has no cuTensorMapEncodeTiled", who);
  return f;
}

// A recording's map: the tag, then TensorMapArgs.
constexpr uint64_t kRecordedMapTag = 0x50414d454854414cull;  // "LATHEMAP"
static_assert(sizeof(uint64_t) + sizeof(TensorMapArgs) <= sizeof(CUtensorMap));

}  // namespace

bool recorded_tensor_map(const void* bytes, size_t size, TensorMapArgs* out) {
  uint64_t tag = 0;
  if (size != sizeof(CUtensorMap)) return false;
  std::memcpy(&tag, bytes, sizeof tag);
  if (tag != kRecordedMapTag) return false;
  std::memcpy(out, static_cast<const unsigned char*>(bytes) + sizeof tag, sizeof *out);
  return true;
}

CUtensorMap tensor_map_2d(CUdeviceptr base, CUtensorMapDataType type, uint64_t inner, uint64_t outer, uint64_t stride,
                          uint32_t box_inner, uint32_t box_outer, bool swizzle_128b, std::string_view who,
                          CUtensorMapL2promotion promotion) {
  CUtensorMap m;
  std::memset(&m, 0, sizeof m);
  if (cuda::recorder()) {
    const TensorMapArgs args{base, inner, outer, stride, static_cast<uint32_t>(type), box_inner, box_outer,
                             swizzle_128b ? 1u : 0u, static_cast<uint32_t>(promotion)};
    std::memcpy(&m, &kRecordedMapTag, sizeof kRecordedMapTag);
    std::memcpy(reinterpret_cast<unsigned char*>(&m) + sizeof kRecordedMapTag, &args, sizeof args);
    return m;
  }
  const cuuint64_t dims[2] = {inner, outer}, strides[1] = {stride};
  const cuuint32_t box[2] = {box_inner, box_outer}, unit[2] = {1, 1};
  const CUresult r = encode_tiled(who)(&m, type, 2, reinterpret_cast<void*>(base), dims, strides, box, unit,
                                       CU_TENSOR_MAP_INTERLEAVE_NONE,
                                       swizzle_128b ? CU_TENSOR_MAP_SWIZZLE_128B : CU_TENSOR_MAP_SWIZZLE_NONE,
                                       promotion, CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE);
  if (r != CUDA_SUCCESS)
    internal_fail("{}: cuTensorMapEncodeTiled failed ({}) for {} x {} box {} x {}", who, static_cast<int>(r), inner,
                  outer, box_inner, box_outer);
  return m;
}

}  // namespace lathe::kernels
