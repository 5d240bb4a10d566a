// The TCP store server on Boost.Asio. Single-threaded: every handler runs on
// the io_context given to start(), which the owner drives (gangrun's one
// event loop during a launch, or `gangrun store serve`'s own loop).
//
// Each connection reads into a 256-byte inbox, and through one shared scratch
// buffer when more is waiting, so an idle connection costs a socket and well
// under a kilobyte.
// A connection that breaks a limit or sends bytes that are not a request is
// closed and logged (spdlog warning) and nothing else happens; one that stops
// reading its replies stops being read once max_pending_reply_bytes are
// queued for it, so it can neither grow the server's memory nor stall others.
#pragma once

#include "store/protocol.hpp"
#include "util/error.hpp"

#include <boost/asio/io_context.hpp>

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

namespace gangrun::store {

struct ServerSettings {
  // Name or address literal. Every address it resolves to is bound, all on
  // one port; "::" binds every interface for IPv6 and IPv4 (dual stack).
  std::string host = "127.0.0.1";
  int port = 0;  // 0: an ephemeral port, the same one on every address
  Limits limits;
  // Raise this process's open-file soft limit to its hard limit, so that
  // max_connections can be reached. Off where children inherit the limit
  // (a launch's workers must get the user's limits, not the store's).
  bool raise_open_file_limit = true;
};

struct ServerStats {
  std::size_t connections = 0;            // open now
  std::size_t keys = 0;                   // GETNUMKEYS
  std::size_t stored_bytes = 0;           // against limits.max_total_bytes
  std::uint64_t requests = 0;             // served since start
  std::uint64_t connections_refused = 0;  // over max_connections
  std::uint64_t connections_closed_for_errors = 0;
};

class Server {
 public:
  // Binds and listens (SO_REUSEADDR, backlog SOMAXCONN, TCP_NODELAY on
  // accepted sockets), raising the open-file limit if settings ask. Fails
  // with ErrorCode::store whose message names host:port and the reason (in
  // use, not local, ...).
  static Expected<std::unique_ptr<Server>> start(boost::asio::io_context& io,
                                                 ServerSettings settings);
  ~Server();  // closes the listeners and every connection
  Server(const Server&) = delete;
  Server& operator=(const Server&) = delete;

  int port() const;
  // "127.0.0.1:29500", "[::1]:29500": what it listens on.
  std::vector<std::string> endpoints() const;

  // Closes every client connection and drops every key: the next client
  // finds an empty store at the same address. Used between restart attempts
  // so keys of one attempt cannot leak into the next.
  void reset();

  ServerStats stats() const;

 private:
  struct Impl;
  explicit Server(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

}  // namespace gangrun::store
