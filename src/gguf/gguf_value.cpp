#include "gguf/gguf_value.h"

#include <fmt/format.h>

namespace lathe {

std::string_view gguf_value_type_name(GgufValueType type) {
  switch (type) {
    case GgufValueType::UINT8: return "uint8";
    case GgufValueType::INT8: return "int8";
    case GgufValueType::UINT16: return "uint16";
    case GgufValueType::INT16: return "int16";
    case GgufValueType::UINT32: return "uint32";
    case GgufValueType::INT32: return "int32";
    case GgufValueType::FLOAT32: return "float32";
    case GgufValueType::BOOL: return "bool";
    case GgufValueType::STRING: return "string";
    case GgufValueType::ARRAY: return "array";
    case GgufValueType::UINT64: return "uint64";
    case GgufValueType::INT64: return "int64";
    case GgufValueType::FLOAT64: return "float64";
  }
  return "unknown";
}

bool gguf_value_type_valid(uint32_t number) { return number <= 12; }

bool GgufValue::is_integer() const {
  switch (type) {
    case GgufValueType::UINT8: case GgufValueType::INT8: case GgufValueType::UINT16:
    case GgufValueType::INT16: case GgufValueType::UINT32: case GgufValueType::INT32:
    case GgufValueType::UINT64: case GgufValueType::INT64:
      return true;
    default:
      return false;
  }
}

GgufValue GgufValue::of_u32(uint32_t v) {
  GgufValue out;
  out.type = GgufValueType::UINT32;
  out.u = v;
  out.i = v;
  return out;
}

GgufValue GgufValue::of_i32(int32_t v) {
  GgufValue out;
  out.type = GgufValueType::INT32;
  out.i = v;
  out.u = static_cast<uint64_t>(v);
  return out;
}

GgufValue GgufValue::of_u64(uint64_t v) {
  GgufValue out;
  out.type = GgufValueType::UINT64;
  out.u = v;
  out.i = static_cast<int64_t>(v);
  return out;
}

GgufValue GgufValue::of_f32(float v) {
  GgufValue out;
  out.type = GgufValueType::FLOAT32;
  out.f = v;
  return out;
}

GgufValue GgufValue::of_bool(bool v) {
  GgufValue out;
  out.type = GgufValueType::BOOL;
  out.u = v ? 1 : 0;
  out.i = out.u;
  return out;
}

GgufValue GgufValue::of_string(std::string v) {
  GgufValue out;
  out.type = GgufValueType::STRING;
  out.str = std::move(v);
  return out;
}

GgufValue GgufValue::of_array(GgufValueType elem_type, std::vector<GgufValue> items) {
  GgufValue out;
  out.type = GgufValueType::ARRAY;
  out.elem_type = elem_type;
  out.items = std::move(items);
  return out;
}

GgufValue GgufValue::of_strings(const std::vector<std::string>& v) {
  std::vector<GgufValue> items;
  items.reserve(v.size());
  for (const std::string& s : v) items.push_back(of_string(s));
  return of_array(GgufValueType::STRING, std::move(items));
}

GgufValue GgufValue::of_i32s(const std::vector<int32_t>& v) {
  std::vector<GgufValue> items;
  items.reserve(v.size());
  for (int32_t x : v) items.push_back(of_i32(x));
  return of_array(GgufValueType::INT32, std::move(items));
}

GgufValue GgufValue::of_f32s(const std::vector<float>& v) {
  std::vector<GgufValue> items;
  items.reserve(v.size());
  for (float x : v) items.push_back(of_f32(x));
  return of_array(GgufValueType::FLOAT32, std::move(items));
}

std::string GgufValue::to_string(size_t max_items) const {
  switch (type) {
    case GgufValueType::STRING: {
      std::string s = str.size() > 60 ? str.substr(0, 57) + "..." : str;
      return fmt::format("\"{}\"", s);
    }
    case GgufValueType::BOOL: return u ? "true" : "false";
    case GgufValueType::FLOAT32: case GgufValueType::FLOAT64: return fmt::format("{}", f);
    case GgufValueType::UINT8: case GgufValueType::UINT16: case GgufValueType::UINT32:
    case GgufValueType::UINT64: return fmt::format("{}", u);
    case GgufValueType::INT8: case GgufValueType::INT16: case GgufValueType::INT32:
    case GgufValueType::INT64: return fmt::format("{}", i);
    case GgufValueType::ARRAY: {
      std::string s = fmt::format("[{} x {}: ", items.size(), gguf_value_type_name(elem_type));
      for (size_t k = 0; k < items.size() && k < max_items; ++k) {
        if (k) s += ", ";
        s += items[k].to_string(max_items);
      }
      if (items.size() > max_items) s += ", ...";
      return s + "]";
    }
  }
  return "?";
}

}  // namespace lathe
