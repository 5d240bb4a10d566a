// libFuzzer target for store::RequestDecoder and encode_request. The first
// input byte is a control byte. With bit 3 clear the rest is what a client
// sent: bit 0 picks the limits (default or tiny, so that every limit is
// reachable), bits 1-2 how the bytes are cut into pieces, and every decoded
// request must re-encode to exactly its bytes. With bit 3 set the rest
// describes requests (bits 4-7 pick the dialect) that are encoded and must
// decode back unchanged. Any broken invariant traps.
#include "store/codec.hpp"

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace {

using gangrun::ErrorCode;
using gangrun::store::Dialect;
using gangrun::store::encode_request;
using gangrun::store::k_validate_magic;
using gangrun::store::Limits;
using gangrun::store::Op;
using gangrun::store::Request;
using gangrun::store::RequestDecoder;

void check(bool ok) {
  if (!ok) __builtin_trap();
}

Limits limits_for(std::uint8_t control) {
  Limits limits;
  if ((control & 1) != 0) {
    limits.max_key_bytes = 16;
    limits.max_value_bytes = 32;
    limits.max_keys_per_request = 4;
    limits.max_request_bytes = 128;
  }
  return limits;
}

// The largest piece, minus one, is the first byte of the piece masked by this.
std::uint8_t piece_mask(std::uint8_t control) {
  static constexpr std::uint8_t masks[] = {0, 7, 63, 255};
  return masks[(control >> 1) & 3];
}

void check_within_limits(const Request& request, const Limits& limits) {
  check(request.keys.size() <= limits.max_keys_per_request || request.keys.size() <= 1);
  for (const std::string& key : request.keys) check(key.size() <= limits.max_key_bytes);
  for (const std::string& value : request.values) check(value.size() <= limits.max_value_bytes);
}

// A fresh decoder given the request's own bytes (after a VALIDATE where the
// dialect needs one) returns the request and nothing else.
void check_decodes_back(Dialect dialect, const Request& request, const std::string& encoded,
                        const Limits& limits) {
  std::string bytes;
  if (dialect == Dialect::validated && request.op != Op::validate) {
    Request validate;
    validate.op = Op::validate;
    validate.word = k_validate_magic;
    auto opening = encode_request(dialect, validate);
    check(opening.has_value());
    bytes = *opening;
  }
  bytes += encoded;
  RequestDecoder fresh(limits);
  fresh.feed(bytes);
  if (dialect == Dialect::validated && request.op != Op::validate) {
    auto opening = fresh.next();
    check(opening && *opening && (*opening)->op == Op::validate);
  }
  auto again = fresh.next();
  check(again && *again && **again == request);
  check(fresh.dialect() == dialect);
  check(fresh.buffered_bytes() == 0);
  auto nothing = fresh.next();
  check(nothing && !*nothing);
}

// Reads the input front to back; zeros once it runs out.
class Source {
 public:
  explicit Source(std::string_view bytes) : bytes_(bytes) {}
  bool empty() const { return at_ >= bytes_.size(); }
  std::uint8_t byte() { return empty() ? 0 : static_cast<std::uint8_t>(bytes_[at_++]); }
  std::uint64_t word(int width) {
    std::uint64_t value = 0;
    for (int i = 0; i < width; ++i) value = value << 8 | byte();
    return value;
  }
  std::string text() {
    std::string out;
    for (std::size_t length = byte() % 24; length > 0; --length) out += static_cast<char>(byte());
    return out;
  }

 private:
  std::string_view bytes_;
  std::size_t at_ = 0;
};

// A request of op built from the input, in the shape codec.hpp gives op.
Request make_request(Op op, Source& source) {
  Request request;
  request.op = op;
  switch (op) {
    case Op::set:
    case Op::append:
    case Op::queue_push:
      request.keys = {source.text()};
      request.values = {source.text()};
      break;
    case Op::compare_set:
      request.keys = {source.text()};
      request.values = {source.text(), source.text()};
      break;
    case Op::get:
    case Op::delete_key:
    case Op::watch_key:
    case Op::queue_pop:
    case Op::queue_len:
      request.keys = {source.text()};
      break;
    case Op::add:
    case Op::barrier:
      request.keys = {source.text()};
      request.number = static_cast<std::int64_t>(source.word(8));
      break;
    case Op::check:
    case Op::wait:
    case Op::multi_get:
      for (int n = source.byte() % 6; n > 0; --n) request.keys.push_back(source.text());
      break;
    case Op::multi_set:
      for (int n = source.byte() % 6; n > 0; --n) {
        request.keys.push_back(source.text());
        request.values.push_back(source.text());
      }
      break;
    case Op::validate:
    case Op::ping:
      request.word = static_cast<std::uint32_t>(source.word(4));
      break;
    case Op::num_keys:
    case Op::cancel_wait:
    case Op::list_keys:
      break;
  }
  return request;
}

// The other direction: requests built from the input, encoded and fed in
// pieces, must all come back, equal and in order (a decoder that stalls on
// a valid request fails here).
void encode_then_decode(std::uint8_t control, std::string_view input) {
  static constexpr Dialect dialects[] = {Dialect::legacy, Dialect::magic_prefixed,
                                         Dialect::validated};
  const Dialect dialect = dialects[(control >> 4) % 3];
  Source source(input);
  std::vector<Request> sent;
  std::string bytes;
  auto send = [&](Request request) {
    auto encoded = encode_request(dialect, request);
    check(encoded.has_value());
    bytes += *encoded;
    sent.push_back(std::move(request));
  };
  if (dialect == Dialect::validated) {
    Request validate;
    validate.op = Op::validate;
    validate.word = k_validate_magic;
    send(validate);
  }
  while (!source.empty() && sent.size() < 64) {
    const auto op = static_cast<Op>(source.byte() % (static_cast<int>(Op::barrier) + 1));
    if (op == Op::validate) continue;
    if (!gangrun::store::byte_for_op(dialect, op)) {
      check(!encode_request(dialect, make_request(op, source)).has_value());
      continue;
    }
    send(make_request(op, source));
  }

  RequestDecoder decoder{Limits{}};
  std::vector<Request> received;
  std::size_t fed = 0;
  while (fed < bytes.size()) {
    const std::size_t piece = std::min<std::size_t>(1u + source.byte() % 41, bytes.size() - fed);
    decoder.feed(std::string_view(bytes).substr(fed, piece));
    fed += piece;
    for (;;) {
      auto next = decoder.next();
      check(next.has_value());
      if (!*next) break;
      received.push_back(std::move(**next));
    }
  }
  check(received == sent);
  check(decoder.buffered_bytes() == 0);
  check(sent.empty() || decoder.dialect() == dialect);
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  if (size == 0) return 0;
  const std::uint8_t control = data[0];
  const std::string_view input(reinterpret_cast<const char*>(data + 1), size - 1);
  if ((control & 8) != 0) {
    encode_then_decode(control, input);
    return 0;
  }
  const Limits limits = limits_for(control);

  RequestDecoder decoder(limits);
  std::size_t fed = 0;
  std::size_t decoded = 0;  // bytes of input taken by returned requests
  std::size_t requests = 0;
  std::optional<Dialect> dialect;
  bool failed = false;
  while (fed < input.size() && !failed) {
    const auto first = static_cast<std::uint8_t>(input[fed]);
    const std::size_t piece =
        std::min<std::size_t>(1u + (first & piece_mask(control)), input.size() - fed);
    decoder.feed(input.substr(fed, piece));
    fed += piece;
    check(decoder.buffered_bytes() == fed - decoded);

    for (;;) {
      auto next = decoder.next();
      if (!next) {
        check(next.error().code() == ErrorCode::store);
        check(!next.error().message().empty());
        // The error sticks, whatever arrives next.
        decoder.feed(input.substr(0, 16));
        auto again = decoder.next();
        check(!again && again.error().message() == next.error().message());
        failed = true;
        break;
      }
      if (!*next) break;
      const Request& request = **next;

      // The dialect is decided before the first request and never changes.
      check(decoder.dialect().has_value());
      check(!dialect || dialect == decoder.dialect());
      dialect = decoder.dialect();
      // A validated connection has exactly one VALIDATE, first, with the magic.
      if (*dialect == Dialect::validated) {
        check((requests == 0) == (request.op == Op::validate));
        if (request.op == Op::validate) check(request.word == k_validate_magic);
      }
      check_within_limits(request, limits);

      // The request re-encodes to exactly the bytes it was decoded from.
      auto encoded = encode_request(*dialect, request);
      check(encoded.has_value());
      check(encoded->size() <= limits.max_request_bytes);
      check(decoded + encoded->size() <= fed);
      check(input.substr(decoded, encoded->size()) == *encoded);
      check_decodes_back(*dialect, request, *encoded, limits);

      decoded += encoded->size();
      ++requests;
      check(decoder.buffered_bytes() == fed - decoded);
    }
  }
  check(decoder.buffered_bytes() <= fed);
  return 0;
}
