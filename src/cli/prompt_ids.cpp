#include "cli/prompt_ids.h"

#include <charconv>

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

std::vector<int32_t> parse_token_list(std::string_view list, std::string_view option) {
  auto trim = [](std::string_view s) {
    while (!s.empty() && (s.front() == ' ' || s.front() == '\t')) s.remove_prefix(1);
    while (!s.empty() && (s.back() == ' ' || s.back() == '\t' || s.back() == '\n' || s.back() == '\r'))
      s.remove_suffix(1);
    return s;
  };
  if (trim(list).empty()) fail("{} is empty: give token ids separated by commas, e.g. 1,2,3", option);
  std::vector<int32_t> ids;
  size_t at = 0;
  for (int item = 1;; ++item) {
    const size_t comma = list.find(',', at);
    const std::string_view raw = list.substr(at, comma == std::string_view::npos ? std::string_view::npos : comma - at);
    const std::string_view s = trim(raw);
    if (s.empty()) fail("{} \"{}\": item {} is empty (two commas in a row, or one at an end)", option, list, item);
    if (s.find_first_not_of("0123456789") != std::string_view::npos)
      fail("{} \"{}\": item {} \"{}\" is not a token id (ids are whole numbers from 0)", option, list, item, s);
    int32_t id = 0;
    const auto [end, ec] = std::from_chars(s.data(), s.data() + s.size(), id);
    if (ec != std::errc() || end != s.data() + s.size())
      fail("{}: item {} \"{}\" is out of range: token ids are below 2^31", option, item, s);
    ids.push_back(id);
    if (comma == std::string_view::npos) break;
    at = comma + 1;
  }
  return ids;
}

}  // namespace lathe::cli
