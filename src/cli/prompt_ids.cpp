#include "cli/prompt_ids.h"

#include "base/error.h"

#include <cerrno>
#include <cstring>
#include <fstream>
#include <iterator>

namespace lathe::cli {

BosRule bos_rule(bool bos, bool no_bos) {
  if (no_bos) return BosRule::never;
  return bos ? BosRule::always : BosRule::model;
}

bool adds_bos(const Tokenizer& tokenizer, BosRule rule) {
  if (tokenizer.bos() < 0) return false;
  return rule == BosRule::always || (rule == BosRule::model && tokenizer.add_bos());
}

std::vector<int32_t> prompt_ids(const Tokenizer& tokenizer, std::string_view text, BosRule rule,
                                bool parse_special) {
  // Encoded without specials so the EOS that add_eos_token asks for never ends a prompt.
  std::vector<int32_t> ids = tokenizer.encode(text, false, parse_special);
  if (adds_bos(tokenizer, rule)) ids.insert(ids.begin(), tokenizer.bos());
  return ids;
}

std::string read_text_file(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) fail("cannot read {}: {}", path, std::strerror(errno));
  std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  if (in.bad()) fail("cannot read {}: {}", path, std::strerror(errno));
  return text;
}

}  // namespace lathe::cli
