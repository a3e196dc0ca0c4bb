// docs/knobs.md lists every knob: each `LATHE_*` name src/ reads from the environment (a quoted name:
// getenv's argument, or a helper's) and each compile-time define a kernel takes through
// LATHE_KERNEL_DEFINES (an `#ifndef LATHE_*` in src/kernels/*.cuh). A knob added without its line
// there fails here, naming it.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <regex>
#include <set>
#include <sstream>
#include <string>

namespace lathe {
namespace {

namespace fs = std::filesystem;

std::string read_all(const fs::path& p) {
  std::ifstream in(p, std::ios::binary);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

// The names matching `pattern` (its first group) in the files below `dir` whose extension is one of `exts`.
std::set<std::string> names_in(const fs::path& dir, const std::set<std::string>& exts, const std::regex& pattern) {
  std::set<std::string> names;
  for (const auto& e : fs::recursive_directory_iterator(dir)) {
    if (!e.is_regular_file() || !exts.count(e.path().extension().string())) continue;
    const std::string text = read_all(e.path());
    for (auto it = std::sregex_iterator(text.begin(), text.end(), pattern); it != std::sregex_iterator(); ++it)
      names.insert((*it)[1].str());
  }
  return names;
}

TEST(KnobsDocumented, EveryEnvironmentNameAndKernelDefineHasItsLine) {
  const fs::path root = LATHE_SOURCE_DIR;
  const std::string doc = read_all(root / "docs" / "knobs.md");
  ASSERT_FALSE(doc.empty()) << "docs/knobs.md";
  // Quoted names in the C++ sources (the environment's), #ifndef names in the kernels (the defines').
  const std::set<std::string> env =
      names_in(root / "src", {".cpp", ".h"}, std::regex("\"(LATHE_[A-Z0-9_]+)\""));
  const std::set<std::string> defines =
      names_in(root / "src" / "kernels", {".cuh"}, std::regex("#ifndef (LATHE_[A-Z0-9_]+)"));
  EXPECT_GT(env.size(), 30u) << "the scan found too few environment names: is the pattern right?";
  EXPECT_GT(defines.size(), 10u) << "the scan found too few defines";
  for (const std::set<std::string>* names : {&env, &defines})
    for (const std::string& n : *names)
      EXPECT_NE(doc.find("`" + n + "`"), std::string::npos) << n << " is read in src/ but has no line in docs/knobs.md";
}

}  // namespace
}  // namespace lathe
