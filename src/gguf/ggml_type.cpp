#include "gguf/ggml_type.h"

#include <array>
#include <cctype>
#include <string>
#include <utility>

namespace lathe {
namespace {

struct TypeName {
  GgmlType type;
  std::string_view name;
};

constexpr std::array<TypeName, 15> kTypeNames{{
    {GgmlType::F32, "f32"},   {GgmlType::F16, "f16"},   {GgmlType::Q4_0, "q4_0"},
    {GgmlType::Q4_1, "q4_1"}, {GgmlType::Q5_0, "q5_0"}, {GgmlType::Q5_1, "q5_1"},
    {GgmlType::Q8_0, "q8_0"}, {GgmlType::Q8_1, "q8_1"}, {GgmlType::Q2_K, "q2_K"},
    {GgmlType::Q3_K, "q3_K"}, {GgmlType::Q4_K, "q4_K"}, {GgmlType::Q5_K, "q5_K"},
    {GgmlType::Q6_K, "q6_K"}, {GgmlType::Q8_K, "q8_K"}, {GgmlType::BF16, "bf16"},
}};

std::string lower(std::string_view s) {
  std::string out(s);
  for (char& c : out) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return out;
}

}  // namespace

std::optional<GgmlType> ggml_type_from_number(uint32_t number) {
  for (const TypeName& t : kTypeNames)
    if (static_cast<uint32_t>(t.type) == number) return t.type;
  return std::nullopt;
}

std::string_view ggml_type_name(GgmlType type) {
  for (const TypeName& t : kTypeNames)
    if (t.type == type) return t.name;
  return "unknown";
}

std::string_view ggml_type_number_name(uint32_t number) {
  if (const std::optional<GgmlType> t = ggml_type_from_number(number)) return ggml_type_name(*t);
  // ggml's types Lathe does not read (ggml.h's enum; the PyPI gguf package's GGMLQuantizationType).
  static constexpr std::array<std::pair<uint32_t, std::string_view>, 19> kUnread{{
      {16, "iq2_xxs"}, {17, "iq2_xs"}, {18, "iq3_xxs"}, {19, "iq1_s"}, {20, "iq4_nl"}, {21, "iq3_s"},
      {22, "iq2_s"},   {23, "iq4_xs"}, {24, "i8"},      {25, "i16"},   {26, "i32"},    {27, "i64"},
      {28, "f64"},     {29, "iq1_m"},  {34, "tq1_0"},   {35, "tq2_0"}, {39, "mxfp4"},  {40, "nvfp4"},
      {41, "q1_0"},
  }};
  for (const auto& [n, name] : kUnread)
    if (n == number) return name;
  return "";
}

std::optional<GgmlType> ggml_type_from_name(std::string_view name) {
  const std::string wanted = lower(name);
  for (const TypeName& t : kTypeNames)
    if (lower(t.name) == wanted) return t.type;
  return std::nullopt;
}

}  // namespace lathe
