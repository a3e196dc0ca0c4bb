// SHA-256 digests (OpenSSL's libcrypto), as lowercase hex. Identity of programs and checkpoints.
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <string_view>

namespace lathe {

std::string sha256_hex(std::span<const uint8_t> bytes);
std::string sha256_hex(std::string_view text);

}  // namespace lathe
