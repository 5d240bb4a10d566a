#include "preflight/sealing.hpp"

#include <sodium.h>

#include <array>
#include <cstdlib>

namespace gangrun::preflight {

std::string preflight_key(std::string_view job_secret, std::string_view run_id) {
  // Idempotent and thread-safe; it fails only without a source of
  // randomness, which an HMAC does not use, but libsodium wants it first.
  if (sodium_init() < 0) std::abort();
  static constexpr std::string_view k_label("gangrun preflight\0", 18);
  crypto_auth_hmacsha256_state state;
  crypto_auth_hmacsha256_init(&state, reinterpret_cast<const unsigned char*>(job_secret.data()),
                              job_secret.size());
  crypto_auth_hmacsha256_update(&state, reinterpret_cast<const unsigned char*>(k_label.data()),
                                k_label.size());
  crypto_auth_hmacsha256_update(&state, reinterpret_cast<const unsigned char*>(run_id.data()),
                                run_id.size());
  std::array<unsigned char, crypto_auth_hmacsha256_BYTES> key{};
  crypto_auth_hmacsha256_final(&state, key.data());
  sodium_memzero(&state, sizeof state);
  std::string hex(2 * key.size() + 1, '\0');
  sodium_bin2hex(hex.data(), hex.size(), key.data(), key.size());
  hex.pop_back();
  sodium_memzero(key.data(), key.size());
  return hex;
}

}  // namespace gangrun::preflight
