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
#include <map>
#include <set>
#include <string>
#include <unordered_map>
#include <utility>
#include <vector>

namespace gangrun::store {

using ConnectionId = std::uint64_t;

// What handling one request asks the server to do.
struct Effects {
  // Bytes for connections that were waiting (WAIT, BARRIER, a blocked queue
  // pop) and are now released, in the order they were released. A wakeup may
  // be for the requesting connection itself; the server sends wakeups before
  // reply, which keeps each connection's replies in request order.
  std::vector<std::pair<ConnectionId, std::string>> wakeups;
  // Bytes to send to the requesting connection (empty for SET and friends,
  // and for a WAIT that now waits).
  std::string reply;
  // Set when the request must end its connection (a counter that is not a
  // number, the store's byte limit, an op the server does not serve): the
  // reason is logged and the connection closed after sending what is above.
  std::optional<std::string> close_reason;
};

class StoreState {
 public:
  explicit StoreState(Limits limits) : limits_(limits) {}

  // Applies one request that arrived on connection `from`, which speaks
  // `dialect`. In the legacy dialect a request arriving while the connection
  // still has a WAIT pending cancels that wait silently: a 1.13 client only
  // sends one after its wait timed out on its side (it never sends
  // CANCEL_WAIT), and the late STOP_WAITING would be misread as the reply to
  // its next request.
  void handle(ConnectionId from, Dialect dialect, const Request& request, Effects& effects);

  // The connection is gone: forget every wait it had registered.
  void disconnect(ConnectionId connection);

  // Drops every key, queue and waiter (a fresh store).
  void clear();

  std::size_t key_count() const;     // what GETNUMKEYS answers
  std::size_t stored_bytes() const;  // keys + values + queued items, against max_total_bytes
  bool is_waiting(ConnectionId connection) const;

 private:
  // Implementation state; see store_state.cpp.
  struct Waiter {
    std::size_t missing = 0;        // keys still absent (WAIT) 
    std::int64_t barrier_target = 0;  // BARRIER: release when the counter reaches it
    std::vector<std::string> keys;  // the keys it is registered under
    bool queue_pop = false;         // a blocked pop: released by one QUEUE_PUSH
  };

  Limits limits_;
  std::unordered_map<std::string, std::string> values_;
  std::unordered_map<std::string, std::deque<std::string>> queues_;
  std::unordered_map<std::string, std::vector<ConnectionId>> waiters_by_key_;
  std::unordered_map<ConnectionId, Waiter> waiters_;
  std::size_t stored_bytes_ = 0;
};

}  // namespace gangrun::store
