#include "store/codec.hpp"

#include <bit>
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

// ---- requests: RequestDecoder::feed/next and encode_request go below ------

}  // namespace gangrun::store
