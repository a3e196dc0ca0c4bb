// A GGUF metadata value: a scalar, a string, or an array of values (arrays may nest).
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace lathe {

enum class GgufValueType : uint32_t {
  UINT8 = 0, INT8 = 1, UINT16 = 2, INT16 = 3, UINT32 = 4, INT32 = 5, FLOAT32 = 6, BOOL = 7,
  STRING = 8, ARRAY = 9, UINT64 = 10, INT64 = 11, FLOAT64 = 12,
};

std::string_view gguf_value_type_name(GgufValueType type);
bool gguf_value_type_valid(uint32_t number);

struct GgufValue {
  GgufValueType type = GgufValueType::UINT32;
  // Scalars: integers in i (signed types) or u (unsigned and bool), floats in f.
  int64_t i = 0;
  uint64_t u = 0;
  double f = 0;
  std::string str;                  // STRING
  GgufValueType elem_type = GgufValueType::UINT8;  // ARRAY: the type of every element
  std::vector<GgufValue> items;     // ARRAY

  bool is_integer() const;
  bool is_float() const { return type == GgufValueType::FLOAT32 || type == GgufValueType::FLOAT64; }
  bool is_array() const { return type == GgufValueType::ARRAY; }

  static GgufValue of_u32(uint32_t v);
  static GgufValue of_i32(int32_t v);
  static GgufValue of_u64(uint64_t v);
  static GgufValue of_f32(float v);
  static GgufValue of_bool(bool v);
  static GgufValue of_string(std::string v);
  static GgufValue of_array(GgufValueType elem_type, std::vector<GgufValue> items);
  static GgufValue of_strings(const std::vector<std::string>& v);
  static GgufValue of_i32s(const std::vector<int32_t>& v);
  static GgufValue of_f32s(const std::vector<float>& v);

  std::string to_string(size_t max_items = 8) const;  // for inspect and messages
};

}  // namespace lathe
