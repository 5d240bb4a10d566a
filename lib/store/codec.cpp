#include "store/codec.hpp"

#include <algorithm>
#include <bit>
#include <cstdint>
#include <cstdio>
#include <cstring>

namespace gangrun::store {
namespace {

// PyTorch sends integers in host order; every platform it supports is
// little-endian, and so is the wire format we write down in PROTOCOL.md.
static_assert(std::endian::native == std::endian::little,
              "the TCPStore wire format is little-endian; this host is not");

template <typename T>
void put_raw(std::string& out, T value) {
  char bytes[sizeof(T)];
  std::memcpy(bytes, &value, sizeof(T));
  out.append(bytes, sizeof(T));
}

}  // namespace

Request make_request(Op op, std::vector<std::string> keys, std::vector<std::string> values,
                     std::int64_t number, std::uint32_t word) {
  Request request;
  request.op = op;
  request.keys = std::move(keys);
  request.values = std::move(values);
  request.number = number;
  request.word = word;
  return request;
}

void put_u8(std::string& out, std::uint8_t value) { out.push_back(static_cast<char>(value)); }
void put_u32(std::string& out, std::uint32_t value) { put_raw(out, value); }
void put_i64(std::string& out, std::int64_t value) { put_raw(out, value); }
void put_u64(std::string& out, std::uint64_t value) { put_raw(out, value); }
void put_bytes(std::string& out, std::string_view bytes) {
  put_u64(out, bytes.size());
  out.append(bytes);
}

namespace {

template <typename T>
std::optional<T> read_raw(std::string_view bytes, std::size_t& consumed) {
  if (bytes.size() - consumed < sizeof(T)) return std::nullopt;
  T value;
  std::memcpy(&value, bytes.data() + consumed, sizeof(T));
  consumed += sizeof(T);
  return value;
}

}  // namespace

std::optional<std::uint8_t> ReplyReader::read_u8() {
  return read_raw<std::uint8_t>(bytes_, consumed_);
}
std::optional<std::uint32_t> ReplyReader::read_u32() {
  return read_raw<std::uint32_t>(bytes_, consumed_);
}
std::optional<std::int64_t> ReplyReader::read_i64() {
  return read_raw<std::int64_t>(bytes_, consumed_);
}
std::optional<std::uint64_t> ReplyReader::read_u64() {
  return read_raw<std::uint64_t>(bytes_, consumed_);
}
std::optional<std::string> ReplyReader::read_bytes() {
  std::size_t at = consumed_;
  std::optional<std::uint64_t> length = read_raw<std::uint64_t>(bytes_, at);
  if (!length || bytes_.size() - at < *length) return std::nullopt;
  consumed_ = at + *length;
  return std::string(bytes_.substr(at, *length));
}

// ---- requests ---------------------------------------------------------------

namespace {

// VALIDATE's magic as it appears on the wire; also the prefix of every request
// in the magic-prefixed dialect.
constexpr std::string_view k_magic_bytes{"\xCE\xF7\x85\x3C", 4};

// An empty buffer keeps at most this much memory between requests (it counts
// against the server's buffer budget for as long as the connection is open).
constexpr std::size_t k_kept_capacity = 8 * 1024;

// What comes next in a request, after its opcode.
enum class Field { key, value, number, count, signed_count, word, end };

// The field at index of an op's request; count is the number of keys a
// CHECK, WAIT, MULTI_GET or MULTI_SET announced in its field 0.
Field field_at(Op op, std::size_t index, std::uint64_t count) {
  switch (op) {
    case Op::set:
    case Op::append:
    case Op::queue_push:
      if (index == 0) return Field::key;
      return index == 1 ? Field::value : Field::end;
    case Op::compare_set:
      if (index == 0) return Field::key;
      return index <= 2 ? Field::value : Field::end;
    case Op::get:
    case Op::delete_key:
    case Op::watch_key:
    case Op::queue_pop:
    case Op::queue_len:
      return index == 0 ? Field::key : Field::end;
    case Op::add:
    case Op::barrier:
      if (index == 0) return Field::key;
      return index == 1 ? Field::number : Field::end;
    case Op::check:
    case Op::wait:
    case Op::multi_get:
      if (index == 0) return Field::count;
      return index <= count ? Field::key : Field::end;
    case Op::multi_set:
      if (index == 0) return Field::signed_count;
      if (index > 2 * count) return Field::end;
      return index % 2 == 1 ? Field::key : Field::value;
    case Op::validate:
    case Op::ping:
      return index == 0 ? Field::word : Field::end;
    case Op::num_keys:
    case Op::cancel_wait:
    case Op::list_keys:
      return Field::end;
  }
  return Field::end;
}

std::size_t field_width(Field field) { return field == Field::word ? 4 : 8; }

std::string_view dialect_name(Dialect dialect) {
  switch (dialect) {
    case Dialect::legacy:
      return "legacy";
    case Dialect::magic_prefixed:
      return "magic-prefixed";
    case Dialect::validated:
      return "validated";
  }
  return "?";
}

std::string hex_number(std::uint64_t value, int digits) {
  char text[24];
  std::snprintf(text, sizeof text, "0x%0*llx", digits, static_cast<unsigned long long>(value));
  return text;
}

std::string hex_bytes(std::string_view bytes) {
  std::string text;
  for (char byte : bytes) {
    if (!text.empty()) text += ' ';
    text += hex_number(static_cast<std::uint8_t>(byte), 2).substr(2);
  }
  return text;
}

// a + b * c without wrapping around, for "at least N bytes" in messages.
std::uint64_t saturating(std::uint64_t a, std::uint64_t b, std::uint64_t c = 1) {
  std::uint64_t product = 0;
  std::uint64_t sum = 0;
  if (__builtin_mul_overflow(b, c, &product) || __builtin_add_overflow(a, product, &sum)) {
    return UINT64_MAX;
  }
  return sum;
}

template <typename T>
T load(std::string_view bytes, std::size_t at) {
  T value;
  std::memcpy(&value, bytes.data() + at, sizeof(T));
  return value;
}

// "1 key", "3 keys".
std::string counted(std::size_t count, std::string_view noun) {
  return std::to_string(count) + " " + std::string(noun) + (count == 1 ? "" : "s");
}

tl::unexpected<Error> bad_request(std::string message) {
  return fail(ErrorCode::store, std::move(message));
}

tl::unexpected<Error> too_large(Op op, std::uint64_t at_least, std::size_t limit) {
  return bad_request(std::string(op_name(op)) + " of at least " + std::to_string(at_least) +
                     " bytes is over the " + std::to_string(limit) + "-byte request limit");
}

}  // namespace

void RequestDecoder::feed(std::string_view bytes) {
  // A failed decoder reads nothing more; keeping the bytes would only let a
  // misbehaving client grow the buffer until the connection is closed.
  if (failed_) return;
  if (consumed_ == buffer_.size()) {
    // Give back the room a large request took; most connections then idle.
    if (buffer_.capacity() > k_kept_capacity) {
      std::string().swap(buffer_);
    } else {
      buffer_.clear();
    }
    consumed_ = 0;
  } else if (consumed_ >= buffer_.size() - consumed_) {
    // Each byte is moved at most once per byte consumed before it, so the
    // compaction costs amortised O(1) per byte.
    buffer_.erase(0, consumed_);
    consumed_ = 0;
  }
  buffer_.append(bytes);
}

Expected<std::optional<Request>> RequestDecoder::next() {
  if (failed_) return tl::unexpected<Error>(*failed_);
  Expected<std::optional<Request>> result = decode();
  if (!result) failed_ = result.error();
  return result;
}

Expected<std::optional<Request>> RequestDecoder::decode() {
  // The pending request said how many bytes it needs; fewer cannot help.
  if (buffered_bytes() < needed_) return std::nullopt;
  if (!dialect_) {
    Expected<bool> decided = detect_dialect();
    if (!decided) return tl::unexpected<Error>(std::move(decided.error()));
    if (!*decided) return std::nullopt;
  }
  if (!pending_) {
    Expected<bool> started = start_request();
    if (!started) return tl::unexpected<Error>(std::move(started.error()));
    if (!*started) return std::nullopt;
  }
  Expected<bool> complete = read_fields();
  if (!complete) return tl::unexpected<Error>(std::move(complete.error()));
  if (!*complete) return std::nullopt;

  consumed_ += pending_->parsed;
  needed_ = 0;
  ++requests_returned_;
  Request request = std::move(pending_->request);
  pending_.reset();
  return request;
}

// True once dialect_ is set. Waits for no more bytes than the decision needs:
// a 1.13 client's first request may be a lone GETNUMKEYS byte.
Expected<bool> RequestDecoder::detect_dialect() {
  const std::string_view bytes = std::string_view(buffer_).substr(consumed_);
  if (bytes.empty()) return false;
  const auto first = static_cast<std::uint8_t>(bytes[0]);
  if (first == 0x00) {
    // VALIDATE + magic, or a legacy SET whose key length starts with the
    // magic; such a length is over 1 GB and no limit allows it.
    const std::size_t seen = std::min(bytes.size() - 1, k_magic_bytes.size());
    if (bytes.substr(1, seen) != k_magic_bytes.substr(0, seen)) {
      dialect_ = Dialect::legacy;
      return true;
    }
    if (seen < k_magic_bytes.size()) return false;
    dialect_ = Dialect::validated;
    return true;
  }
  if (first == static_cast<std::uint8_t>(k_magic_bytes[0])) {
    // 0xCE is no opcode in any dialect, so only the magic can follow.
    const std::size_t seen = std::min(bytes.size(), k_magic_bytes.size());
    if (bytes.substr(0, seen) != k_magic_bytes.substr(0, seen)) {
      return bad_request("the connection starts with " + hex_bytes(bytes.substr(0, seen)) +
                         ", neither an opcode nor the magic bytes " + hex_bytes(k_magic_bytes));
    }
    if (seen < k_magic_bytes.size()) return false;
    dialect_ = Dialect::magic_prefixed;
    return true;
  }
  dialect_ = Dialect::legacy;
  return true;
}

// True once pending_ holds a request whose opcode has been read.
Expected<bool> RequestDecoder::start_request() {
  const std::string_view bytes = std::string_view(buffer_).substr(consumed_);
  std::size_t at = 0;
  if (*dialect_ == Dialect::magic_prefixed) {
    const std::size_t seen = std::min(bytes.size(), k_magic_bytes.size());
    if (bytes.substr(0, seen) != k_magic_bytes.substr(0, seen)) {
      return bad_request("a request in the magic-prefixed dialect starts with " +
                         hex_bytes(bytes.substr(0, seen)) + " instead of the magic bytes " +
                         hex_bytes(k_magic_bytes));
    }
    at = k_magic_bytes.size();
  }
  if (bytes.size() <= at) {
    needed_ = at + 1;
    return false;
  }
  const auto byte = static_cast<std::uint8_t>(bytes[at]);
  const std::optional<Op> op = op_from_byte(*dialect_, byte);
  if (!op) {
    return bad_request("unknown opcode " + hex_number(byte, 2) + " in the " +
                       std::string(dialect_name(*dialect_)) + " dialect");
  }
  if (*op == Op::validate && requests_returned_ > 0) {
    return bad_request("VALIDATE after the first request of the connection");
  }
  // Built whole and moved in: clang 14 cannot default-construct a nested
  // struct with member initializers inside std::optional::emplace.
  Pending pending;
  pending.request.op = *op;
  pending.parsed = at + 1;
  pending_ = std::move(pending);
  return true;
}

// True once every field of the pending request is decoded. Each limit is
// checked as soon as the length or count that breaks it has arrived.
Expected<bool> RequestDecoder::read_fields() {
  Pending& pending = *pending_;
  Request& request = pending.request;
  const std::string_view bytes = std::string_view(buffer_).substr(consumed_);
  const std::size_t max_request = limits_.max_request_bytes;
  for (;;) {
    const Field field = field_at(request.op, pending.field, pending.count);
    if (field == Field::end) return true;
    const std::size_t width = field_width(field);
    if (pending.parsed + width > max_request) {
      return too_large(request.op, pending.parsed + width, max_request);
    }
    if (bytes.size() < pending.parsed + width) {
      needed_ = pending.parsed + width;
      return false;
    }
    // First byte after the fixed-width part; at <= max_request from here on.
    const std::size_t at = pending.parsed + width;
    switch (field) {
      case Field::key:
      case Field::value: {
        const bool is_key = field == Field::key;
        const std::uint64_t length = load<std::uint64_t>(bytes, pending.parsed);
        const std::size_t limit = is_key ? limits_.max_key_bytes : limits_.max_value_bytes;
        if (length > limit) {
          return bad_request(std::string(is_key ? "key" : "value") + " of " +
                             std::to_string(length) + " bytes in " +
                             std::string(op_name(request.op)) + " is over the " +
                             std::to_string(limit) + "-byte limit (" +
                             (is_key ? "--max-key-bytes" : "--max-value-bytes") + ")");
        }
        if (length > max_request - at) {
          return too_large(request.op, saturating(at, length), max_request);
        }
        const std::size_t end = at + static_cast<std::size_t>(length);
        if (bytes.size() < end) {
          needed_ = end;
          return false;
        }
        (is_key ? request.keys : request.values).emplace_back(bytes.substr(at, end - at));
        pending.parsed = end;
        break;
      }
      case Field::number:
        request.number = load<std::int64_t>(bytes, pending.parsed);
        pending.parsed = at;
        break;
      case Field::word:
        request.word = load<std::uint32_t>(bytes, pending.parsed);
        if (request.op == Op::validate && request.word != k_validate_magic) {
          return bad_request("VALIDATE with magic " + hex_number(request.word, 8) + " (expected " +
                             hex_number(k_validate_magic, 8) + ")");
        }
        pending.parsed = at;
        break;
      case Field::count:
      case Field::signed_count: {
        const std::uint64_t count = load<std::uint64_t>(bytes, pending.parsed);
        if (field == Field::signed_count && static_cast<std::int64_t>(count) < 0) {
          return bad_request(std::string(op_name(request.op)) + " with a negative key count (" +
                             std::to_string(static_cast<std::int64_t>(count)) + ")");
        }
        if (count > limits_.max_keys_per_request) {
          return bad_request(std::string(op_name(request.op)) + " with " + std::to_string(count) +
                             " keys is over the " + std::to_string(limits_.max_keys_per_request) +
                             "-key limit (--max-keys-per-request)");
        }
        // Every key, and every MULTI_SET value, takes at least its length field.
        const std::uint64_t smallest_entry = field == Field::signed_count ? 16 : 8;
        if (count > (max_request - at) / smallest_entry) {
          return too_large(request.op, saturating(at, count, smallest_entry), max_request);
        }
        pending.count = count;
        pending.parsed = at;
        break;
      }
      case Field::end:
        return true;
    }
    ++pending.field;
  }
}

Expected<std::string> encode_request(Dialect dialect, const Request& request) {
  const std::optional<std::uint8_t> byte = byte_for_op(dialect, request.op);
  if (!byte) {
    return fail(ErrorCode::usage, "the " + std::string(dialect_name(dialect)) + " dialect has no " +
                                      std::string(op_name(request.op)) + " request");
  }
  const std::uint64_t count = request.keys.size();
  std::size_t keys = 0;
  std::size_t values = 0;
  for (std::size_t index = 0; field_at(request.op, index, count) != Field::end; ++index) {
    const Field field = field_at(request.op, index, count);
    if (field == Field::key) ++keys;
    if (field == Field::value) ++values;
  }
  if (keys != request.keys.size() || values != request.values.size()) {
    return fail(ErrorCode::usage, "a " + std::string(op_name(request.op)) + " request has " +
                                      counted(keys, "key") + " and " + counted(values, "value") +
                                      ", not " + counted(request.keys.size(), "key") + " and " +
                                      counted(request.values.size(), "value"));
  }

  std::string out;
  if (dialect == Dialect::magic_prefixed) out.append(k_magic_bytes);
  put_u8(out, *byte);
  auto next_key = request.keys.begin();
  auto next_value = request.values.begin();
  for (std::size_t index = 0;; ++index) {
    switch (field_at(request.op, index, count)) {
      case Field::key:
        put_bytes(out, *next_key++);
        break;
      case Field::value:
        put_bytes(out, *next_value++);
        break;
      case Field::number:
        put_i64(out, request.number);
        break;
      case Field::count:
        put_u64(out, count);
        break;
      case Field::signed_count:
        put_i64(out, static_cast<std::int64_t>(count));
        break;
      case Field::word:
        put_u32(out, request.word);
        break;
      case Field::end:
        return out;
    }
  }
}

}  // namespace gangrun::store
