// The tensor element types of GGUF (ggml's numbering, which the file format stores).
#pragma once

#include <cstdint>
#include <optional>
#include <string_view>

namespace lathe {

enum class GgmlType : uint32_t {
  F32 = 0,
  F16 = 1,
  Q4_0 = 2,
  Q4_1 = 3,
  Q5_0 = 6,
  Q5_1 = 7,
  Q8_0 = 8,
  Q8_1 = 9,
  Q2_K = 10,
  Q3_K = 11,
  Q4_K = 12,
  Q5_K = 13,
  Q6_K = 14,
  Q8_K = 15,
  BF16 = 30,
};

// The types Lathe reads. Any other number in a file is refused by name.
std::optional<GgmlType> ggml_type_from_number(uint32_t number);
std::string_view ggml_type_name(GgmlType type);
// The name of ggml's type `number`, read by Lathe or not ("iq4_xs"); "" for a number ggml has none for.
std::string_view ggml_type_number_name(uint32_t number);
std::optional<GgmlType> ggml_type_from_name(std::string_view name);  // "q8_0", "Q4_K", "bf16", ...

}  // namespace lathe
