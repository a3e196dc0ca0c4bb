// The parameters of every kernel of the library, read from its CUDA C++ text: what `lathe emit`
// needs to copy each launch argument's bytes (a recorded launch holds only pointers to them).
// Kernels are `extern "C" __global__ void [__launch_bounds__(...)] [__cluster_dims__(...)] NAME(PARAMS)`, written out or made
// by function-like macros (`LATHE_GEMV_CONTRACTS(q8_0)`): the reader expands function-like macros
// (parameters, `##` pasting, nested invocations) before it looks, and needs nothing else of the
// preprocessor. Parameters are pointers or scalars of known size; any other is refused by name.
#pragma once

#include <cstddef>
#include <map>
#include <string>
#include <string_view>
#include <vector>

namespace lathe::emit {

struct KernelParam {
  std::string type;  // as written, qualifiers and all: "const float* __restrict__"
  std::string name;
  size_t bytes = 0;
};

// Every kernel of `source`, by name. Throws InternalError naming the kernel and parameter whose
// type has no known size, or a kernel declared twice with different parameters.
std::map<std::string, std::vector<KernelParam>> kernel_params(std::string_view source);

// The byte size of a parameter type ("const int*": 8, "long long": 8, "float4": 16); 0 if unknown.
size_t param_type_bytes(std::string_view type);

}  // namespace lathe::emit
