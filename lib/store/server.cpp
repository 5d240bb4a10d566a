#include "store/server.hpp"

#include "store/codec.hpp"
#include "store/store_state.hpp"

#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/ip/v6_only.hpp>
#include <boost/asio/steady_timer.hpp>
#include <spdlog/spdlog.h>

#include <sys/resource.h>

#include <array>
#include <chrono>
#include <unordered_map>

namespace gangrun::store {
namespace {

namespace asio = boost::asio;
using asio::ip::tcp;
using Clock = std::chrono::steady_clock;

// Bytes read from one connection before the loop turns to the others.
constexpr std::size_t k_read_turn_bytes = 256 * 1024;

std::string endpoint_text(const tcp::endpoint& endpoint) {
  const asio::ip::address address = endpoint.address();
  if (address.is_v6()) {
    return "[" + address.to_string() + "]:" + std::to_string(endpoint.port());
  }
  return address.to_string() + ":" + std::to_string(endpoint.port());
}

// Ten thousand clients need ten thousand descriptors; the soft limit is
// often 1024 while the hard limit allows far more.
void raise_open_file_limit() {
  rlimit limit{};
  if (::getrlimit(RLIMIT_NOFILE, &limit) != 0 || limit.rlim_cur >= limit.rlim_max) return;
  limit.rlim_cur = limit.rlim_max;
  ::setrlimit(RLIMIT_NOFILE, &limit);
}

// Says at most once a second that something keeps happening, so a storm of
// refused connections cannot flood the log.
class RateLimitedLog {
 public:
  template <typename... Args>
  void warn(spdlog::format_string_t<Args...> format, Args&&... args) {
    ++suppressed_;
    Clock::time_point now = Clock::now();
    if (now - last_ < std::chrono::seconds(1)) return;
    last_ = now;
    std::string message = fmt::format(format, std::forward<Args>(args)...);
    if (suppressed_ > 1) {
      message += fmt::format(" ({} more like this in the last second)", suppressed_ - 1);
    }
    suppressed_ = 0;
    spdlog::warn("{}", message);
  }

 private:
  Clock::time_point last_{};
  std::size_t suppressed_ = 0;
};

}  // namespace

struct Connection {
  Connection(ConnectionId connection_id, tcp::socket accepted, const Limits& limits)
      : id(connection_id), socket(std::move(accepted)), decoder(limits) {}

  ConnectionId id;
  tcp::socket socket;
  RequestDecoder decoder;
  std::string peer;
  // Small on purpose: it is held by every idle connection.
  std::array<char, 256> inbox{};
  std::string out;           // replies not yet written
  std::size_t out_sent = 0;  // bytes of out already written
  bool closed = false;       // set once; handlers that still hold it then do nothing
  bool read_armed = false;
  bool write_armed = false;

  std::size_t pending_reply_bytes() const { return out.size() - out_sent; }
};

struct Server::Impl {
  asio::io_context& io;
  ServerSettings settings;
  std::vector<tcp::acceptor> acceptors;
  asio::steady_timer accept_retry_timer;
  StoreState state;
  std::unordered_map<ConnectionId, std::shared_ptr<Connection>> connections;
  ConnectionId next_id = 1;
  std::array<char, 64 * 1024> scratch{};
  ServerStats counters;
  RateLimitedLog refusal_log;
  RateLimitedLog accept_error_log;
  // Shared with every handler: false once the server is gone, so a handler
  // that the io_context runs after the destructor touches nothing.
  std::shared_ptr<bool> alive = std::make_shared<bool>(true);

  Impl(asio::io_context& io_context, ServerSettings server_settings)
      : io(io_context),
        settings(std::move(server_settings)),
        accept_retry_timer(io_context),
        state(settings.limits) {}

  ~Impl() {
    *alive = false;
    close_all();
    for (tcp::acceptor& acceptor : acceptors) {
      boost::system::error_code ignored;
      acceptor.close(ignored);
    }
  }

  // ---- binding --------------------------------------------------------------

  Expected<void> bind() {
    boost::system::error_code error;
    tcp::resolver resolver(io);
    auto results = resolver.resolve(settings.host, std::to_string(settings.port),
                                    tcp::resolver::passive | tcp::resolver::numeric_service, error);
    if (error) {
      return fail(ErrorCode::store, "cannot listen on " + settings.host +
                                        ": the name does not resolve (" + error.message() + ")");
    }
    int port = settings.port;
    std::string failures;
    for (const auto& entry : results) {
      tcp::endpoint endpoint(entry.endpoint().address(), static_cast<unsigned short>(port));
      auto bound = listen_on(endpoint);
      if (!bound) {
        failures += (failures.empty() ? "" : "; ") + bound.error().message();
        continue;
      }
      port = acceptors.back().local_endpoint().port();
    }
    if (acceptors.empty()) {
      if (failures.empty()) failures = "cannot listen on " + settings.host + ": no address";
      return fail(ErrorCode::store, failures);
    }
    return {};
  }

  Expected<void> listen_on(const tcp::endpoint& endpoint) {
    tcp::acceptor acceptor(io);
    boost::system::error_code error;
    acceptor.open(endpoint.protocol(), error);
    if (!error) acceptor.set_option(tcp::acceptor::reuse_address(true), error);
    // "::" serves IPv4 clients too (as ::ffff:a.b.c.d), as PyTorch's server does.
    if (!error && endpoint.address().is_v6() && endpoint.address().is_unspecified()) {
      acceptor.set_option(asio::ip::v6_only(false), error);
    }
    if (!error) acceptor.bind(endpoint, error);
    if (!error) acceptor.listen(asio::socket_base::max_listen_connections, error);
    if (!error) acceptor.non_blocking(true, error);
    if (error) {
      return fail(ErrorCode::store,
                  "cannot listen on " + endpoint_text(endpoint) + ": " + error.message());
    }
    acceptors.push_back(std::move(acceptor));
    return {};
  }

  // ---- accepting ------------------------------------------------------------

  void arm_accept(tcp::acceptor& acceptor) {
    acceptor.async_wait(tcp::acceptor::wait_read,
                        [this, &acceptor, alive = alive](boost::system::error_code error) {
                          if (!*alive || error == asio::error::operation_aborted) return;
                          accept_ready(acceptor);
                        });
  }

  // Accepts every pending connection (a storm arrives as one readiness event).
  void accept_ready(tcp::acceptor& acceptor) {
    for (;;) {
      boost::system::error_code error;
      tcp::socket socket = acceptor.accept(error);
      if (error == asio::error::would_block || error == asio::error::try_again) break;
      if (error) {
        // Out of descriptors (or memory): the pending connection stays in the
        // backlog; try again shortly instead of spinning on it.
        accept_error_log.warn("store: cannot accept a connection: {}", error.message());
        accept_retry_timer.expires_after(std::chrono::milliseconds(50));
        accept_retry_timer.async_wait([this, &acceptor, alive = alive](auto wait_error) {
          if (*alive && !wait_error) accept_ready(acceptor);
        });
        return;
      }
      admit(std::move(socket));
    }
    arm_accept(acceptor);
  }

  void admit(tcp::socket socket) {
    boost::system::error_code error;
    tcp::endpoint remote = socket.remote_endpoint(error);
    std::string peer = error ? std::string("unknown peer") : endpoint_text(remote);
    if (connections.size() >= settings.limits.max_connections) {
      ++counters.connections_refused;
      refusal_log.warn("store: refusing a connection from {}: {} connections are open (limit {})",
                       peer, connections.size(), settings.limits.max_connections);
      return;  // the socket closes here
    }
    socket.set_option(tcp::no_delay(true), error);
    socket.non_blocking(true, error);
    auto connection = std::make_shared<Connection>(next_id++, std::move(socket), settings.limits);
    connection->peer = std::move(peer);
    connections.emplace(connection->id, connection);
    arm_read(connection);
  }

  // ---- reading and serving ---------------------------------------------------

  // Reads into the connection's small inbox rather than waiting for
  // readiness: Asio re-registers the socket with epoll (one more syscall) for
  // every readiness wait, but not for a read that follows a short one.
  void arm_read(const std::shared_ptr<Connection>& connection) {
    if (connection->read_armed || connection->closed) return;
    connection->read_armed = true;
    connection->socket.async_read_some(
        asio::buffer(connection->inbox),
        [this, connection, alive = alive](boost::system::error_code error, std::size_t received) {
          connection->read_armed = false;
          if (!*alive || connection->closed) return;
          if (error) return close(*connection, "");  // EOF or reset: the client left
          read_ready(connection, received);
        });
  }

  void read_ready(const std::shared_ptr<Connection>& connection, std::size_t received) {
    if (!take(*connection, std::string_view(connection->inbox.data(), received))) return;
    // A full inbox means more may be waiting: read on through the shared
    // scratch buffer, up to a turn's worth so other connections get theirs.
    std::size_t taken = received;
    bool filled = received == connection->inbox.size();
    while (filled && taken < k_read_turn_bytes) {
      boost::system::error_code error;
      received = connection->socket.read_some(asio::buffer(scratch), error);
      if (error == asio::error::would_block || error == asio::error::try_again) break;
      if (error) return close(*connection, "");
      taken += received;
      if (!take(*connection, std::string_view(scratch.data(), received))) return;
      filled = received == scratch.size();
    }
    arm_read(connection);
  }

  // Feeds bytes to the decoder and serves the requests they complete. False
  // when reading must not go on: the connection was closed, or its client is
  // not reading its replies (then the write handler resumes both).
  bool take(Connection& connection, std::string_view bytes) {
    connection.decoder.feed(bytes);
    return serve_requests(connection) && !backed_up(connection);
  }

  // Serves every whole request buffered on the connection. False if the
  // connection was closed.
  bool serve_requests(Connection& connection) {
    for (;;) {
      // Requests already read wait in the decoder while replies back up.
      if (backed_up(connection)) return true;
      auto request = connection.decoder.next();
      if (!request) {
        close(connection, request.error().message());
        return false;
      }
      if (!*request) return true;
      ++counters.requests;
      Effects effects;
      state.handle(connection.id, *connection.decoder.dialect(), **request, effects);
      for (auto& [waiter_id, bytes] : effects.wakeups) send(waiter_id, bytes);
      if (!effects.reply.empty()) connection.out += effects.reply;
      flush(connection);
      if (effects.close_reason) {
        close(connection, *effects.close_reason);
        return false;
      }
      if (connection.closed) return false;
    }
  }

  bool backed_up(const Connection& connection) const {
    return connection.pending_reply_bytes() >= settings.limits.max_pending_reply_bytes;
  }

  void send(ConnectionId id, const std::string& bytes) {
    auto found = connections.find(id);
    if (found == connections.end()) return;
    found->second->out += bytes;
    flush(*found->second);
  }

  // ---- writing ----------------------------------------------------------------

  // Writes what the socket takes now; the rest when it becomes writable.
  void flush(Connection& connection) {
    if (connection.closed || connection.write_armed) return;
    while (connection.pending_reply_bytes() > 0) {
      boost::system::error_code error;
      std::size_t written =
          connection.socket.write_some(asio::buffer(connection.out.data() + connection.out_sent,
                                                    connection.pending_reply_bytes()),
                                       error);
      if (error == asio::error::would_block || error == asio::error::try_again) {
        arm_write(connections.at(connection.id));
        return;
      }
      if (error) return close(connection, "");
      connection.out_sent += written;
    }
    connection.out.clear();
    connection.out_sent = 0;
  }

  void arm_write(const std::shared_ptr<Connection>& connection) {
    connection->write_armed = true;
    connection->socket.async_wait(tcp::socket::wait_write, [this, connection, alive = alive](
                                                               boost::system::error_code error) {
      connection->write_armed = false;
      if (!*alive || connection->closed) return;
      if (error) return close(*connection, "");
      if (connection->out_sent > connection->out.size() / 2) {
        connection->out.erase(0, connection->out_sent);
        connection->out_sent = 0;
      }
      flush(*connection);
      if (connection->closed || backed_up(*connection)) return;
      if (!serve_requests(*connection) || backed_up(*connection)) return;
      arm_read(connection);
    });
  }

  // ---- closing ----------------------------------------------------------------

  // reason empty: the client left or the socket failed (not worth a warning).
  void close(Connection& connection, const std::string& reason) {
    if (connection.closed) return;
    connection.closed = true;
    if (!reason.empty()) {
      ++counters.connections_closed_for_errors;
      spdlog::warn("store: closing the connection from {}: {}", connection.peer, reason);
    }
    boost::system::error_code ignored;
    connection.socket.close(ignored);
    state.disconnect(connection.id);
    connections.erase(connection.id);  // handlers still hold it until they run
  }

  void close_all() {
    for (auto& [id, connection] : connections) {
      connection->closed = true;
      boost::system::error_code ignored;
      connection->socket.close(ignored);
    }
    connections.clear();
  }
};

Expected<std::unique_ptr<Server>> Server::start(asio::io_context& io, ServerSettings settings) {
  if (settings.raise_open_file_limit) raise_open_file_limit();
  auto impl = std::make_unique<Impl>(io, std::move(settings));
  if (auto bound = impl->bind(); !bound) return tl::unexpected(bound.error());
  for (tcp::acceptor& acceptor : impl->acceptors) impl->arm_accept(acceptor);
  return std::unique_ptr<Server>(new Server(std::move(impl)));
}

Server::Server(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
Server::~Server() = default;

int Server::port() const { return impl_->acceptors.front().local_endpoint().port(); }

std::vector<std::string> Server::endpoints() const {
  std::vector<std::string> listed;
  for (const tcp::acceptor& acceptor : impl_->acceptors) {
    listed.push_back(endpoint_text(acceptor.local_endpoint()));
  }
  return listed;
}

void Server::reset() {
  impl_->close_all();
  impl_->state.clear();
}

ServerStats Server::stats() const {
  ServerStats stats = impl_->counters;
  stats.connections = impl_->connections.size();
  stats.keys = impl_->state.key_count();
  stats.stored_bytes = impl_->state.stored_bytes();
  return stats;
}

}  // namespace gangrun::store
