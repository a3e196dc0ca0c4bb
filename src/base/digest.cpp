#include "base/digest.h"

#include <openssl/sha.h>

namespace lathe {

std::string sha256_hex(std::span<const uint8_t> bytes) {
  unsigned char out[SHA256_DIGEST_LENGTH];
  SHA256(bytes.data(), bytes.size(), out);
  static const char* hex = "0123456789abcdef";
  std::string s;
  s.reserve(2 * SHA256_DIGEST_LENGTH);
  for (unsigned char b : out) {
    s.push_back(hex[b >> 4]);
    s.push_back(hex[b & 15]);
  }
  return s;
}

std::string sha256_hex(std::string_view text) {
  return sha256_hex(std::span<const uint8_t>(reinterpret_cast<const uint8_t*>(text.data()), text.size()));
}

}  // namespace lathe
