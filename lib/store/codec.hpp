// The pure encoder/decoder of TCPStore messages: no sockets, no clocks.
//
// Requests: RequestDecoder reassembles them from bytes as they arrive (split
// anywhere, several in one read), detecting the dialect from the first bytes
// of the connection; encode_request writes one for a client. Replies are
// written with the put_* helpers and read back by ReplyReader.
//
// All integers are little-endian fixed-width (PyTorch writes host order and
// every platform it runs on is little-endian); strings and byte blobs are a
// u64 length then the bytes.
#pragma once

#include "store/protocol.hpp"
#include "util/error.hpp"

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace gangrun::store {

// One decoded request. Which fields are used depends on op:
//   set, append, queue_push:   keys[0], values[0]
//   compare_set:               keys[0], values[0] = expected, values[1] = desired
//   get, delete_key, watch_key, queue_pop, queue_len: keys[0]
//   add:                       keys[0], number = delta
//   barrier:                   keys[0], number = world size
//   check, wait, multi_get:    keys
//   multi_set:                 keys[i] with values[i]
//   validate, ping:            word (magic, nonce)
//   num_keys, cancel_wait, list_keys: nothing
struct Request {
  Op op = Op::set;
  std::vector<std::string> keys;
  std::vector<std::string> values;
  std::int64_t number = 0;
  std::uint32_t word = 0;

  bool operator==(const Request&) const = default;
};

// A Request with its fields in declaration order (the struct has no
// constructor so that it stays an aggregate).
Request make_request(Op op, std::vector<std::string> keys = {},
                     std::vector<std::string> values = {}, std::int64_t number = 0,
                     std::uint32_t word = 0);

class RequestDecoder {
 public:
  explicit RequestDecoder(Limits limits) : limits_(limits) {}

  // Appends bytes received from the connection; once the decoder has failed
  // they are dropped (the connection is being closed anyway).
  void feed(std::string_view bytes);

  // The next whole request, nullopt when more bytes are needed. An error
  // (ErrorCode::store) means the connection must be closed: an unknown
  // opcode, a bad VALIDATE, a length or count over a limit (found as soon as
  // the length field itself has arrived, before its bytes), or a request
  // larger than max_request_bytes. After an error the decoder stays failed.
  Expected<std::optional<Request>> next();

  // nullopt until the first bytes decided it.
  std::optional<Dialect> dialect() const { return dialect_; }
  // Bytes received and not yet consumed by a returned request.
  std::size_t buffered_bytes() const { return buffer_.size() - consumed_; }
  // Memory held for them: the buffer's capacity, plus the fields of the
  // pending request already copied out of it.
  std::size_t held_bytes() const { return buffer_.capacity() + (pending_ ? pending_->parsed : 0); }

 private:
  // The request being reassembled. It is kept between calls, field by field,
  // so that a large request arriving in small pieces is parsed once rather
  // than once per piece. Offsets count from the request's first byte, which
  // is buffer_[consumed_].
  struct Pending {
    Request request;
    std::size_t parsed = 0;   // bytes already decoded into request
    std::size_t field = 0;    // index of the next field after the opcode
    std::uint64_t count = 0;  // keys announced by CHECK, WAIT, MULTI_GET, MULTI_SET
  };

  Expected<std::optional<Request>> decode();
  Expected<bool> detect_dialect();
  Expected<bool> start_request();
  Expected<bool> read_fields();

  Limits limits_;
  std::optional<Dialect> dialect_;
  std::string buffer_;
  std::size_t consumed_ = 0;
  std::optional<Error> failed_;
  std::optional<Pending> pending_;
  // Buffered bytes the pending request needs before decoding can go on.
  std::size_t needed_ = 0;
  std::size_t requests_returned_ = 0;
};

// The bytes of request in dialect (legacy or validated), as a PyTorch client
// would send them; magic_prefixed puts the 4 magic bytes in front. Fails with
// ErrorCode::usage if the dialect lacks the op or the request's keys and
// values do not have the shape the op takes (see Request).
Expected<std::string> encode_request(Dialect dialect, const Request& request);

// Reply writers: append one field to out.
void put_u8(std::string& out, std::uint8_t value);
void put_u32(std::string& out, std::uint32_t value);
void put_i64(std::string& out, std::int64_t value);
void put_u64(std::string& out, std::uint64_t value);
void put_bytes(std::string& out, std::string_view bytes);  // u64 length + bytes

// Reads reply fields from bytes a client has received so far. Each read_*
// returns nullopt without consuming anything when the field is not complete
// yet; consumed() says how many bytes whole fields took.
class ReplyReader {
 public:
  explicit ReplyReader(std::string_view bytes) : bytes_(bytes) {}
  std::optional<std::uint8_t> read_u8();
  std::optional<std::uint32_t> read_u32();
  std::optional<std::int64_t> read_i64();
  std::optional<std::uint64_t> read_u64();
  std::optional<std::string> read_bytes();  // u64 length + bytes
  std::size_t consumed() const { return consumed_; }

 private:
  std::string_view bytes_;
  std::size_t consumed_ = 0;
};

}  // namespace gangrun::store
