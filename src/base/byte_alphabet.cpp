#include "base/byte_alphabet.h"

namespace lathe {

std::string utf8_of(uint32_t cp) {
  std::string s;
  if (cp < 0x80) {
    s += static_cast<char>(cp);
  } else if (cp < 0x800) {
    s += static_cast<char>(0xC0 | (cp >> 6));
    s += static_cast<char>(0x80 | (cp & 0x3F));
  } else {
    s += static_cast<char>(0xE0 | (cp >> 12));
    s += static_cast<char>(0x80 | ((cp >> 6) & 0x3F));
    s += static_cast<char>(0x80 | (cp & 0x3F));
  }
  return s;
}

const std::array<std::string, 256>& byte_level_alphabet() {
  // Bytes that print as themselves keep their code point; the others take 256, 257, ... in order.
  static const std::array<std::string, 256> alphabet = [] {
    std::array<std::string, 256> out;
    uint32_t next = 256;
    for (uint32_t b = 0; b < 256; ++b) {
      const bool printable = (b >= 33 && b <= 126) || (b >= 161 && b <= 172) || (b >= 174 && b <= 255);
      out[b] = utf8_of(printable ? b : next++);
    }
    return out;
  }();
  return alphabet;
}

}  // namespace lathe
