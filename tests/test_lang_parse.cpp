// The parser and the canonical printer: round trips, the fixed layout, cuts and identity.
#include "lang/diagnostic.h"
#include "lang/op_table.h"
#include "lang/program.h"

#include <gtest/gtest.h>

#include <string>

using namespace lathe::lang;

namespace {

std::string models_dir() { return std::string(LATHE_SOURCE_DIR) + "/models/"; }

TEST(LangParse, Qwen3RoundTrips) {
  Program p = parse_program_file(models_dir() + "qwen3.lathe");
  std::string text = print_canonical(p);
  Program again = parse_program(text, "canonical");
  EXPECT_EQ(again, p);
  EXPECT_EQ(print_canonical(again), text);
  std::printf("%s", text.c_str());
}

}  // namespace
