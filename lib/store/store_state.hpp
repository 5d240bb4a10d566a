// The store's data and its semantics, without sockets: keys and values,
// decimal counters, queues, and who is waiting for what. The server feeds it
// decoded requests and sends the bytes it returns; tests drive it directly.
//
// Semantics follow PyTorch's servers (PROTOCOL.md), taking the superset where
// they differ: COMPARE_SET wakes waiters, GET of a missing key answers an
// empty value instead of dropping the connection.
#pragma once

#include "store/codec.hpp"
#include "store/protocol.hpp"

#include <cstdint>
#include <deque>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <utility>
#include <vector>

namespace gangrun::store {

using ConnectionId = std::uint64_t;

// What handling one request asks the server to do.
struct Effects {
  // Bytes for connections that were waiting (WAIT, BARRIER; a blocked queue
  // pop is a WAIT on the queue's key) and are now released, in the order they were released. A
  // wakeup may be for the requesting connection itself; the server sends wakeups before reply,
  // which keeps each connection's replies in request order.
  std::vector<std::pair<ConnectionId, std::string>> wakeups;
  // Bytes to send to the requesting connection (empty for SET and friends,
  // and for a WAIT that now waits).
  std::string reply;
  // Set when the request must end its connection (a counter that is not a
  // number, the store's byte limit, a reply over the reply limit): the
  // reason is logged and the connection closed after sending what is above.
  std::optional<std::string> close_reason;
  // Set with close_reason when a write was refused for stored bytes.
  bool refused_for_bytes = false;
  // A trusted writer's write crossed a byte limit and was applied anyway
  // (Writer::trusted): why, for the log.
  std::optional<std::string> overrun;
};

// Bytes held by the keys that one client address wrote last, against
// Limits::max_bytes_per_address. Shared by that address's connections and
// by the stored entries charged to it, so it lives while either does.
struct ByteAccount {
  std::size_t bytes = 0;
};

// Who writes, for the byte limits; the server makes one per connection.
struct Writer {
  // Charged with each entry this writer stores, whole (an APPEND or a SET
  // moves the entry's whole size to its last writer), until it is
  // overwritten, deleted, popped or dropped with its round. nullptr: no one.
  std::shared_ptr<ByteAccount> account;
  // A protected connection's (Server::protect): its writes are never
  // refused for bytes; one past every limit is applied, and Effects::overrun
  // says which limit it crossed.
  bool trusted = false;
  // How far past max_total_bytes this write may take the store (KeySpaces:
  // Limits::reserved_run_wide_bytes for a trusted writer's run-wide key).
  std::size_t reserve = 0;
};

// Bytes stored by several StoreStates that share one max_total_bytes (the
// key spaces of one server, key_spaces.hpp).
struct StoredTotal {
  std::size_t bytes = 0;
};

// True when a reply of `bytes` to op fits limits.max_reply_bytes; else sets
// effects.close_reason (the reply is never built). For every space's replies.
bool reply_fits(const Limits& limits, Op op, std::size_t bytes, Effects& effects);
// The LIST_KEYS reply naming keys (sorted here), or the close reason when it
// would not fit.
void reply_key_list(const Limits& limits, std::vector<std::string_view> keys, Effects& effects);

class StoreState {
 public:
  // total: the tally this state adds its bytes to and checks against
  // limits.max_total_bytes; nullptr: a tally of its own.
  explicit StoreState(Limits limits, std::shared_ptr<StoredTotal> total = nullptr);
  // Takes its bytes off the shared tally.
  ~StoreState();
  StoreState(const StoreState&) = delete;
  StoreState& operator=(const StoreState&) = delete;

  // Applies one request that arrived on connection `from`, which speaks
  // `dialect`. In the legacy dialect a request arriving while the connection
  // still has a WAIT pending cancels that wait silently: a 1.13 client only
  // sends one after its wait timed out on its side (it never sends
  // CANCEL_WAIT), and the late STOP_WAITING would be misread as the reply to
  // its next request.
  // writer: whom the bytes it stores are charged to, and which byte limits
  // hold for it (the default: no account, no reserve, refused at the limit).
  void handle(ConnectionId from, Dialect dialect, const Request& request, Effects& effects,
              const Writer& writer = Writer{});

  // The connection is gone: forget every wait it had registered.
  void disconnect(ConnectionId connection);

  // Drops every key, queue and waiter (a fresh store).
  void clear();
  // Drops every key and queue but keeps the waiters: they go on waiting for
  // keys that only a later write to this state can bring back.
  void drop_keys();

  std::size_t key_count() const;     // what GETNUMKEYS answers
  std::size_t stored_bytes() const;  // keys + values + queued items of this state
  bool is_waiting(ConnectionId connection) const;
  // Appends the names of the stored values (what LIST_KEYS lists).
  void append_key_names(std::vector<std::string_view>& names) const;
  // The value stored at key; nullopt when there is none (or it is a queue).
  std::optional<std::string> value_of(const std::string& key) const;

 private:
  // Waiting, in short (store_state.cpp has the details): a pending WAIT or
  // BARRIER is one Waiter per connection, counting the keys it still needs,
  // plus one Registration in the list of each of those keys. A write of a key
  // moves its whole list out and decrements each live waiter once, so
  // releasing K waiters costs O(K). Cancelling erases only the Waiter; the
  // Registrations it leaves behind are recognised as stale by their ticket
  // and compacted away once they are half of a key's list.
  struct Registration {
    ConnectionId connection = 0;
    std::uint64_t ticket = 0;  // the Waiter it belongs to, unless stale
  };
  struct KeyWaiters {
    std::deque<Registration> registrations;  // oldest first
    std::size_t stale = 0;                   // at most this many are stale
  };
  struct Waiter {
    std::uint64_t ticket = 0;
    std::size_t missing = 0;        // writes of its keys still needed
    std::vector<std::string> keys;  // distinct keys it is registered under
  };

  // A stored value or queued item, and the account it is charged to.
  struct Entry {
    std::string bytes;
    std::shared_ptr<ByteAccount> owner;
  };
  struct Queue {
    std::deque<Entry> items;
    std::shared_ptr<ByteAccount> key_owner;  // charged with the key's bytes
  };
  // What a write changes: this state's bytes once it is done, and what the
  // writer's account gains and loses by it (entries it takes over, entries
  // of its own it replaces).
  struct Change {
    std::size_t after = 0;
    std::size_t gained = 0;
    std::size_t lost = 0;
  };

  // One handler per operation family; each appends to effects.
  void handle_write(const Request& request, const Writer& writer, Effects& effects);
  void handle_read(const Request& request, Effects& effects);
  void handle_counter(ConnectionId from, const Request& request, const Writer& writer,
                      Effects& effects);
  void handle_queue(const Request& request, const Writer& writer, Effects& effects);
  void handle_wait(ConnectionId from, const Request& request, Effects& effects);

  bool exists(const std::string& key) const;
  // The change of replacing key's value with one of value_size bytes.
  Change replacing(const std::string& key, std::size_t value_size, const Writer& writer) const;
  // True when the change keeps the shared tally within max_total_bytes (plus
  // the writer's reserve) and the writer's account within
  // max_bytes_per_address, or only shrinks what crosses them. Otherwise a
  // trusted writer's change is let through with effects.overrun set, and any
  // other's refused with effects.close_reason naming the limit and its option.
  bool admit(const Change& change, const Writer& writer, Effects& effects) const;
  // Keep stored_bytes_, the shared tally and the entries' accounts in step.
  void add_bytes(std::size_t bytes, const std::shared_ptr<ByteAccount>& owner);
  void remove_bytes(std::size_t bytes, const std::shared_ptr<ByteAccount>& owner);
  // Stores value at key charged to owner, keeping every tally exact; no
  // limit check, no wakeups.
  void put_value(const std::string& key, std::string value,
                 const std::shared_ptr<ByteAccount>& owner);
  // The counter at key plus delta, stored as decimal text (ADD, BARRIER);
  // nullopt with close_reason set when the value is not a number, the sum
  // overflows, or the store is full.
  std::optional<std::int64_t> add_to_counter(const std::string& key, std::int64_t delta,
                                             const Writer& writer, Effects& effects);

  void register_waiter(ConnectionId connection, std::vector<std::string> keys);
  void cancel_wait(ConnectionId connection);
  void wake_all(const std::string& key, Effects& effects);
  void wake_oldest(const std::string& key, Effects& effects);
  void release(std::unordered_map<ConnectionId, Waiter>::iterator waiter, Effects& effects);
  bool is_live(const Registration& registration) const;
  void drop_stale(std::unordered_map<std::string, KeyWaiters>::iterator key_waiters);

  Limits limits_;
  std::unordered_map<std::string, Entry> values_;
  // Only non-empty queues are kept, so "a queue exists" means it has items.
  std::unordered_map<std::string, Queue> queues_;
  std::unordered_map<std::string, KeyWaiters> waiters_by_key_;
  std::unordered_map<ConnectionId, Waiter> waiters_;
  std::uint64_t next_ticket_ = 0;
  std::size_t stored_bytes_ = 0;
  std::shared_ptr<StoredTotal> total_;
};

}  // namespace gangrun::store
