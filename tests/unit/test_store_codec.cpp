// The TCPStore codec: every request of every dialect through encode_request
// and RequestDecoder (whole, byte by byte, split anywhere), the exact bytes
// PyTorch clients send, dialect detection, every limit, bad input, and the
// reply helpers.
#include "store/codec.hpp"

#include <catch2/catch.hpp>

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace {

using gangrun::ErrorCode;
using gangrun::store::byte_for_op;
using gangrun::store::Dialect;
using gangrun::store::encode_request;
using gangrun::store::Limits;
using gangrun::store::make_request;
using gangrun::store::Op;
using gangrun::store::op_name;
using gangrun::store::put_bytes;
using gangrun::store::put_i64;
using gangrun::store::put_u32;
using gangrun::store::put_u64;
using gangrun::store::put_u8;
using gangrun::store::ReplyReader;
using gangrun::store::Request;
using gangrun::store::RequestDecoder;

using Requests = std::vector<Request>;

constexpr std::string_view k_magic{"\xCE\xF7\x85\x3C", 4};

std::string hex_text(std::string_view bytes) {
  static constexpr char digits[] = "0123456789abcdef";
  std::string text;
  for (char c : bytes) {
    const auto byte = static_cast<unsigned char>(c);
    if (!text.empty()) text += ' ';
    text += digits[byte >> 4];
    text += digits[byte & 0xF];
  }
  return text;
}

// "00 ce f7" -> the three bytes; spaces are ignored.
std::string from_hex(std::string_view text) {
  std::string bytes;
  int high = -1;
  for (char c : text) {
    if (c == ' ') continue;
    const int digit = c <= '9' ? c - '0' : (c | 0x20) - 'a' + 10;
    if (high < 0) {
      high = digit;
    } else {
      bytes += static_cast<char>(high * 16 + digit);
      high = -1;
    }
  }
  return bytes;
}

std::string u64_bytes(std::uint64_t value) {
  std::string out;
  put_u64(out, value);
  return out;
}

Request validate() {
  return make_request(Op::validate, {}, {}, 0, gangrun::store::k_validate_magic);
}

// One request of every op, with keys and values that exercise empty strings,
// binary bytes and negative numbers.
Requests one_of_each_op() {
  const std::string binary("\x00\xff\xce\xf7\x85\x3c\n", 7);
  return {
      make_request(Op::set, {"/a"}, {"value"}),
      make_request(Op::compare_set, {"/cas"}, {"", "Y2FuaW1hZGFt"}),
      make_request(Op::get, {"/a"}),
      make_request(Op::add, {"init/"}, {}, 1),
      make_request(Op::add, {"/counter"}, {}, -42),
      make_request(Op::check, {"/a", "/b", ""}),
      make_request(Op::wait, {"/worker/attempt_0/default_pg/0/0/rank_0"}),
      make_request(Op::num_keys),
      make_request(Op::watch_key, {"/watched"}),
      make_request(Op::delete_key, {binary}),
      make_request(Op::append, {"/log"}, {binary}),
      make_request(Op::multi_get, {"/x", "/y"}),
      make_request(Op::multi_get, {}),
      make_request(Op::multi_set, {"/x", "/y"}, {"1", ""}),
      make_request(Op::cancel_wait),
      make_request(Op::ping, {}, {}, 0, 0xDEADBEEFu),
      make_request(Op::queue_push, {"/q"}, {"item"}),
      make_request(Op::queue_pop, {"/q"}),
      make_request(Op::queue_len, {"/q"}),
      make_request(Op::list_keys),
      make_request(Op::barrier, {"/barrier"}, {}, 8),
  };
}

// The requests of one_of_each_op() that dialect can carry, VALIDATE first
// where the dialect has it.
Requests stream_of(Dialect dialect) {
  Requests requests;
  if (dialect == Dialect::validated) requests.push_back(validate());
  for (Request& request : one_of_each_op()) {
    if (byte_for_op(dialect, request.op)) requests.push_back(std::move(request));
  }
  return requests;
}

std::string encode_all(Dialect dialect, const Requests& requests) {
  std::string bytes;
  for (const Request& request : requests) {
    auto encoded = encode_request(dialect, request);
    REQUIRE(encoded);
    bytes += *encoded;
  }
  return bytes;
}

// Drains every whole request the decoder holds; REQUIREs no error.
void drain(RequestDecoder& decoder, Requests& out) {
  for (;;) {
    auto next = decoder.next();
    if (!next) FAIL("decoder error: " << next.error().message());
    if (!*next) return;
    out.push_back(std::move(**next));
  }
}

// Feeds bytes in pieces of the given sizes (the rest in one last piece),
// draining after each.
Requests decode_in_pieces(std::string_view bytes, const std::vector<std::size_t>& pieces,
                          Limits limits = {}) {
  RequestDecoder decoder(limits);
  Requests out;
  std::size_t at = 0;
  for (std::size_t piece : pieces) {
    decoder.feed(bytes.substr(at, piece));
    at += std::min(piece, bytes.size() - at);
    drain(decoder, out);
  }
  decoder.feed(bytes.substr(at));
  drain(decoder, out);
  CHECK(decoder.buffered_bytes() == 0);
  return out;
}

Requests decode_byte_by_byte(std::string_view bytes) {
  return decode_in_pieces(bytes, std::vector<std::size_t>(bytes.size(), 1));
}

// The error the decoder reports after being fed bytes; FAILs if it reports none.
std::string error_after(std::string_view bytes, Limits limits = {}) {
  RequestDecoder decoder(limits);
  decoder.feed(bytes);
  for (;;) {
    auto next = decoder.next();
    if (!next) {
      CHECK(next.error().code() == ErrorCode::store);
      return next.error().message();
    }
    if (!*next) FAIL("no error after " << hex_text(bytes));
  }
}

// True when next() neither fails nor returns a request.
bool waiting(RequestDecoder& decoder) {
  auto next = decoder.next();
  return next && !*next;
}

// The next request; FAILs on an error or when none is whole.
Request next_request(RequestDecoder& decoder) {
  auto next = decoder.next();
  if (!next) FAIL("decoder error: " << next.error().message());
  if (!*next) FAIL("no whole request");
  return **next;
}

// True when the decoder has neither failed nor produced a request.
bool still_waiting(std::string_view bytes, Limits limits = {}) {
  RequestDecoder decoder(limits);
  decoder.feed(bytes);
  auto next = decoder.next();
  return next && !*next;
}

}  // namespace

namespace Catch {
template <>
struct StringMaker<Request> {
  static std::string convert(const Request& request) {
    std::string text = std::string(op_name(request.op)) + " keys[";
    for (const std::string& key : request.keys) text += " " + hex_text(key) + ";";
    text += " ] values[";
    for (const std::string& value : request.values) text += " " + hex_text(value) + ";";
    return text + " ] number " + std::to_string(request.number) + " word " +
           std::to_string(request.word);
  }
};
}  // namespace Catch

TEST_CASE("store::codec round-trips every op of every dialect", "[store][codec]") {
  for (Dialect dialect : {Dialect::legacy, Dialect::magic_prefixed, Dialect::validated}) {
    const Requests requests = stream_of(dialect);
    const std::string bytes = encode_all(dialect, requests);
    INFO("dialect " << static_cast<int>(dialect) << ": " << hex_text(bytes));

    RequestDecoder decoder{Limits{}};
    decoder.feed(bytes);
    Requests at_once;
    drain(decoder, at_once);
    CHECK(at_once == requests);
    CHECK(decoder.dialect() == dialect);
    CHECK(decoder.buffered_bytes() == 0);

    CHECK(decode_byte_by_byte(bytes) == requests);
  }
}

TEST_CASE("store::codec puts each dialect's ops where PyTorch expects them", "[store][codec]") {
  CHECK(stream_of(Dialect::legacy).size() == 15);
  CHECK(stream_of(Dialect::validated).size() == 21);  // VALIDATE + all but WATCH_KEY
  for (Dialect dialect : {Dialect::legacy, Dialect::magic_prefixed, Dialect::validated}) {
    for (const Request& request : stream_of(dialect)) {
      auto encoded = encode_request(dialect, request);
      REQUIRE(encoded);
      const std::size_t opcode_at = dialect == Dialect::magic_prefixed ? 4 : 0;
      CHECK(static_cast<std::uint8_t>((*encoded)[opcode_at]) == byte_for_op(dialect, request.op));
    }
  }
}

TEST_CASE("store::codec decodes requests split at every point", "[store][codec]") {
  struct Case {
    Dialect dialect;
    Requests requests;
  };
  const std::vector<Case> cases = {
      {Dialect::validated,
       {validate(), make_request(Op::ping, {}, {}, 0, 4242),
        make_request(Op::multi_set, {"/a", "/b"}, {"1", "22"}),
        make_request(Op::compare_set, {"/c"}, {"old", "new"})}},
      {Dialect::legacy,
       {make_request(Op::add, {"init/"}, {}, 1), make_request(Op::wait, {"init/", "/k"}),
        make_request(Op::get, {"init/"}), make_request(Op::num_keys)}},
      {Dialect::magic_prefixed,
       {make_request(Op::set, {"/k"}, {"v"}), make_request(Op::check, {"/k"})}},
  };
  for (const Case& c : cases) {
    const std::string bytes = encode_all(c.dialect, c.requests);
    for (std::size_t split = 0; split <= bytes.size(); ++split) {
      INFO("split at " << split << " of " << hex_text(bytes));
      CHECK(decode_in_pieces(bytes, {split}) == c.requests);
    }
  }
  // Two cuts, for a short stream.
  const Requests short_stream = {make_request(Op::add, {"k"}, {}, 7), make_request(Op::get, {"k"})};
  const std::string bytes = encode_all(Dialect::legacy, short_stream);
  for (std::size_t first = 0; first <= bytes.size(); ++first) {
    for (std::size_t second = 0; first + second <= bytes.size(); ++second) {
      INFO("pieces " << first << ", " << second);
      CHECK(decode_in_pieces(bytes, {first, second}) == short_stream);
    }
  }
}

TEST_CASE("store::codec decodes many pipelined requests from one feed", "[store][codec]") {
  Requests requests;
  for (int i = 0; i < 5000; ++i) requests.push_back(make_request(Op::add, {"/n"}, {}, i));
  const std::string bytes = encode_all(Dialect::legacy, requests);
  CHECK(decode_in_pieces(bytes, {}) == requests);
  // And in pieces that never line up with request boundaries.
  CHECK(decode_in_pieces(bytes, std::vector<std::size_t>(bytes.size() / 7, 7)) == requests);
}

TEST_CASE("store::codec reassembles large requests arriving in small pieces", "[store][codec]") {
  // A value at the limit in 1 KiB pieces, and a MULTI_SET of many small
  // entries in 64-byte pieces: both must parse without rescanning.
  const std::string big(Limits{}.max_value_bytes, 'x');
  const Requests set = {make_request(Op::set, {"/big"}, {big})};
  const std::string set_bytes = encode_all(Dialect::legacy, set);
  CHECK(decode_in_pieces(set_bytes, std::vector<std::size_t>(set_bytes.size() / 1024, 1024)) ==
        set);

  Request multi = make_request(Op::multi_set);
  for (int i = 0; i < 100000; ++i) {
    multi.keys.push_back("/key/" + std::to_string(i));
    multi.values.push_back(std::to_string(i));
  }
  const std::string multi_bytes = encode_all(Dialect::legacy, {multi});
  CHECK(decode_in_pieces(multi_bytes, std::vector<std::size_t>(multi_bytes.size() / 64, 64)) ==
        Requests{multi});
}

TEST_CASE("store::codec writes the bytes PyTorch clients write", "[store][codec]") {
  struct Case {
    Dialect dialect;
    Request request;
    std::string hex;
  };
  const std::vector<Case> cases = {
      {Dialect::validated, validate(), "00 ce f7 85 3c"},
      {Dialect::validated, make_request(Op::ping, {}, {}, 0, 12345), "0d 39 30 00 00"},
      {Dialect::legacy, make_request(Op::add, {"init/"}, {}, 1),
       "03 05 00 00 00 00 00 00 00 69 6e 69 74 2f 01 00 00 00 00 00 00 00"},
      {Dialect::validated, make_request(Op::add, {"init/"}, {}, -1),
       "04 05 00 00 00 00 00 00 00 69 6e 69 74 2f ff ff ff ff ff ff ff ff"},
      {Dialect::legacy, make_request(Op::num_keys), "06"},
      {Dialect::validated, make_request(Op::num_keys), "07"},
      {Dialect::legacy, make_request(Op::set, {"/k"}, {"v"}),
       "00 02 00 00 00 00 00 00 00 2f 6b 01 00 00 00 00 00 00 00 76"},
      {Dialect::validated, make_request(Op::set, {"/k"}, {"v"}),
       "01 02 00 00 00 00 00 00 00 2f 6b 01 00 00 00 00 00 00 00 76"},
      {Dialect::legacy, make_request(Op::wait, {"/a", "/b"}),
       "05 02 00 00 00 00 00 00 00 02 00 00 00 00 00 00 00 2f 61 02 00 00 00 00 00 00 00 2f 62"},
      {Dialect::validated, make_request(Op::multi_set, {"/a"}, {""}),
       "0b 01 00 00 00 00 00 00 00 02 00 00 00 00 00 00 00 2f 61 00 00 00 00 00 00 00 00"},
      {Dialect::validated, make_request(Op::barrier, {"b"}, {}, 4),
       "12 01 00 00 00 00 00 00 00 62 04 00 00 00 00 00 00 00"},
      {Dialect::validated, make_request(Op::cancel_wait), "0c"},
      {Dialect::legacy, make_request(Op::watch_key, {"k"}), "07 01 00 00 00 00 00 00 00 6b"},
      {Dialect::magic_prefixed, make_request(Op::get, {"k"}),
       "ce f7 85 3c 02 01 00 00 00 00 00 00 00 6b"},
  };
  for (const Case& c : cases) {
    INFO(op_name(c.request.op) << " in dialect " << static_cast<int>(c.dialect));
    auto encoded = encode_request(c.dialect, c.request);
    REQUIRE(encoded);
    CHECK(hex_text(*encoded) == c.hex);
  }

  // A 2.x client's connection opens with VALIDATE and PING in one write.
  RequestDecoder decoder{Limits{}};
  decoder.feed(from_hex("00 ce f7 85 3c 0d 39 30 00 00"));
  Requests decoded;
  drain(decoder, decoded);
  CHECK(decoded == Requests{validate(), make_request(Op::ping, {}, {}, 0, 12345)});
  CHECK(decoder.dialect() == Dialect::validated);

  // A 1.13 client's first request is often ADD "init/" 1.
  CHECK(decode_in_pieces(from_hex("03 05 00 00 00 00 00 00 00 69 6e 69 74 2f 01 00 00 00 00 00 00 "
                                  "00 06"),
                         {}) ==
        Requests{make_request(Op::add, {"init/"}, {}, 1), make_request(Op::num_keys)});
}

TEST_CASE("store::codec detects the dialect from as few bytes as possible", "[store][codec]") {
  SECTION("nothing yet") {
    RequestDecoder decoder{Limits{}};
    CHECK(waiting(decoder));
    CHECK_FALSE(decoder.dialect());
  }
  SECTION("a lone legacy GETNUMKEYS") {
    RequestDecoder decoder{Limits{}};
    decoder.feed("\x06");
    auto next = decoder.next();
    REQUIRE(next);
    CHECK(*next == make_request(Op::num_keys));
    CHECK(decoder.dialect() == Dialect::legacy);
  }
  SECTION("any first byte but 00 and ce decides legacy at once") {
    RequestDecoder decoder{Limits{}};
    decoder.feed("\x03");
    CHECK(waiting(decoder));
    CHECK(decoder.dialect() == Dialect::legacy);
  }
  SECTION("00 waits for the magic, byte by byte") {
    RequestDecoder decoder{Limits{}};
    const std::string opening = from_hex("00 ce f7 85 3c");
    for (std::size_t i = 0; i + 1 < opening.size(); ++i) {
      decoder.feed(opening.substr(i, 1));
      CHECK(waiting(decoder));
      CHECK_FALSE(decoder.dialect());
    }
    decoder.feed(opening.substr(opening.size() - 1));
    auto next = decoder.next();
    REQUIRE(next);
    CHECK(*next == validate());
    CHECK(decoder.dialect() == Dialect::validated);
  }
  SECTION("00 followed by anything but the magic is a legacy SET") {
    for (const char* prefix : {"00 05", "00 ce 00", "00 ce f7 85 3d", "00 00 00 00 00"}) {
      INFO(prefix);
      RequestDecoder decoder{Limits{}};
      decoder.feed(from_hex(prefix));
      CHECK(waiting(decoder));
      CHECK(decoder.dialect() == Dialect::legacy);
    }
    CHECK(decode_in_pieces(from_hex("00 01 00 00 00 00 00 00 00 6b 00 00 00 00 00 00 00 00"),
                           {2}) == Requests{make_request(Op::set, {"k"}, {""})});
  }
  SECTION("ce starts the magic-prefixed dialect") {
    RequestDecoder decoder{Limits{}};
    decoder.feed("\xCE\xF7\x85");
    CHECK(waiting(decoder));
    CHECK_FALSE(decoder.dialect());
    decoder.feed(std::string{'\x3C'});
    CHECK(waiting(decoder));
    CHECK(decoder.dialect() == Dialect::magic_prefixed);
    decoder.feed("\x02");  // GET, its key still to come
    CHECK(waiting(decoder));
    decoder.feed(u64_bytes(1) + "k" + std::string(k_magic) + "\x06");
    Requests decoded;
    drain(decoder, decoded);
    CHECK(decoded == Requests{make_request(Op::get, {"k"}), make_request(Op::num_keys)});
  }
  SECTION("ce without the magic is an error as soon as a byte differs") {
    CHECK(error_after(from_hex("ce 00")) ==
          "the connection starts with ce 00, neither an opcode nor the magic bytes ce f7 85 3c");
    CHECK(still_waiting(from_hex("ce f7 85")));
  }
  SECTION("in the magic-prefixed dialect every request needs the magic") {
    const std::string first = *encode_request(Dialect::magic_prefixed, make_request(Op::num_keys));
    RequestDecoder decoder{Limits{}};
    decoder.feed(first + "\x06");
    auto next = decoder.next();
    REQUIRE(next);
    CHECK(*next == make_request(Op::num_keys));
    auto second = decoder.next();
    REQUIRE_FALSE(second);
    CHECK(second.error().message() ==
          "a request in the magic-prefixed dialect starts with 06 instead of the magic bytes ce "
          "f7 85 3c");
    CHECK(error_after(first + std::string("\xCE\xF7\x00", 3)) ==
          "a request in the magic-prefixed dialect starts with ce f7 00 instead of the magic "
          "bytes ce f7 85 3c");
  }
}

TEST_CASE("store::codec accepts VALIDATE only as the first request", "[store][codec]") {
  CHECK(error_after(from_hex("00 ce f7 85 3c 00 ce f7 85 3c")) ==
        "VALIDATE after the first request of the connection");
  // The second VALIDATE fails on its opcode, before its magic arrives.
  CHECK(error_after(from_hex("00 ce f7 85 3c 00")) ==
        "VALIDATE after the first request of the connection");
  // A wrong magic first cannot be a VALIDATE: it reads as a legacy SET, whose
  // key length (here 0x78563412 bytes) is then over the limit.
  CHECK(error_after(from_hex("00 12 34 56 78 00 00 00 00")) ==
        "key of 2018915346 bytes in SET is over the 8192-byte limit (--max-key-bytes)");
  CHECK_FALSE(encode_request(Dialect::legacy, validate()));
  CHECK_FALSE(encode_request(Dialect::magic_prefixed, validate()));
}

TEST_CASE("store::codec rejects unknown opcodes in each dialect", "[store][codec]") {
  CHECK(error_after("\x2a") == "unknown opcode 0x2a in the legacy dialect");
  CHECK(error_after("\x0d") == "unknown opcode 0x0d in the legacy dialect");  // 2.x PING
  CHECK(error_after("\xff") == "unknown opcode 0xff in the legacy dialect");
  CHECK(error_after(from_hex("00 ce f7 85 3c 13")) ==
        "unknown opcode 0x13 in the validated dialect");
  CHECK(error_after(std::string(k_magic) + "\x0d") ==
        "unknown opcode 0x0d in the magic-prefixed dialect");
  // The opcode decides; no field bytes are awaited.
  CHECK(error_after(std::string("\x06\x0d", 2)) == "unknown opcode 0x0d in the legacy dialect");
}

TEST_CASE("store::codec knows WATCH_KEY in the legacy dialects only", "[store][codec]") {
  const Request watch = make_request(Op::watch_key, {"/k"});
  CHECK(encode_request(Dialect::legacy, watch));
  CHECK(encode_request(Dialect::magic_prefixed, watch));
  auto refused = encode_request(Dialect::validated, watch);
  REQUIRE_FALSE(refused);
  CHECK(refused.error().code() == ErrorCode::usage);
  CHECK(refused.error().message() == "the validated dialect has no WATCH_KEY request");

  CHECK(decode_in_pieces(from_hex("07 01 00 00 00 00 00 00 00 6b"), {}) ==
        Requests{make_request(Op::watch_key, {"k"})});
  // Byte 07 is GETNUMKEYS once a connection is validated.
  CHECK(decode_in_pieces(from_hex("00 ce f7 85 3c 07"), {}) ==
        Requests{validate(), make_request(Op::num_keys)});

  for (Op op :
       {Op::ping, Op::queue_push, Op::queue_pop, Op::queue_len, Op::list_keys, Op::barrier}) {
    CHECK_FALSE(byte_for_op(Dialect::legacy, op));
  }
}

TEST_CASE("store::codec refuses requests of the wrong shape", "[store][codec]") {
  auto refused = encode_request(Dialect::legacy, make_request(Op::set, {"/k"}));
  REQUIRE_FALSE(refused);
  CHECK(refused.error().code() == ErrorCode::usage);
  CHECK(refused.error().message() == "a SET request has 1 key and 1 value, not 1 key and 0 values");
  CHECK_FALSE(encode_request(Dialect::legacy, make_request(Op::multi_set, {"/a", "/b"}, {"1"})));
  CHECK_FALSE(encode_request(Dialect::legacy, make_request(Op::num_keys, {"/a"})));
}

TEST_CASE("store::codec enforces the key and value limits on the length field", "[store][codec]") {
  // Only the opcode and the length have arrived.
  CHECK(error_after("\x02" + u64_bytes(9000)) ==
        "key of 9000 bytes in GET is over the 8192-byte limit (--max-key-bytes)");
  CHECK(error_after(std::string(1, '\0') + u64_bytes(9000)) ==
        "key of 9000 bytes in SET is over the 8192-byte limit (--max-key-bytes)");
  CHECK(still_waiting("\x02" + u64_bytes(8192)));
  const std::string at_limit(8192, 'k');
  CHECK(decode_in_pieces(*encode_request(Dialect::legacy, make_request(Op::get, {at_limit})), {}) ==
        Requests{make_request(Op::get, {at_limit})});

  const std::string set_head = std::string(1, '\0') + u64_bytes(1) + "k";
  CHECK(error_after(set_head + u64_bytes(8 * 1024 * 1024 + 1)) ==
        "value of 8388609 bytes in SET is over the 8388608-byte limit (--max-value-bytes)");
  CHECK(still_waiting(set_head + u64_bytes(8 * 1024 * 1024)));
  const std::string cas_head = "\x01" + u64_bytes(1) + "k" + u64_bytes(0);
  CHECK(error_after(cas_head + u64_bytes(8 * 1024 * 1024 + 1)) ==
        "value of 8388609 bytes in COMPARE_SET is over the 8388608-byte limit "
        "(--max-value-bytes)");

  // Lengths no one could send are refused with 9 bytes fed, not awaited.
  CHECK(error_after("\x02" + u64_bytes(std::uint64_t{1} << 63)) ==
        "key of 9223372036854775808 bytes in GET is over the 8192-byte limit (--max-key-bytes)");
  CHECK(error_after("\x02" + u64_bytes(UINT64_MAX)) ==
        "key of 18446744073709551615 bytes in GET is over the 8192-byte limit (--max-key-bytes)");
  CHECK(error_after(set_head + u64_bytes(UINT64_MAX)) ==
        "value of 18446744073709551615 bytes in SET is over the 8388608-byte limit "
        "(--max-value-bytes)");

  Limits small;
  small.max_key_bytes = 3;
  small.max_value_bytes = 5;
  CHECK(
      error_after(
          *encode_request(Dialect::legacy, make_request(Op::multi_set, {"abc", "abcd"}, {"", ""})),
          small) == "key of 4 bytes in MULTI_SET is over the 3-byte limit (--max-key-bytes)");
  CHECK(error_after(*encode_request(Dialect::legacy, make_request(Op::append, {"a"}, {"123456"})),
                    small) ==
        "value of 6 bytes in APPEND is over the 5-byte limit (--max-value-bytes)");
}

TEST_CASE("store::codec enforces the key-count limit on the count field", "[store][codec]") {
  CHECK(error_after("\x0a" + u64_bytes(128 * 1024 + 1)) ==
        "MULTI_GET with 131073 keys is over the 131072-key limit (--max-keys-per-request)");
  CHECK(error_after("\x04" + u64_bytes(UINT64_MAX)) ==
        "CHECK with 18446744073709551615 keys is over the 131072-key limit "
        "(--max-keys-per-request)");
  CHECK(error_after("\x05" + u64_bytes(std::uint64_t{1} << 63)) ==
        "WAIT with 9223372036854775808 keys is over the 131072-key limit "
        "(--max-keys-per-request)");
  CHECK(error_after("\x0b" + u64_bytes(128 * 1024 + 1)) ==
        "MULTI_SET with 131073 keys is over the 131072-key limit (--max-keys-per-request)");
  CHECK(still_waiting("\x0a" + u64_bytes(128 * 1024)));

  std::string negative = "\x0b";
  put_i64(negative, -1);
  CHECK(error_after(negative) == "MULTI_SET with a negative key count (-1)");
  negative = "\x0b";
  put_i64(negative, INT64_MIN);
  CHECK(error_after(negative) == "MULTI_SET with a negative key count (-9223372036854775808)");

  Limits small;
  small.max_keys_per_request = 2;
  const Request two = make_request(Op::check, {"a", "b"});
  CHECK(decode_in_pieces(*encode_request(Dialect::legacy, two), {}, small) == Requests{two});
  CHECK(error_after(*encode_request(Dialect::legacy, make_request(Op::check, {"a", "b", "c"})),
                    small) == "CHECK with 3 keys is over the 2-key limit (--max-keys-per-request)");
}

TEST_CASE("store::codec enforces the request-size limit as early as it can", "[store][codec]") {
  Limits small;
  small.max_request_bytes = 40;
  // SET: 1 + 8 + key + 8 + value bytes; 1 + 8 + 3 + 8 + 20 = 40 fits exactly.
  const Request fits = make_request(Op::set, {"abc"}, {std::string(20, 'v')});
  CHECK(decode_in_pieces(*encode_request(Dialect::legacy, fits), {}, small) == Requests{fits});
  // One byte more is refused when the value's length arrives.
  CHECK(error_after(std::string(1, '\0') + u64_bytes(3) + "abc" + u64_bytes(21), small) ==
        "SET of at least 41 bytes is over the 40-byte request limit");
  // Fixed-width fields count too: ADD with a 24-byte key needs 41 bytes.
  CHECK(error_after("\x03" + u64_bytes(24) + std::string(24, 'k'), small) ==
        "ADD of at least 41 bytes is over the 40-byte request limit");
  // A count whose keys cannot fit, even if all were empty, fails on the count.
  CHECK(error_after("\x0a" + u64_bytes(4), small) ==
        "MULTI_GET of at least 41 bytes is over the 40-byte request limit");
  CHECK(error_after("\x0b" + u64_bytes(2), small) ==
        "MULTI_SET of at least 41 bytes is over the 40-byte request limit");
  // The magic prefix is part of the request.
  const Request get = make_request(Op::get, {std::string(27, 'k')});  // 4 + 1 + 8 + 27 = 40
  CHECK(decode_in_pieces(*encode_request(Dialect::magic_prefixed, get), {}, small) ==
        Requests{get});
  CHECK(error_after(std::string(k_magic) + "\x02" + u64_bytes(28), small) ==
        "GET of at least 41 bytes is over the 40-byte request limit");

  // The default limit is reached by many keys, none over its own limit: key
  // i ends at 9 + (i + 1) * 8200, past 64 MiB for i = 8184.
  RequestDecoder decoder{Limits{}};
  decoder.feed("\x0a" + u64_bytes(10000));
  const std::string key = u64_bytes(8192) + std::string(8192, 'k');
  std::optional<std::string> error;
  int keys_fed = 0;
  while (!error && keys_fed < 10000) {
    decoder.feed(key);
    ++keys_fed;
    auto next = decoder.next();
    REQUIRE((!next || !*next));
    if (!next) error = next.error().message();
  }
  CHECK(keys_fed == 8185);
  CHECK(error == "MULTI_GET of at least 67117009 bytes is over the 67108864-byte request limit");
}

TEST_CASE("store::codec stays failed after an error", "[store][codec]") {
  RequestDecoder decoder{Limits{}};
  decoder.feed(std::string{'\x2a'});
  auto first = decoder.next();
  REQUIRE_FALSE(first);
  const std::size_t buffered = decoder.buffered_bytes();
  decoder.feed(std::string("\x06\x06", 2));
  CHECK(decoder.buffered_bytes() == buffered);
  for (int i = 0; i < 3; ++i) {
    auto again = decoder.next();
    REQUIRE_FALSE(again);
    CHECK(again.error().code() == ErrorCode::store);
    CHECK(again.error().message() == first.error().message());
  }
}

TEST_CASE("store::codec counts buffered bytes until a request is whole", "[store][codec]") {
  const std::string bytes =
      *encode_request(Dialect::legacy, make_request(Op::set, {"/k"}, {"value"}));
  RequestDecoder decoder{Limits{}};
  decoder.feed(bytes.substr(0, 12));
  CHECK(waiting(decoder));
  CHECK(decoder.buffered_bytes() == 12);
  decoder.feed(bytes.substr(12) + "\x06");
  auto next = decoder.next();
  REQUIRE(next);
  CHECK(decoder.buffered_bytes() == 1);
  CHECK(next_request(decoder) == make_request(Op::num_keys));
  CHECK(decoder.buffered_bytes() == 0);
}

TEST_CASE("store::codec reply helpers write and read each field", "[store][codec]") {
  std::string out;
  put_u8(out, 1);
  put_u32(out, 0x3C85F7CEu);
  put_i64(out, -2);
  put_u64(out, 7);
  put_bytes(out, "abc");
  put_bytes(out, "");
  CHECK(hex_text(out) ==
        "01 ce f7 85 3c fe ff ff ff ff ff ff ff 07 00 00 00 00 00 00 00 "
        "03 00 00 00 00 00 00 00 61 62 63 00 00 00 00 00 00 00 00");

  ReplyReader reader(out);
  CHECK(reader.read_u8() == 1);
  CHECK(reader.read_u32() == 0x3C85F7CEu);
  CHECK(reader.read_i64() == -2);
  CHECK(reader.read_u64() == 7u);
  CHECK(reader.read_bytes() == "abc");
  CHECK(reader.read_bytes() == "");
  CHECK(reader.consumed() == out.size());
  CHECK_FALSE(reader.read_u8());
  CHECK(reader.consumed() == out.size());
}

TEST_CASE("store::codec reply reader leaves partial fields unread", "[store][codec]") {
  std::string out;
  put_u8(out, 0);
  put_bytes(out, "hello");

  const std::string partial = out.substr(0, out.size() - 2);  // two bytes of "hello" missing
  ReplyReader reader(partial);
  CHECK(reader.read_u8() == 0);
  CHECK(reader.consumed() == 1);
  CHECK_FALSE(reader.read_bytes());
  CHECK(reader.consumed() == 1);
  CHECK(reader.read_u64() == 5u);  // the length alone is whole
  CHECK(reader.consumed() == 9);

  const std::string short_length = out.substr(0, 5);
  ReplyReader short_reader(short_length);
  CHECK(short_reader.read_u8() == 0);
  CHECK_FALSE(short_reader.read_bytes());
  CHECK_FALSE(short_reader.read_u64());
  CHECK_FALSE(short_reader.read_i64());
  CHECK(short_reader.read_u32() == 5u);  // 4 bytes are there
  CHECK(short_reader.consumed() == 5);

  ReplyReader empty("");
  CHECK_FALSE(empty.read_u8());
  CHECK_FALSE(empty.read_u32());
  CHECK(empty.consumed() == 0);
}
