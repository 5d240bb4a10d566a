#include "rendezvous/signing.hpp"

#include <sodium.h>

#include <algorithm>
#include <array>
#include <cstdlib>

namespace gangrun::rendezvous {
namespace {

constexpr std::size_t k_mac_hex_size = 2 * crypto_auth_hmacsha256_BYTES;

bool lower_hex(char c) { return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'f'); }

// libsodium must be initialised before use; the call is idempotent and
// thread-safe. It fails only when no source of randomness can be opened,
// and nothing here can be done safely without one.
void ensure_sodium() {
  if (sodium_init() < 0) std::abort();
}

std::string to_hex(const unsigned char* bytes, std::size_t size) {
  std::string hex(2 * size + 1, '\0');
  sodium_bin2hex(hex.data(), hex.size(), bytes, size);
  hex.pop_back();
  return hex;
}

// The bytes a MAC covers: each part's length before it, so that no two
// different (run id, key, message) triples give the same input.
void update(crypto_auth_hmacsha256_state& state, std::string_view part) {
  std::array<unsigned char, 8> length{};
  std::uint64_t size = part.size();
  for (unsigned char& byte : length) {
    byte = static_cast<unsigned char>(size & 0xff);
    size >>= 8;
  }
  crypto_auth_hmacsha256_update(&state, length.data(), length.size());
  crypto_auth_hmacsha256_update(&state, reinterpret_cast<const unsigned char*>(part.data()),
                                part.size());
}

}  // namespace

Signer::Signer(std::optional<std::string> secret, std::string run_id)
    : secret_(std::move(secret).value_or("")), run_id_(std::move(run_id)) {
  ensure_sodium();
}

std::string Signer::mac_hex(std::string_view key, std::string_view message) const {
  crypto_auth_hmacsha256_state state;
  crypto_auth_hmacsha256_init(&state, reinterpret_cast<const unsigned char*>(secret_.data()),
                              secret_.size());
  update(state, run_id_);
  update(state, nonce_);
  update(state, key);
  update(state, message);
  std::array<unsigned char, crypto_auth_hmacsha256_BYTES> mac{};
  crypto_auth_hmacsha256_final(&state, mac.data());
  sodium_memzero(&state, sizeof state);
  return to_hex(mac.data(), mac.size());
}

std::string Signer::seal(std::string_view key, std::string_view message) const {
  if (!authenticated()) return std::string(message);
  return mac_hex(key, message) + ":" + std::string(message);
}

// Sealed: 64 hex digits and a colon. A message is JSON or a number, so one
// without a MAC is never taken for sealed, wherever its own colons fall.
bool looks_sealed(std::string_view value) {
  return value.size() > k_mac_hex_size && value[k_mac_hex_size] == ':' &&
         std::all_of(value.begin(), value.begin() + k_mac_hex_size, lower_hex);
}

Expected<std::string> Signer::open(std::string_view key, std::string_view value) const {
  bool sealed = looks_sealed(value);
  if (!authenticated()) return std::string(sealed ? value.substr(k_mac_hex_size + 1) : value);
  if (!sealed) {
    return fail(ErrorCode::store,
                std::string(key) +
                    " carries no MAC: its writer has no job secret "
                    "(GANGRUN_JOB_SECRET), or is not a gangrun agent of this job");
  }
  std::string_view message = value.substr(k_mac_hex_size + 1);
  std::string expected = mac_hex(key, message);
  if (sodium_memcmp(expected.data(), value.data(), k_mac_hex_size) != 0) {
    return fail(ErrorCode::store, std::string(key) +
                                      " carries a MAC that this job's secret did not make: its "
                                      "writer has another GANGRUN_JOB_SECRET, or forged it");
  }
  return std::string(message);
}

namespace {

template <std::size_t Size>
std::string random_hex() {
  ensure_sodium();
  std::array<unsigned char, Size> bytes{};
  randombytes_buf(bytes.data(), bytes.size());
  std::string hex = to_hex(bytes.data(), bytes.size());
  sodium_memzero(bytes.data(), bytes.size());
  return hex;
}

constexpr std::size_t k_nonce_bytes = 16;

}  // namespace

std::string new_job_secret() { return random_hex<32>(); }

std::string new_job_nonce() { return random_hex<k_nonce_bytes>(); }

bool looks_like_nonce(std::string_view text) {
  return text.size() == 2 * k_nonce_bytes && std::all_of(text.begin(), text.end(), lower_hex);
}

std::string derived_key(std::string_view secret, std::string_view purpose,
                        std::string_view run_id) {
  ensure_sodium();
  crypto_auth_hmacsha256_state state;
  crypto_auth_hmacsha256_init(&state, reinterpret_cast<const unsigned char*>(secret.data()),
                              secret.size());
  update(state, purpose);
  update(state, run_id);
  std::array<unsigned char, crypto_auth_hmacsha256_BYTES> key{};
  crypto_auth_hmacsha256_final(&state, key.data());
  sodium_memzero(&state, sizeof state);
  std::string hex = to_hex(key.data(), key.size());
  sodium_memzero(key.data(), key.size());
  return hex;
}

}  // namespace gangrun::rendezvous
