// The ids a prompt's text becomes, the one rule `lathe run`, `lathe tokenize` and `lathe perplexity`
// share: the text is encoded without specials, then BOS goes first when the rule asks for it (the
// model's tokenizer.ggml.add_bos_token by default; --bos / --no-bos force it either way). A model
// that names no BOS token gets none, whatever the rule.
#pragma once

#include "runtime/tokenizer.h"

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace lathe::cli {

enum class BosRule { model, always, never };

// The rule the --bos / --no-bos flags ask for; --no-bos wins when both are given.
BosRule bos_rule(bool bos, bool no_bos);

// Whether the rule puts BOS first with this tokenizer.
bool adds_bos(const Tokenizer& tokenizer, BosRule rule);

// parse_special: control tokens written in the text ("<|im_start|>") become their ids.
std::vector<int32_t> prompt_ids(const Tokenizer& tokenizer, std::string_view text, BosRule rule,
                                bool parse_special = false);

// "1,2,3" into ids, for options that take token ids (`option` names it in messages): decimal digits
// only in each item (blanks around it allowed). Refuses an empty list, an empty item, a sign,
// anything not a digit and numbers past int32, naming the item.
std::vector<int32_t> parse_token_list(std::string_view list, std::string_view option);

// The whole of a text file, byte for byte; a UserError naming the path when it cannot be read.
std::string read_text_file(const std::string& path);

}  // namespace lathe::cli
