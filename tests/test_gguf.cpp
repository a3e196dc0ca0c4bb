// The GGUF reader and writer: round trips of every value type, a file from PyPI's gguf writer, and
// the corpus of malformed files, each refused with its own message.
#include "gguf/block_format.h"
#include "gguf/gguf_file.h"
#include "gguf/gguf_writer.h"

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <filesystem>
#include <fstream>

namespace lathe {
namespace {

std::string data_path(const std::string& rel) { return std::string(LATHE_TEST_DATA) + "/" + rel; }

std::vector<uint8_t> f32_bytes(const std::vector<float>& v) {
  std::vector<uint8_t> out(v.size() * 4);
  std::memcpy(out.data(), v.data(), out.size());
  return out;
}

TEST(GgufWriter, RoundTripsEveryValueType) {
  GgufWriter w;
  GgufValue u8;
  u8.type = GgufValueType::UINT8;
  u8.u = 250;
  GgufValue i16;
  i16.type = GgufValueType::INT16;
  i16.i = -1234;
  GgufValue f64;
  f64.type = GgufValueType::FLOAT64;
  f64.f = 1.0 / 3.0;
  w.set("a.u8", u8);
  w.set("a.i16", i16);
  w.set("a.u32", GgufValue::of_u32(4000000000u));
  w.set("a.i32", GgufValue::of_i32(-7));
  w.set("a.u64", GgufValue::of_u64(1ull << 50));
  w.set("a.f32", GgufValue::of_f32(0.5f));
  w.set("a.f64", f64);
  w.set("a.bool", GgufValue::of_bool(true));
  w.set("a.str", GgufValue::of_string("héllo"));
  w.set("a.strs", GgufValue::of_strings({"x", "", "日本"}));
  w.set("a.nested", GgufValue::of_array(GgufValueType::ARRAY,
                                        {GgufValue::of_i32s({1, 2}), GgufValue::of_i32s({})}));
  w.add_tensor("t.f32", {32, 2}, GgmlType::F32, f32_bytes(std::vector<float>(64, 1.5f)));
  w.add_tensor("t.q8", {64}, GgmlType::Q8_0, [](uint8_t* dst, int64_t r0, int64_t r1) {
    std::vector<float> row(64);
    for (int k = 0; k < 64; ++k) row[k] = static_cast<float>(k) - 32.0f;
    quantize_row(GgmlType::Q8_0, row.data(), dst, 64);
  });
  const std::vector<uint8_t> bytes = w.to_bytes();
  const GgufFile f = GgufFile::from_bytes(bytes);
  EXPECT_EQ(f.version(), 3u);
  EXPECT_EQ(f.get_uint("a.u8"), 250u);
  EXPECT_EQ(f.get_int("a.i16"), -1234);
  EXPECT_EQ(f.get_uint("a.u32"), 4000000000u);
  EXPECT_EQ(f.get_int("a.i32"), -7);
  EXPECT_EQ(f.get_uint("a.u64"), 1ull << 50);
  EXPECT_EQ(f.get_float("a.f32"), 0.5);
  EXPECT_EQ(f.get_float("a.f64"), 1.0 / 3.0);
  EXPECT_TRUE(f.get_bool("a.bool"));
  EXPECT_EQ(f.get_string("a.str"), "héllo");
  const GgufValue& strs = f.get_array("a.strs");
  ASSERT_EQ(strs.items.size(), 3u);
  EXPECT_EQ(strs.items[2].str, "日本");
  const GgufValue& nested = f.get_array("a.nested");
  ASSERT_EQ(nested.items.size(), 2u);
  EXPECT_EQ(nested.items[0].items[1].i, 2);
  EXPECT_TRUE(nested.items[1].items.empty());
  ASSERT_EQ(f.tensors().size(), 2u);
  const GgufTensor& t = f.tensor("t.f32");
  EXPECT_EQ(t.dims, (std::vector<int64_t>{32, 2}));
  EXPECT_EQ(t.n_rows(), 2);
  float v;
  std::memcpy(&v, t.data + 4 * 63, 4);
  EXPECT_EQ(v, 1.5f);
  const GgufTensor& q = f.tensor("t.q8");
  EXPECT_EQ(q.offset % 32, 0u);
  std::vector<float> back(64);
  dequantize_row(GgmlType::Q8_0, q.data, back.data(), 64);
  EXPECT_NEAR(back[0], -32.0f, 0.2f);
  EXPECT_NEAR(back[63], 31.0f, 0.2f);
}

TEST(GgufWriter, HonoursAlignment) {
  GgufWriter w(64);
  w.add_tensor("a", {8}, GgmlType::F32, f32_bytes(std::vector<float>(8, 1)));
  w.add_tensor("b", {8}, GgmlType::F32, f32_bytes(std::vector<float>(8, 2)));
  const std::vector<uint8_t> bytes = w.to_bytes();
  const GgufFile f = GgufFile::from_bytes(bytes);
  EXPECT_EQ(f.alignment(), 64u);
  EXPECT_EQ(f.data_offset() % 64, 0u);
  EXPECT_EQ(f.tensor("b").offset, 64u);
}

TEST(GgufWriter, WritesFilesThatOpen) {
  const std::string path = testing::TempDir() + "/writer.gguf";
  GgufWriter w;
  w.set("general.architecture", GgufValue::of_string("llama"));
  w.add_tensor("rows", {32, 100}, GgmlType::F16, [](uint8_t* dst, int64_t r0, int64_t r1) {
    for (int64_t r = r0; r < r1; ++r) {
      std::vector<float> row(32, static_cast<float>(r));
      quantize_row(GgmlType::F16, row.data(), dst + (r - r0) * 64, 32);
    }
  });
  w.write(path, 3);
  const GgufFile f = GgufFile::open(path);
  const GgufTensor& t = f.tensor("rows");
  std::vector<float> row(32);
  for (int64_t r : {0, 33, 99}) {
    dequantize_row(GgmlType::F16, t.data + r * 64, row.data(), 32);
    EXPECT_EQ(row[5], static_cast<float>(r));
  }
}

TEST(GgufReader, ReadsPyPIGgufWriterOutput) {
  const GgufFile f = GgufFile::open(data_path("gguf/pygguf_qwen3.gguf"));
  EXPECT_EQ(f.get_string("general.architecture"), "qwen3");
  EXPECT_EQ(f.get_uint("test.u8"), 200u);
  EXPECT_EQ(f.get_int("test.i8"), -100);
  EXPECT_EQ(f.get_uint("test.u16"), 60000u);
  EXPECT_EQ(f.get_int("test.i16"), -30000);
  EXPECT_EQ(f.get_uint("test.u32"), 4000000000u);
  EXPECT_EQ(f.get_int("test.i32"), -2000000000);
  EXPECT_EQ(f.get_float("test.f32"), 0.25);
  EXPECT_EQ(f.get_uint("test.u64"), 1ull << 40);
  EXPECT_EQ(f.get_int("test.i64"), -(1ll << 40));
  EXPECT_DOUBLE_EQ(f.get_float("test.f64"), 1.0 / 3.0);
  EXPECT_TRUE(f.get_bool("test.bool"));
  EXPECT_EQ(f.get_string("test.string"), "héllo, wörld");
  EXPECT_EQ(f.get_array("test.strings").items.at(3).str, "日本");
  const GgufValue& nested = f.get_array("test.nested");
  ASSERT_EQ(nested.items.size(), 2u);
  EXPECT_EQ(nested.items[0].items.size(), 2u);
  EXPECT_EQ(f.get_array("tokenizer.ggml.tokens").items.size(), 512u);
  const GgufTensor& embd = f.tensor("token_embd.weight");
  EXPECT_EQ(embd.type, GgmlType::Q8_0);
  EXPECT_EQ(embd.dims, (std::vector<int64_t>{64, 512}));
  const GgufTensor& norm = f.tensor("output_norm.weight");
  float v;
  std::memcpy(&v, norm.data + 4 * 10, 4);
  EXPECT_EQ(v, 0.5f);
}

TEST(GgufReader, TypedGettersNameTheKey) {
  const GgufFile f = GgufFile::open(data_path("gguf/pygguf_qwen3.gguf"));
  EXPECT_THROW(
      {
        try {
          f.get_string("test.u32");
        } catch (const GgufError& e) {
          EXPECT_NE(std::string(e.what()).find("'test.u32'"), std::string::npos) << e.what();
          throw;
        }
      },
      GgufError);
  EXPECT_THROW(f.get_uint("no.such.key"), GgufError);
  EXPECT_THROW(f.get_uint("test.i8"), GgufError);  // negative
  EXPECT_THROW(f.tensor("no.such.tensor"), GgufError);
}

TEST(GgufReader, RefusesEveryMalformedFileWithItsOwnMessage) {
  const std::string dir = data_path("gguf_bad");
  std::ifstream in(dir + "/manifest.json");
  ASSERT_TRUE(in.good());
  const nlohmann::json manifest = nlohmann::json::parse(in);
  ASSERT_GE(manifest.size(), 20u);
  std::set<std::string> messages;
  for (const auto& [name, words] : manifest.items()) {
    SCOPED_TRACE(name);
    try {
      GgufFile::open(dir + "/" + name);
      ADD_FAILURE() << name << " was accepted";
    } catch (const GgufError& e) {
      const std::string msg = e.what();
      EXPECT_NE(msg.find(words.get<std::string>()), std::string::npos) << msg;
      EXPECT_NE(msg.find(name), std::string::npos) << "message does not name the file: " << msg;
      messages.insert(msg);
    }
  }
  EXPECT_EQ(messages.size(), manifest.size()) << "two files gave the same message";
}

TEST(GgufReader, EveryTruncationOfAGoodFileIsRefused) {
  const std::vector<uint8_t> good = [] {
    std::ifstream in(data_path("gguf/pygguf_qwen3.gguf"), std::ios::binary);
    return std::vector<uint8_t>(std::istreambuf_iterator<char>(in), {});
  }();
  ASSERT_GT(good.size(), 1000u);
  for (size_t n = 0; n < good.size(); n += (n < 2048 ? 1 : 997)) {
    std::vector<uint8_t> cut(good.begin(), good.begin() + static_cast<long>(n));
    EXPECT_THROW(GgufFile::from_bytes(cut), GgufError) << "length " << n;
  }
  EXPECT_NO_THROW(GgufFile::from_bytes(good));
}

TEST(GgufReader, RefusesMissingFile) {
  EXPECT_THROW(GgufFile::open("/no/such/file.gguf"), GgufError);
}

}  // namespace
}  // namespace lathe
