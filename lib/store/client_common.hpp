// What the blocking client (client.hpp) and the asynchronous one
// (async_client.hpp) share: reading replies, the handshake of the validated
// dialect, the pause between connection attempts, and the texts of their
// errors. Internal to the store module.
#pragma once

#include "store/codec.hpp"
#include "store/protocol.hpp"
#include "util/error.hpp"

#include <chrono>
#include <cstdint>
#include <optional>
#include <random>
#include <string>
#include <string_view>
#include <vector>

namespace gangrun::store {

// A reply parser consumes whole fields from a reader: nullopt while the reply
// is incomplete (nothing consumed), an error for a reply no server would send
// (a field claiming more than 1 GiB, a negative count, an unknown reply byte).
template <typename T>
using Parsed = Expected<std::optional<T>>;

// Unparsed reply bytes a client holds at most: the largest field read_blob
// accepts (1 GiB) plus a read's worth. More is a broken or hostile server.
inline constexpr std::size_t k_max_unparsed_reply_bytes = (std::size_t{1} << 30) + 64 * 1024;

Parsed<std::string> read_blob(ReplyReader& reader);
Parsed<std::int64_t> read_i64(ReplyReader& reader);
Parsed<std::uint32_t> read_u32(ReplyReader& reader);
Parsed<std::uint8_t> read_u8(ReplyReader& reader);
// CHECK's reply: READY is true, NOT_READY false.
Parsed<bool> read_check(ReplyReader& reader);
// DELETE_KEY's reply: whether the key existed.
Parsed<bool> read_deleted(ReplyReader& reader);
// MULTI_GET's reply: count values.
Parsed<std::vector<std::string>> read_blobs(ReplyReader& reader, std::size_t count);
// LIST_KEYS's reply: a count, then that many keys.
Parsed<std::vector<std::string>> read_key_list(ReplyReader& reader);
// WAIT's reply: STOP_WAITING, anything else is an error.
Parsed<bool> read_stop_waiting(ReplyReader& reader);

// The first bytes of a validated connection, VALIDATE then PING(nonce), as
// PyTorch 2.x sends them in one write; the reply is the nonce (read_u32).
std::string handshake_bytes(std::uint32_t nonce);
// The error for a PING answered with another nonce.
Error handshake_mismatch(const std::string& where, std::uint32_t nonce, std::uint32_t echo);
// An error met during the handshake, explained.
Error handshake_failed(const Error& error);

// The request's bytes in dialect; an op the dialect lacks is a usage error
// naming the dialect.
Expected<std::string> encode_for(Dialect dialect, const Request& request);

// Pauses between connection attempts: exponential from 2 ms to 1 s, each
// drawn at random from [delay/2, delay] so that clients started together
// spread out. The first pauses are short because agents started together
// (srun starts a step's tasks within milliseconds) find the head's store
// listening a few milliseconds after them.
class ConnectBackoff {
 public:
  ConnectBackoff() : rng_(std::random_device{}()) {}
  std::chrono::milliseconds next_pause();

 private:
  std::chrono::milliseconds delay_{2};
  std::minstd_rand rng_;
};

// Keys readably, at most ten and each cut at 100 bytes.
std::string keys_text(const std::vector<std::string>& keys);

// The errors both clients give, each with ErrorCode::store and naming the
// store at `where` ("host:port").
Error timed_out_error(const Request& request, const std::string& where,
                      std::chrono::milliseconds budget);
Error closed_error(Op op, const std::string& where);
Error failed_error(Op op, const std::string& where, const std::string& reason);
Error malformed_reply_error(Op op, const std::string& where, const std::string& what);
Error unreachable_error(const std::string& where, std::chrono::milliseconds waited,
                        const std::string& last_problem);

}  // namespace gangrun::store
