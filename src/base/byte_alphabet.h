// GPT-2's byte-level alphabet: a reversible map from each byte to a printable Unicode character
// (as UTF-8), in which byte-level BPE vocabularies (Qwen, Llama 3) write their tokens.
#pragma once

#include <array>
#include <cstdint>
#include <string>

namespace lathe {

// The UTF-8 encoding of a code point below 0x10000.
std::string utf8_of(uint32_t code_point);

const std::array<std::string, 256>& byte_level_alphabet();

}  // namespace lathe
