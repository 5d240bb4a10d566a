#include "store/client_common.hpp"

#include "util/strings.hpp"

#include <fmt/format.h>

#include <algorithm>

namespace gangrun::store {
namespace {

// A reply field longer than this is a broken or hostile server, not data.
constexpr std::uint64_t k_max_reply_bytes = std::uint64_t{1} << 30;
// A LIST_KEYS count above this is refused the same way.
constexpr std::int64_t k_max_reply_items = std::int64_t{1} << 26;

constexpr std::chrono::milliseconds k_max_retry_delay{1000};

// Keys are arbitrary bytes; a message shows them readably and not too long.
std::string printable(std::string_view key) {
  constexpr std::size_t k_longest = 100;
  std::string out;
  for (std::size_t i = 0; i < key.size() && i < k_longest; ++i) {
    auto byte = static_cast<unsigned char>(key[i]);
    if (byte >= 0x20 && byte < 0x7f) {
      out += static_cast<char>(byte);
    } else {
      out += fmt::format("\\x{:02x}", byte);
    }
  }
  if (key.size() > k_longest) out += "...";
  return out;
}

Parsed<std::int64_t> read_count(ReplyReader& reader) {
  std::optional<std::int64_t> count = reader.read_i64();
  if (count && (*count < 0 || *count > k_max_reply_items)) {
    return fail(ErrorCode::store, fmt::format("a reply announces {} items", *count));
  }
  return count;
}

}  // namespace

Parsed<std::string> read_blob(ReplyReader& reader) {
  ReplyReader probe = reader;
  std::optional<std::uint64_t> length = probe.read_u64();
  if (length && *length > k_max_reply_bytes) {
    return fail(ErrorCode::store, fmt::format("a reply field claims {} bytes", *length));
  }
  return reader.read_bytes();
}

Parsed<std::int64_t> read_i64(ReplyReader& reader) { return reader.read_i64(); }

Parsed<std::uint32_t> read_u32(ReplyReader& reader) { return reader.read_u32(); }

Parsed<std::uint8_t> read_u8(ReplyReader& reader) { return reader.read_u8(); }

Parsed<bool> read_check(ReplyReader& reader) {
  std::optional<std::uint8_t> reply = reader.read_u8();
  if (!reply) return std::nullopt;
  if (*reply == k_check_ready) return true;
  if (*reply == k_check_not_ready) return false;
  return fail(ErrorCode::store, fmt::format("CHECK reply byte {}", *reply));
}

Parsed<bool> read_deleted(ReplyReader& reader) {
  std::optional<std::int64_t> deleted = reader.read_i64();
  if (!deleted) return std::nullopt;
  return *deleted != 0;
}

Parsed<std::vector<std::string>> read_blobs(ReplyReader& reader, std::size_t count) {
  std::vector<std::string> blobs;
  for (std::size_t i = 0; i < count; ++i) {
    Parsed<std::string> blob = read_blob(reader);
    if (!blob) return tl::unexpected(blob.error());
    if (!*blob) return std::nullopt;
    blobs.push_back(std::move(**blob));
  }
  return blobs;
}

Parsed<std::vector<std::string>> read_key_list(ReplyReader& reader) {
  Parsed<std::int64_t> count = read_count(reader);
  if (!count) return tl::unexpected(count.error());
  if (!*count) return std::nullopt;
  return read_blobs(reader, static_cast<std::size_t>(**count));
}

Parsed<bool> read_stop_waiting(ReplyReader& reader) {
  std::optional<std::uint8_t> reply = reader.read_u8();
  if (!reply) return std::nullopt;
  if (*reply != k_wait_stop_waiting) {
    return fail(ErrorCode::store, fmt::format("reply byte {}, not STOP_WAITING", *reply));
  }
  return true;
}

std::string handshake_bytes(std::uint32_t nonce) {
  // Neither request can fail to encode: both exist in the validated dialect
  // and take no keys.
  return *encode_request(Dialect::validated,
                         make_request(Op::validate, {}, {}, 0, k_validate_magic)) +
         *encode_request(Dialect::validated, make_request(Op::ping, {}, {}, 0, nonce));
}

Error handshake_mismatch(const std::string& where, std::uint32_t nonce, std::uint32_t echo) {
  return Error(ErrorCode::store,
               fmt::format("the store at {} answered PING {} with {}: it is not a PyTorch 2.x "
                           "store (a PyTorch 1.13 store speaks only the legacy dialect)",
                           where, nonce, echo));
}

Error handshake_failed(const Error& error) {
  return Error(ErrorCode::store,
               error.message() +
                   " (the VALIDATE + PING handshake of the validated dialect; a PyTorch 1.13 "
                   "store speaks only the legacy dialect)");
}

Expected<std::string> encode_for(Dialect dialect, const Request& request) {
  Expected<std::string> bytes = encode_request(dialect, request);
  if (!bytes) {
    return fail(bytes.error().code(),
                fmt::format("{} is not available with a {} store: {}", op_name(request.op),
                            dialect == Dialect::legacy ? "legacy (PyTorch 1.13)" : "2.x",
                            bytes.error().message()));
  }
  return bytes;
}

std::chrono::milliseconds ConnectBackoff::next_pause() {
  std::uniform_int_distribution<std::chrono::milliseconds::rep> jitter(delay_.count() / 2,
                                                                       delay_.count());
  std::chrono::milliseconds pause(jitter(rng_));
  delay_ = std::min(delay_ * 2, k_max_retry_delay);
  return pause;
}

std::string keys_text(const std::vector<std::string>& keys) {
  constexpr std::size_t k_most = 10;
  std::string out;
  for (std::size_t i = 0; i < keys.size() && i < k_most; ++i) {
    if (i > 0) out += ", ";
    out += printable(keys[i]);
  }
  if (keys.size() > k_most) out += fmt::format(" and {} more", keys.size() - k_most);
  return out;
}

Error timed_out_error(const Request& request, const std::string& where,
                      std::chrono::milliseconds budget) {
  if (request.op == Op::wait) {
    return Error(ErrorCode::store,
                 fmt::format("timed out after {} waiting for keys: {} (store at {})",
                             strings::duration_text(budget), keys_text(request.keys), where));
  }
  return Error(ErrorCode::store,
               fmt::format("{} on the store at {} timed out after {}", op_name(request.op), where,
                           strings::duration_text(budget)));
}

Error closed_error(Op op, const std::string& where) {
  return Error(ErrorCode::store,
               fmt::format("the store at {} closed the connection during {}", where, op_name(op)));
}

Error failed_error(Op op, const std::string& where, const std::string& reason) {
  return Error(ErrorCode::store,
               fmt::format("{} on the store at {} failed: {}", op_name(op), where, reason));
}

Error malformed_reply_error(Op op, const std::string& where, const std::string& what) {
  return Error(ErrorCode::store, fmt::format("the store at {} sent a malformed reply to {}: {}",
                                             where, op_name(op), what));
}

Error unreachable_error(const std::string& where, std::chrono::milliseconds waited,
                        const std::string& last_problem) {
  return Error(ErrorCode::store, fmt::format("cannot reach the store at {} after {}: {}", where,
                                             strings::duration_text(waited), last_problem));
}

}  // namespace gangrun::store
