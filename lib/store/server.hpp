// The TCP store server on Boost.Asio. Single-threaded: every handler runs on
// the io_context given to start(), which the owner drives (gangrun's one
// event loop during a launch, or `gangrun store serve`'s own loop).
//
// Each connection reads into a 256-byte inbox, and through one shared scratch
// buffer when more is waiting, so an idle connection costs a socket and well
// under a kilobyte. Connections are accepted non-blocking (accept4) and
// watched in an epoll set of the server's own (socket_watch.hpp), registered
// once: a connection is read only when it is readable, which spares a storm
// of clients the syscalls Asio's sockets would make per connection (an
// ioctl, a read failing with EAGAIN, epoll_ctl at every close).
// A connection that breaks a limit or sends bytes that are not a request is
// closed and logged (spdlog warning, at most 10 a second of each kind, the
// rest counted in one line) and nothing else happens; one that stops reading
// its replies stops being read once max_pending_reply_bytes are queued for
// it, so it can neither grow the server's memory nor stall others. What all
// connections buffer together is held under max_buffered_bytes by closing the
// connection that holds the most. An exception while serving a connection
// (std::bad_alloc) closes that connection; no handler of the server lets one
// reach the io_context.
//
// Connections are grouped by the peer's address (without the port; an IPv4
// client and its IPv4-mapped IPv6 form are one address), so that one host
// cannot take the whole table. Protected connections (protect()) belong to
// no group: they are never closed to admit a newcomer, and count against no
// per-address cap.
//
// Per address, limits.max_connections_per_address bounds the *silent*
// connections: those of which no well-formed request (PyTorch's VALIDATE
// handshake, a PING, any request the codec reads) has been served since they
// connected. A connection that spoke once is a client and never counts
// again, however long it then idles (a worker's TCPStore idles for hours
// during training; a recency window would let a storm of fresh sockets push
// it out). A newcomer from an address that holds the cap in silent
// connections is admitted, and the address's connection silent the longest
// is closed for it: the newcomer cannot have spoken yet and may be one of
// the job's own workers (every rank of a node connects from one address), so
// idle sockets from that address never lock the workers out, and the
// address's clients that spoke are never touched. A client that spoke on
// every socket escapes the cap, and is held by the next rule.
//
// At max_connections a newcomer takes the place of a connection of the
// address that holds the most: its newest silent connection, else the
// newest idle one (nothing pending either way) among its 64 newest, else its
// newest even with a WAIT or BARRIER pending. A storm thus eats its own
// tail: the connections an address opened before it (a node agent's long
// wait, its workers') survive even unprotected. A newcomer is refused only
// when every open connection is protected.
//
// Stored bytes (limits.max_total_bytes and its neighbours in protocol.hpp;
// key_spaces.hpp says how they are counted): a write that would cross a
// limit is refused and its connection closed with a warning naming the
// limit and the option that raises it, unless the connection is protected:
// a protected connection's writes are never refused or closed for bytes.
// Its run-wide keys may use limits.reserved_run_wide_bytes on top of
// max_total_bytes, which no other client can take, and a protected write
// past even that is applied and logged (ServerStats::protected_overruns).
//
// Each address is listened on through enough SO_REUSEPORT queues, each with
// the largest backlog the kernel allows, to hold twice max_connections, and
// the queues are drained whenever they are readable and also every few reads
// while the server is busy: a storm of clients connecting at once to a
// server short of CPU then waits in the queues instead of being dropped.
#pragma once

#include "store/keep_alive.hpp"
#include "store/protocol.hpp"
#include "store/store_state.hpp"
#include "util/error.hpp"

#include <boost/asio/io_context.hpp>

#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

namespace gangrun::store {

struct ServerSettings {
  // Name or address literal. Every address it resolves to is bound, all on
  // one port; "::" binds every interface for IPv6 and IPv4 (dual stack).
  std::string host = "127.0.0.1";
  int port = 0;  // 0: an ephemeral port, the same one on every address
  Limits limits;
  // Raise this process's open-file soft limit to its hard limit
  // (util/open_file_limit.hpp, which keeps the user's own for children), so
  // that max_connections can be reached. Off where the owner raised it
  // already, or must not (unit tests).
  bool raise_open_file_limit = true;
  // Clients expected to connect at once, which sizes the SO_REUSEPORT listen
  // queues (each socket costs a launch time); 0: limits.max_connections.
  std::size_t expected_clients = 0;
  // Set on every accepted connection when given (a multi-node run's store,
  // so that a cut-off agent is seen as gone).
  std::optional<KeepAlive> keep_alive;
  // Keys only the process hosting the server writes (through publish()): a
  // client request that would change a key starting with one of these (SET,
  // COMPARE_SET, ADD, APPEND, MULTI_SET, DELETE_KEY, QUEUE_PUSH, QUEUE_POP,
  // BARRIER) is not applied, and its connection is closed with a warning
  // naming the peer and the key (rate-limited). Reading them (GET, CHECK,
  // WAIT, MULTI_GET, ...) stays allowed. A multi-node run's store guards its
  // coordinator's keys this way, so that no worker can forge a round's end.
  std::vector<std::string> publish_only_prefixes;
};

// What the process hosting the server learns of it: the rendezvous of a
// multi-node run (rendezvous/coordinator.hpp) follows the agents' keys and
// connections this way. Each runs from a handler posted to the server's
// io_context after the request or the close, never inside the server's own
// handling, and never after the server is gone.
struct ServerEvents {
  // A connection stored a run-wide key (SET, COMPARE_SET, ADD, ...):
  // the value now stored.
  std::function<void(ConnectionId from, const std::string& key, const std::string& value)>
      run_key_set;
  // A connection closed: the client left, its socket failed (a keep-alive
  // timeout), or the server closed it.
  std::function<void(ConnectionId id)> connection_closed;
};

struct ServerStats {
  std::size_t connections = 0;  // open now
  // Keys of every space: the current round, the run-wide space, and what
  // stragglers wrote into earlier rounds (key_spaces.hpp).
  std::size_t keys = 0;
  std::size_t run_wide_keys = 0;           // of those, run-wide ones
  std::uint64_t round = 0;                 // the current round
  std::size_t stored_bytes = 0;            // against limits.max_total_bytes
  std::size_t buffered_bytes = 0;          // against limits.max_buffered_bytes
  std::uint64_t requests = 0;              // served since start
  std::uint64_t connections_accepted = 0;  // since start
  std::uint64_t bytes_received = 0;        // from every client, since start
  std::uint64_t bytes_sent = 0;            // replies, since start
  // Over max_connections with nothing to reclaim.
  std::uint64_t connections_refused = 0;
  std::uint64_t connections_closed_for_errors = 0;  // a limit, bad bytes, a failure
  // Closed to admit a newcomer: at max_connections, or silent ones over
  // max_connections_per_address (those are silent_connections_replaced too).
  std::uint64_t connections_reclaimed = 0;
  std::uint64_t silent_connections_replaced = 0;
  std::uint64_t writes_refused = 0;  // of publish_only_prefixes' keys
  // Over max_total_bytes or max_bytes_per_address (the writer was closed).
  std::uint64_t writes_refused_for_bytes = 0;
  // Protected connections' writes applied past those limits (and the reserve).
  std::uint64_t protected_overruns = 0;
};

class Server {
 public:
  // Binds and listens (SO_REUSEADDR, backlog net.core.somaxconn, TCP_NODELAY
  // and any keep-alive set on the listeners, from which Linux copies them to
  // every accepted socket), raising the open-file limit if settings ask. Fails
  // with ErrorCode::store whose message names host:port and the reason (in
  // use, not local, ...): a port held by anything else is refused, even by
  // another SO_REUSEPORT group of the same user.
  static Expected<std::unique_ptr<Server>> start(boost::asio::io_context& io,
                                                 ServerSettings settings);
  ~Server();  // closes the listeners and every connection
  Server(const Server&) = delete;
  Server& operator=(const Server&) = delete;

  int port() const;
  // "127.0.0.1:29500", "[::1]:29500": what it listens on.
  std::vector<std::string> endpoints() const;

  // Starts round `round` (key_spaces.hpp): connections accepted from now
  // on belong to it and see only its keys; the keys of every earlier round
  // are deleted at once, while their connections stay open, isolated in
  // their own emptied space. Keys under k_run_wide_prefix ("gangrun/run/")
  // are kept and seen from every round. The server starts in round 0.
  void begin_round(std::uint64_t round);
  std::uint64_t round() const;

  ServerStats stats() const;
  // This host's address (numeric, IPv4-mapped ones as IPv4) that the last
  // client from another host connected to: the address other nodes reach
  // it at. nullopt until such a client came.
  std::optional<std::string> address_reached_from_outside() const;
  // When a client last sent a request about a key of a round (not a
  // run-wide one): the workers' traffic, which the hang watch counts as
  // progress. nullopt before the first.
  std::optional<std::chrono::steady_clock::time_point> last_round_request() const;

  // Follows the run-wide keys and the connections (replacing earlier events).
  void observe(ServerEvents events);
  // Stores a run-wide key as a client's SET would, waking whoever waits for
  // it; keys outside the run-wide space are ignored. publish_only_prefixes
  // do not apply: this is how their keys are written. Written as a protected
  // connection's would be: from the reserve, never refused for bytes.
  void publish(const std::string& key, const std::string& value);
  // Deletes a run-wide key as a client's DELETE_KEY would, whoever wrote it
  // (the coordinator's keys, and the asks it has taken); others are ignored.
  void unpublish(const std::string& key);

  // Marks connection `id` as a node agent's (the rendezvous' coordinator
  // learns its agents' connections from ServerEvents::run_key_set): the
  // server never closes it to admit a newcomer, it counts against no
  // per-address cap, and its writes are never refused or closed for stored
  // bytes (its run-wide keys draw on limits.reserved_run_wide_bytes; the
  // keys it wrote count against no address's max_bytes_per_address). It
  // still counts against max_connections, and is still closed for breaking
  // a per-request limit (a key, a value, a request too large; bad bytes).
  // Lasts until the connection closes; an unknown or closed id is ignored.
  // Call on the server's thread, as soon as the connection is known: what it
  // stored before is charged as any client's was.
  void protect(ConnectionId id);

  // Closes connection `id` as a limit would (a warning with reason; its
  // waits are forgotten, ServerEvents::connection_closed follows). The
  // rendezvous drops an agent whose heartbeats stopped this way. An unknown
  // or closed id is ignored. Call on the server's thread.
  void disconnect(ConnectionId id, const std::string& reason);

 private:
  struct Impl;
  explicit Server(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

}  // namespace gangrun::store
