// Block formats against their peers (fixtures written by scripts/make_block_fixtures.py from PyPI's
// gguf.quants and ggml itself through ggml-python), the descriptor table, and row sizes.
// Round trips and the half-precision conversions are in test_block_numerics.cpp.
#include "base/error.h"
#include "gguf/block_format.h"

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <cstring>
#include <fstream>
#include <iterator>
#include <set>
#include <string>
#include <vector>

namespace lathe {
namespace {

constexpr GgmlType kAllTypes[] = {GgmlType::F32,  GgmlType::F16,  GgmlType::BF16, GgmlType::Q4_0, GgmlType::Q4_1,
                                  GgmlType::Q5_0, GgmlType::Q5_1, GgmlType::Q8_0, GgmlType::Q8_1, GgmlType::Q2_K,
                                  GgmlType::Q3_K, GgmlType::Q4_K, GgmlType::Q5_K, GgmlType::Q6_K, GgmlType::Q8_K};

std::string fixture_dir() { return std::string(LATHE_TEST_DATA) + "/blocks/"; }

// One section of a fixture file (format in make_block_fixtures.py's docstring).
struct Section {
  std::vector<float> input;        // empty: the blocks are random, not a quantization
  std::vector<uint8_t> blocks;
  std::vector<float> dequantized;  // empty: no peer dequantizes this format
  int64_t n_values = 0;
};

struct Fixture {
  uint32_t type = 0;
  std::vector<Section> sections;
};

class Reader {
 public:
  explicit Reader(std::vector<char> data) : data_(std::move(data)) {}
  void read(void* dst, size_t n) {
    if (pos_ + n > data_.size()) throw std::runtime_error("fixture file is truncated");
    std::memcpy(dst, data_.data() + pos_, n);
    pos_ += n;
  }
  uint32_t u32() {
    uint32_t v;
    read(&v, 4);
    return v;
  }
  bool at_end() const { return pos_ == data_.size(); }

 private:
  std::vector<char> data_;
  size_t pos_ = 0;
};

Fixture load_fixture(const std::string& name) {
  std::ifstream in(fixture_dir() + name + ".bin", std::ios::binary);
  if (!in) throw std::runtime_error("missing fixture " + name + ".bin: run scripts/make_block_fixtures.py");
  Reader r(std::vector<char>(std::istreambuf_iterator<char>(in), {}));
  char magic[8];
  r.read(magic, 8);
  if (std::memcmp(magic, "LATHEBLK", 8) != 0 || r.u32() != 1) throw std::runtime_error("bad fixture header");
  Fixture f;
  f.type = r.u32();
  const uint32_t n_sections = r.u32();
  for (uint32_t i = 0; i < n_sections; ++i) {
    Section s;
    const uint32_t flags = r.u32();
    s.n_values = r.u32();
    const uint32_t n_bytes = r.u32();
    if (flags & 1) {
      s.input.resize(s.n_values);
      r.read(s.input.data(), 4 * s.input.size());
    }
    s.blocks.resize(n_bytes);
    r.read(s.blocks.data(), n_bytes);
    if (flags & 2) {
      s.dequantized.resize(s.n_values);
      r.read(s.dequantized.data(), 4 * s.dequantized.size());
    }
    f.sections.push_back(std::move(s));
  }
  if (!r.at_end()) throw std::runtime_error("trailing bytes in fixture " + name);
  return f;
}

nlohmann::json fixture_index() {
  std::ifstream in(fixture_dir() + "index.json");
  return nlohmann::json::parse(in);
}

uint32_t bits(float f) {
  uint32_t u;
  std::memcpy(&u, &f, 4);
  return u;
}

// (1) Our dequantization of a peer's bytes equals the peer's floats bit for bit, every format a peer
// dequantizes (all but q8_1 and q8_K, which ggml itself never dequantizes; see HandMadeBlocks).
TEST(BlockFixtures, DequantizationEqualsPeerBitwise) {
  int n_checked_formats = 0;
  for (GgmlType type : kAllTypes) {
    const BlockFormat& f = block_format(type);
    SCOPED_TRACE(std::string(f.name));
    const Fixture fx = load_fixture(std::string(f.name));
    ASSERT_EQ(fx.type, static_cast<uint32_t>(type));
    bool checked = false;
    for (const Section& s : fx.sections) {
      if (s.dequantized.empty()) continue;
      ASSERT_EQ(static_cast<int64_t>(s.blocks.size()), row_bytes(type, s.n_values));
      std::vector<float> ours(s.n_values);
      dequantize_row(type, s.blocks.data(), ours.data(), s.n_values);
      int64_t n_diff = 0, first = -1;
      for (int64_t i = 0; i < s.n_values; ++i) {
        if (bits(ours[i]) != bits(s.dequantized[i])) {
          if (first < 0) first = i;
          ++n_diff;
        }
      }
      EXPECT_EQ(n_diff, 0) << "first at value " << first << " (block " << first / f.block_size << "): ours "
                           << (first >= 0 ? ours[first] : 0) << ", peer " << (first >= 0 ? s.dequantized[first] : 0);
      checked = true;
    }
    if (type != GgmlType::Q8_1 && type != GgmlType::Q8_K) {
      EXPECT_TRUE(checked) << "no peer dequantization in the fixture";
      n_checked_formats += checked;
    }
  }
  EXPECT_EQ(n_checked_formats, 13);
}

// (2) Our quantization of the inputs equals the peer's bytes exactly. There is no case where the
// spec'd reference legitimately differs: gguf.quants ports ggml's reference quantizers operation
// for operation (the fixture script checks that ggml and gguf agree on every format both
// quantize), and the K formats are compared with ggml's own quantize_row_*_ref. So no tolerance.
TEST(BlockFixtures, QuantizationEqualsPeerBytes) {
  const bool with_ggml = !fixture_index()["ggml-python"].is_null();
  std::vector<std::string> missing;
  for (GgmlType type : kAllTypes) {
    const BlockFormat& f = block_format(type);
    SCOPED_TRACE(std::string(f.name));
    const Fixture fx = load_fixture(std::string(f.name));
    int n_sections = 0;
    for (const Section& s : fx.sections) {
      if (s.input.empty()) continue;
      std::vector<uint8_t> ours(row_bytes(type, s.n_values));
      quantize_row(type, s.input.data(), ours.data(), s.n_values);
      int64_t first = -1, n_diff_blocks = 0;
      for (size_t b = 0; b < ours.size(); b += f.block_bytes) {
        if (std::memcmp(ours.data() + b, s.blocks.data() + b, f.block_bytes) != 0) {
          if (first < 0) first = static_cast<int64_t>(b / f.block_bytes);
          ++n_diff_blocks;
        }
      }
      EXPECT_EQ(n_diff_blocks, 0) << "first differing block " << first << " of " << ours.size() / f.block_bytes;
      ++n_sections;
    }
    if (n_sections == 0) missing.emplace_back(f.name);
  }
  if (with_ggml) {
    EXPECT_TRUE(missing.empty()) << "formats without a peer quantization: " << missing.size();
  } else if (!missing.empty()) {
    GTEST_SKIP() << "fixtures were made without ggml-python: the K formats' and q8_1's quantizers went unchecked";
  }
}

// Q8_1 and Q8_K have no peer dequantizer (ggml has none), so their meaning is checked by hand.
TEST(BlockFixtures, HandMadeBlocks) {
  std::vector<uint8_t> q8_k(292, 0);
  const float d = -0.375f;
  std::memcpy(q8_k.data(), &d, 4);
  for (int j = 0; j < 256; ++j) q8_k[4 + j] = static_cast<uint8_t>(j);
  std::vector<float> out(256);
  dequantize_row(GgmlType::Q8_K, q8_k.data(), out.data(), 256);
  for (int j = 0; j < 256; ++j) EXPECT_EQ(out[j], d * static_cast<float>(static_cast<int8_t>(j))) << j;

  std::vector<uint8_t> q8_1(36, 0);
  const uint16_t d16 = f32_to_f16(0.125f), s16 = f32_to_f16(1000.0f);
  std::memcpy(q8_1.data(), &d16, 2);
  std::memcpy(q8_1.data() + 2, &s16, 2);  // s plays no part in the values
  for (int j = 0; j < 32; ++j) q8_1[4 + j] = static_cast<uint8_t>(j * 8 - 128);
  dequantize_row(GgmlType::Q8_1, q8_1.data(), out.data(), 32);
  for (int j = 0; j < 32; ++j) EXPECT_EQ(out[j], 0.125f * static_cast<float>(j * 8 - 128)) << j;
}

size_t layout_type_bytes(const std::string& t) {
  if (t == "f32") return 4;
  if (t == "f16" || t == "bf16" || t == "int16") return 2;
  if (t == "int8" || t == "uint8") return 1;
  ADD_FAILURE() << "unknown field type " << t;
  return 0;
}

// The layout strings are what the GPU lane reads: fields "name:type[count]" in byte order whose
// sizes add up to the block.
TEST(BlockFormatTable, LayoutsAddUpToTheBlock) {
  for (GgmlType type : kAllTypes) {
    const BlockFormat& f = block_format(type);
    SCOPED_TRACE(std::string(f.name));
    EXPECT_EQ(f.type, type);
    EXPECT_EQ(f.name, ggml_type_name(type));
    std::string layout(f.layout);
    size_t total = 0, start = 0;
    std::set<std::string> names;
    while (start <= layout.size()) {
      size_t end = layout.find(", ", start);
      if (end == std::string::npos) end = layout.size();
      const std::string field = layout.substr(start, end - start);
      const size_t colon = field.find(':');
      ASSERT_NE(colon, std::string::npos) << field;
      EXPECT_TRUE(names.insert(field.substr(0, colon)).second) << "repeated field " << field;
      std::string t = field.substr(colon + 1);
      size_t count = 1;
      if (const size_t br = t.find('['); br != std::string::npos) {
        ASSERT_EQ(t.back(), ']') << field;
        count = std::stoul(t.substr(br + 1, t.size() - br - 2));
        t = t.substr(0, br);
      }
      total += count * layout_type_bytes(t);
      start = end + 2;
    }
    EXPECT_EQ(static_cast<int64_t>(total), f.block_bytes) << f.layout;
    EXPECT_EQ(f.quantized, f.block_size > 1);
  }
}

TEST(BlockFormatTable, SizesAreGgmls) {
  struct Want {
    GgmlType type;
    int64_t block_size, block_bytes;
  };
  const Want wants[] = {{GgmlType::F32, 1, 4},     {GgmlType::F16, 1, 2},     {GgmlType::BF16, 1, 2},
                        {GgmlType::Q4_0, 32, 18},  {GgmlType::Q4_1, 32, 20},  {GgmlType::Q5_0, 32, 22},
                        {GgmlType::Q5_1, 32, 24},  {GgmlType::Q8_0, 32, 34},  {GgmlType::Q8_1, 32, 36},
                        {GgmlType::Q2_K, 256, 84}, {GgmlType::Q3_K, 256, 110}, {GgmlType::Q4_K, 256, 144},
                        {GgmlType::Q5_K, 256, 176}, {GgmlType::Q6_K, 256, 210}, {GgmlType::Q8_K, 256, 292}};
  for (const Want& w : wants) {
    EXPECT_EQ(block_format(w.type).block_size, w.block_size) << ggml_type_name(w.type);
    EXPECT_EQ(block_format(w.type).block_bytes, w.block_bytes) << ggml_type_name(w.type);
    EXPECT_EQ(row_bytes(w.type, 4096), 4096 / w.block_size * w.block_bytes);
  }
  EXPECT_EQ(row_bytes(GgmlType::F32, 7), 28);
  EXPECT_EQ(row_bytes(GgmlType::Q6_K, 0), 0);
}

void expect_refusal(GgmlType type, int64_t n) {
  try {
    row_bytes(type, n);
    ADD_FAILURE() << "row_bytes(" << ggml_type_name(type) << ", " << n << ") did not throw";
  } catch (const UserError& e) {
    const std::string msg = e.what();
    EXPECT_NE(msg.find(std::string(ggml_type_name(type))), std::string::npos) << msg;
    EXPECT_NE(msg.find(std::to_string(n)), std::string::npos) << msg;
  }
}

// (5) Rows that are not whole blocks are the user's error, named with the type and the count.
TEST(BlockFormatTable, RowBytesRefusesPartialBlocks) {
  expect_refusal(GgmlType::Q4_K, 100);
  expect_refusal(GgmlType::Q4_K, 257);
  expect_refusal(GgmlType::Q8_0, 33);
  expect_refusal(GgmlType::Q4_0, 31);
  expect_refusal(GgmlType::Q6_K, 4095);
  expect_refusal(GgmlType::Q5_1, -32);
  std::vector<float> x(300, 1.0f);
  std::vector<uint8_t> y(1024);
  EXPECT_THROW(dequantize_row(GgmlType::Q4_0, y.data(), x.data(), 31), UserError);
  EXPECT_THROW(quantize_row(GgmlType::Q3_K, x.data(), y.data(), 300), UserError);
  EXPECT_THROW(quantize_row(GgmlType::Q8_0, x.data(), y.data(), 48), UserError);
}

TEST(BlockFormatTable, EveryQuantizableTypeQuantizes) {
  std::vector<float> x(512);
  for (size_t i = 0; i < x.size(); ++i) x[i] = static_cast<float>(i % 17) - 8.0f;
  for (GgmlType type : kAllTypes) {
    const BlockFormat& f = block_format(type);
    std::vector<uint8_t> y(row_bytes(type, 512));
    if (f.can_quantize)
      EXPECT_NO_THROW(quantize_row(type, x.data(), y.data(), 512)) << f.name;
    else
      EXPECT_THROW(quantize_row(type, x.data(), y.data(), 512), UserError) << f.name;
  }
}

}  // namespace
}  // namespace lathe
