// The vocabulary of PyTorch's c10d TCPStore wire protocol, shared by the
// codec, the server and the client. PROTOCOL.md beside this file describes
// the bytes; this header names them.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace gangrun::store {

// How a connection numbers its opcodes; decided once per connection from its
// first bytes (codec.hpp) and never changed.
enum class Dialect {
  // PyTorch 1.x/2.0 numbering (SET=0 .. WATCH_KEY=7, DELETE_KEY=8) plus the
  // 2.1-era APPEND=9, MULTI_GET=10, MULTI_SET=11, CANCEL_WAIT=12.
  legacy,
  // The same numbering, but every request is preceded by the 4 magic bytes
  // (a short-lived 2023 variant; accepted, never produced by our client).
  magic_prefixed,
  // PyTorch 2.x: VALIDATE=0 + magic first, then SET=1 .. BARRIER=18.
  validated,
};

// One operation, independent of its number in either dialect.
enum class Op {
  validate,
  set,
  compare_set,
  get,
  add,
  check,
  wait,
  num_keys,
  watch_key,
  delete_key,
  append,
  multi_get,
  multi_set,
  cancel_wait,
  ping,
  queue_push,
  queue_pop,
  queue_len,
  list_keys,
  barrier,
};

// The opcode byte's meaning in a dialect; nullopt for a byte that names
// nothing there (the connection is then closed).
std::optional<Op> op_from_byte(Dialect dialect, std::uint8_t byte);
// The byte that names op in dialect; nullopt when the dialect lacks it
// (watch_key in validated; validate, ping, queues, list_keys, barrier in legacy).
std::optional<std::uint8_t> byte_for_op(Dialect dialect, Op op);
// "SET", "MULTI_GET", ... for log lines and errors.
std::string_view op_name(Op op);

// VALIDATE's argument; on the wire (little-endian) CE F7 85 3C.
inline constexpr std::uint32_t k_validate_magic = 0x3C85F7CEu;

// One-byte reply values.
inline constexpr std::uint8_t k_check_ready = 0;
inline constexpr std::uint8_t k_check_not_ready = 1;
inline constexpr std::uint8_t k_wait_stop_waiting = 0;
inline constexpr std::uint8_t k_wait_canceled = 1;
inline constexpr std::uint8_t k_watch_callback_registered = 3;

// Bounds that keep one misbehaving client from hurting the others. Breaking
// a per-request bound closes that connection; the store-wide bounds refuse
// the write that would cross them (and close its connection), unless it
// comes from a protected connection (server.hpp).
struct Limits {
  std::size_t max_key_bytes = 8 * 1024;              // one key
  std::size_t max_value_bytes = 8 * 1024 * 1024;     // one value, expected or desired
  std::size_t max_keys_per_request = 128 * 1024;     // CHECK, WAIT, MULTI_GET, MULTI_SET
  std::size_t max_request_bytes = 64 * 1024 * 1024;  // one whole request as encoded
  std::size_t max_total_bytes = 1024 * 1024 * 1024;  // keys + values + queued items
  // Room past max_total_bytes that only the node agents' run-wide keys
  // ("gangrun/run/...", written by connections marked with Server::protect)
  // may use: a store that clients filled still takes every agent's writes.
  // The rendezvous' keys of a whole run stay far below it.
  std::size_t reserved_run_wide_bytes = 64 * 1024 * 1024;
  // What the keys last written from one peer address may hold together
  // (each key, value or queued item is charged whole to the address that
  // wrote it last; protected connections' writes to none), so that one
  // client cannot fill max_total_bytes alone. Every rank of a node writes
  // from one address; a job's own keys stay far below this. 0: no quota.
  std::size_t max_bytes_per_address = 256 * 1024 * 1024;
  std::size_t max_connections = 16 * 1024;  // open client connections
  // Open client connections from one peer address, those marked with
  // Server::protect aside; a newcomer over it is refused. Every rank of a
  // node connects from one address, a few connections each: this stays far
  // above a node's worth, while no one host can fill max_connections. 0: no cap.
  std::size_t max_connections_per_address = 2048;
  // Replies queued for a client that does not read them; past this the server
  // stops reading that connection's requests until the client catches up.
  std::size_t max_pending_reply_bytes = 16 * 1024 * 1024;
  // One reply: a request whose answer would be larger (a MULTI_GET naming
  // one big value many times, a LIST_KEYS of a huge store) is refused before
  // the answer is built, and its connection closed. Keep it above
  // max_value_bytes, so that every value can be read back.
  std::size_t max_reply_bytes = 64 * 1024 * 1024;
  // Buffer memory of all connections together: requests being received and
  // replies not yet sent. Past it the connection holding the most is closed.
  // Keep it above what one connection may hold (about 2 * max_request_bytes
  // + max_pending_reply_bytes + max_reply_bytes).
  std::size_t max_buffered_bytes = 256 * 1024 * 1024;
};

}  // namespace gangrun::store
