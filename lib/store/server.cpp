#include "store/server.hpp"

#include "store/codec.hpp"
#include "store/key_spaces.hpp"
#include "store/socket_watch.hpp"
#include "util/fd.hpp"
#include "util/host.hpp"
#include "util/open_file_limit.hpp"
#include "util/strings.hpp"

#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/ip/v6_only.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/steady_timer.hpp>
#include <spdlog/spdlog.h>

#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sys/socket.h>

#include <algorithm>
#include <array>
#include <cerrno>
#include <chrono>
#include <cstdint>
#include <cstring>
#include <exception>
#include <fstream>
#include <functional>
#include <list>
#include <string_view>
#include <unordered_map>

namespace gangrun::store {
namespace {

namespace asio = boost::asio;
using asio::ip::tcp;
using Clock = std::chrono::steady_clock;

// Bytes read from one connection before the loop turns to the others.
constexpr std::size_t k_read_turn_bytes = 256 * 1024;

// The listen backlog asked for. The kernel caps it at net.core.somaxconn
// (4096 by default since Linux 5.4), so where an administrator raised that,
// the store gets the raise too.
constexpr int k_listen_backlog = 65535;
constexpr std::size_t k_max_listen_queues = 16;  // per address

using ReusePort = asio::detail::socket_option::boolean<SOL_SOCKET, SO_REUSEPORT>;

// Reads served between two looks at the listeners. A storm of clients that
// connect and then send at once keeps the loop busy serving; without these
// looks the backlog can fill between two readiness events of a listener, and
// the kernel then drops connections, which retry a second later.
constexpr unsigned k_reads_between_accepts = 64;

// A newcomer at the connection limit looks at most this many of the newest
// connections of the most crowded address for an idle one to replace (when
// none of that address is silent); when none of them is idle it replaces the
// newest, so a newcomer's cost stays bounded however many connections wait.
constexpr std::size_t k_reclaim_scan = 64;

// A reply buffer larger than this is given back once its bytes are sent.
constexpr std::size_t k_kept_reply_capacity = 8 * 1024;

// A peer's address without its port, in IPv6 form: an IPv4 peer as
// ::ffff:a.b.c.d, so that one host counts once whether it reached an IPv4
// listener or a dual-stack one. 16 bytes, kept once per address.
using PeerAddress = std::array<unsigned char, 16>;

struct PeerAddressHash {
  std::size_t operator()(const PeerAddress& address) const noexcept {
    std::uint64_t high = 0;
    std::uint64_t low = 0;
    std::memcpy(&high, address.data(), sizeof high);
    std::memcpy(&low, address.data() + sizeof high, sizeof low);
    return std::hash<std::uint64_t>{}(high ^ (low * 0x9E3779B97F4A7C15ull));
  }
};

PeerAddress peer_address(const tcp::endpoint& endpoint) {
  const asio::ip::address address = endpoint.address();
  if (address.is_v4()) {
    return asio::ip::make_address_v6(asio::ip::v4_mapped, address.to_v4()).to_bytes();
  }
  return address.to_v6().to_bytes();
}

std::string address_text(const PeerAddress& bytes) {
  const asio::ip::address_v6 address(bytes);
  if (address.is_v4_mapped()) {
    return asio::ip::make_address_v4(asio::ip::v4_mapped, address).to_string();
  }
  return address.to_string();
}

// Requests that change the keys they name, which publish_only_prefixes
// refuse. BARRIER adds to its counter key; QUEUE_POP takes an item away.
bool changes_keys(Op op) {
  switch (op) {
    case Op::set:
    case Op::compare_set:
    case Op::add:
    case Op::append:
    case Op::multi_set:
    case Op::delete_key:
    case Op::queue_push:
    case Op::queue_pop:
    case Op::barrier:
      return true;
    default:
      return false;
  }
}

// A client's key for a log line: keys are any bytes up to max_key_bytes, so
// a long one is cut to 200 characters and control characters are escaped.
std::string printable_key(std::string_view key) {
  constexpr std::size_t k_shown = 200;
  return strings::printable(key.substr(0, k_shown)) + (key.size() > k_shown ? "..." : "");
}

std::string endpoint_text(const tcp::endpoint& endpoint) {
  return host::endpoint_text(endpoint.address().to_string(), endpoint.port());
}

// Warnings a client can cause at will (a refused, broken or reclaimed
// connection): the first k_burst of each second are printed, the rest are
// counted and summed up in one line when that second is over, so that tens of
// thousands of bad connections cannot flood the log or slow the loop down.
class RateLimitedLog {
 public:
  // what: the plural the summary line counts ("bad connections").
  RateLimitedLog(asio::io_context& io, std::string what) : timer_(io), what_(std::move(what)) {}

  // Never throws: a warning that cannot be printed is dropped.
  template <typename... Args>
  void warn(spdlog::format_string_t<Args...> format, Args&&... args) noexcept {
    try {
      Clock::time_point now = Clock::now();
      if (now - window_start_ >= k_window) {
        window_start_ = now;
        printed_ = 0;
      }
      if (printed_ < k_burst) {
        ++printed_;
        spdlog::warn(format, std::forward<Args>(args)...);
        return;
      }
      if (suppressed_++ > 0) return;  // the summary is already scheduled
      timer_.expires_at(window_start_ + k_window);
      // The timer is cancelled when the log is destroyed; the handler then
      // sees operation_aborted and touches nothing.
      timer_.async_wait([this](boost::system::error_code error) {
        if (!error) report();
      });
    } catch (...) {
    }
  }

 private:
  static constexpr std::size_t k_burst = 10;
  static constexpr Clock::duration k_window = std::chrono::seconds(1);

  void report() noexcept {
    try {
      spdlog::warn("store: {} more {} not shown (at most {} warnings a second are)", suppressed_,
                   what_, k_burst);
    } catch (...) {
    }
    suppressed_ = 0;
  }

  asio::steady_timer timer_;
  std::string what_;
  Clock::time_point window_start_{};
  std::size_t printed_ = 0;
  std::size_t suppressed_ = 0;
};

}  // namespace

struct Connection;

// The connections from one peer address that a newcomer may replace: all but
// the protected ones.
struct AddressGroup {
  PeerAddress address{};
  // All of them in the order they were accepted, the newest last; its size
  // ranks the address at max_connections.
  std::list<Connection*> line;
  // Those of line that are silent (no well-formed request served since they
  // connected), the oldest first: what the address holds against
  // max_connections_per_address.
  std::list<Connection*> silent;
  // Its place in the list of the groups of its size (Server::Impl::groups_of_size).
  AddressGroup* previous_of_size = nullptr;
  AddressGroup* next_of_size = nullptr;
};

struct Connection {
  Connection(ConnectionId connection_id, UniqueFd accepted, const Limits& limits,
             RoundMembership joined)
      : id(connection_id),
        socket(std::move(accepted)),
        decoder(limits),
        membership(std::move(joined)) {}

  ConnectionId id;
  UniqueFd socket;  // non-blocking, watched in Server::Impl::watch under its id
  RequestDecoder decoder;
  RoundMembership membership;  // the round it was accepted in, for good
  std::string peer;
  // Its peer address's group, where in_line (and in_silent while it is
  // silent) place it; nullptr once it is protected (Server::protect): then it
  // is in no line and is never reclaimed.
  AddressGroup* group = nullptr;
  // A well-formed request of it was served: it no longer counts against
  // max_connections_per_address.
  bool spoke = false;
  bool is_protected = false;  // Server::protect
  PeerAddress address{};
  // What its writes are charged to: its address's, shared with the other
  // connections of that address; nullptr once it is protected.
  std::shared_ptr<ByteAccount> account;
  // Small on purpose: it is held by every idle connection.
  std::array<char, 256> inbox{};
  std::string out;           // replies not yet written
  std::size_t out_sent = 0;  // bytes of out already written
  bool closed = false;       // set once; handlers that still hold it then do nothing
  SocketWatch::Interest watched{.read = true};  // what Server::Impl::watch waits for
  Clock::time_point connected_at;               // when it was accepted
  std::list<Connection*>::iterator in_line;     // its place in group->line
  std::list<Connection*>::iterator in_silent;   // its place in group->silent, until it spoke
  std::size_t charged = 0;                      // its part of Server::Impl::buffered

  std::size_t pending_reply_bytes() const { return out.size() - out_sent; }
  // Buffer memory it holds: a request being received, replies not yet sent.
  std::size_t held_bytes() const { return decoder.held_bytes() + out.capacity(); }
};

struct Listener {
  Listener(tcp::acceptor bound, bool first_of_its_address)
      : acceptor(std::move(bound)), first(first_of_its_address) {}
  tcp::acceptor acceptor;
  bool first;  // the one endpoints() names; the others share its address
  bool wait_armed = false;
};

struct Server::Impl {
  asio::io_context& io;
  ServerSettings settings;
  std::vector<Listener> listeners;
  std::unique_ptr<SocketWatch> watch;  // every connection's socket, keyed by its id
  asio::steady_timer accept_retry_timer;
  bool accept_paused = false;  // out of descriptors: accept_retry_timer is armed
  KeySpaces spaces;
  std::unordered_map<ConnectionId, std::shared_ptr<Connection>> connections;
  // The open connections that are not protected, by peer address: how many
  // each address holds, and whom a newcomer replaces at the connection limit.
  std::unordered_map<PeerAddress, AddressGroup, PeerAddressHash> groups;
  // groups_of_size[n]: the first of the groups holding n connections (n > 0),
  // which link the others; so the most crowded address is found, and a group
  // moved when it grows or shrinks by one, in constant time.
  std::vector<AddressGroup*> groups_of_size;
  std::size_t largest_group = 0;  // the highest n with a group, 0 when none
  // Bytes all connections hold in buffers (the sum of their charged),
  // against limits.max_buffered_bytes.
  std::size_t buffered = 0;
  unsigned reads_since_accept = 0;
  // A connection was accepted since the listeners were last found empty:
  // clients are arriving, so the loop looks at the listeners while serving.
  bool clients_arriving = false;
  ConnectionId next_id = 1;
  std::array<char, 64 * 1024> scratch{};
  ServerStats counters;
  std::optional<Clock::time_point> last_round_request;  // a worker's, for the hang watch
  RateLimitedLog refusal_log{io, "refused connections"};
  RateLimitedLog address_reclaim_log{io, "silent connections replaced over the per-address limit"};
  RateLimitedLog write_refusal_log{io, "refused writes"};
  RateLimitedLog accept_error_log{io, "failed accepts"};
  RateLimitedLog close_log{io, "closed bad connections"};
  RateLimitedLog reclaim_log{io, "reclaimed idle connections"};
  RateLimitedLog overrun_log{io, "protected writes past a byte limit"};
  // Each address's byte account (Limits::max_bytes_per_address), while its
  // connections or the entries it wrote hold it.
  std::unordered_map<PeerAddress, std::weak_ptr<ByteAccount>, PeerAddressHash> accounts;
  std::size_t accounts_swept_at = 64;  // accounts' size when expired ones are next dropped
  // Shared with every handler: false once the server is gone, so a handler
  // that the io_context runs after the destructor touches nothing.
  std::shared_ptr<bool> alive = std::make_shared<bool>(true);
  ServerEvents events;
  // This host's address that the last client from another host connected to.
  std::optional<std::string> address_reached_from_outside;

  Impl(asio::io_context& io_context, ServerSettings server_settings)
      : io(io_context),
        settings(std::move(server_settings)),
        accept_retry_timer(io_context),
        spaces(settings.limits) {}

  Impl(const Impl&) = delete;
  Impl& operator=(const Impl&) = delete;

  ~Impl() {
    *alive = false;
    close_all();
    for (Listener& listener : listeners) {
      boost::system::error_code ignored;
      listener.acceptor.close(ignored);
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
      port = listeners.back().acceptor.local_endpoint().port();
    }
    if (listeners.empty()) {
      if (failures.empty()) failures = "cannot listen on " + settings.host + ": no address";
      return fail(ErrorCode::store, failures);
    }
    return {};
  }

  // Listens on endpoint with as many queues as listen_queues() asks for. With
  // more than one, the port is first claimed by a bind without SO_REUSEPORT,
  // which fails like a single listener's would when anything else holds it
  // (and picks the port for port 0); then every queue joins it.
  Expected<void> listen_on(const tcp::endpoint& endpoint) {
    std::size_t queues = listen_queues();
    tcp::endpoint claimed = endpoint;
    if (queues > 1) {
      Expected<tcp::acceptor> probe = bound_socket(endpoint, false);
      if (!probe) return tl::unexpected(probe.error());
      claimed = probe->local_endpoint();
      boost::system::error_code ignored;
      probe->close(ignored);  // the group below could not join a socket without SO_REUSEPORT
    }
    std::vector<Listener> group;
    for (std::size_t i = 0; i < queues; ++i) {
      Expected<tcp::acceptor> acceptor = bound_socket(claimed, queues > 1);
      boost::system::error_code error;
      if (acceptor) acceptor->listen(k_listen_backlog, error);
      if (acceptor && !error) acceptor->non_blocking(true, error);
      // Inherited by every accepted socket, which then needs no setsockopt.
      if (acceptor && !error) acceptor->set_option(tcp::no_delay(true), error);
      if (acceptor && !error && settings.keep_alive) {
        apply_keep_alive(acceptor->native_handle(), *settings.keep_alive);
      }
      if (!acceptor) return tl::unexpected(acceptor.error());
      if (error) {
        return fail(ErrorCode::store,
                    "cannot listen on " + endpoint_text(claimed) + ": " + error.message());
      }
      group.emplace_back(std::move(*acceptor), i == 0);
    }
    for (Listener& listener : group) listeners.push_back(std::move(listener));
    return {};
  }

  Expected<tcp::acceptor> bound_socket(const tcp::endpoint& endpoint, bool reuse_port) {
    tcp::acceptor acceptor(io);
    boost::system::error_code error;
    acceptor.open(endpoint.protocol(), error);
    if (!error) acceptor.set_option(tcp::acceptor::reuse_address(true), error);
    if (!error && reuse_port) acceptor.set_option(ReusePort(true), error);
    // "::" serves IPv4 clients too (as ::ffff:a.b.c.d), as PyTorch's server does.
    if (!error && endpoint.address().is_v6() && endpoint.address().is_unspecified()) {
      acceptor.set_option(asio::ip::v6_only(false), error);
    }
    if (!error) acceptor.bind(endpoint, error);
    if (error) {
      return fail(ErrorCode::store,
                  "cannot listen on " + endpoint_text(endpoint) + ": " + error.message());
    }
    return acceptor;
  }

  // A listen queue holds at most net.core.somaxconn connections (4096 by
  // default). When every client of a job connects at once and the server is
  // short of CPU, more than that wait to be accepted, and the kernel drops
  // the rest (they retry a second later, then 3, then 7). So the store
  // listens with enough SO_REUSEPORT queues, among which the kernel spreads
  // connections by hash, to hold twice max_connections.
  std::size_t listen_queues() const {
    std::size_t per_queue = 4096;
    std::ifstream somaxconn("/proc/sys/net/core/somaxconn");
    if (std::size_t value = 0; somaxconn >> value && value > 0) per_queue = value;
    std::size_t clients = settings.expected_clients > 0
                              ? std::min(settings.expected_clients, settings.limits.max_connections)
                              : settings.limits.max_connections;
    std::size_t wanted = (2 * clients + per_queue - 1) / per_queue;
    return std::clamp<std::size_t>(wanted, 1, k_max_listen_queues);
  }

  // ---- accepting ------------------------------------------------------------

  void arm_accept(Listener& listener) {
    if (listener.wait_armed) return;
    listener.wait_armed = true;
    listener.acceptor.async_wait(tcp::acceptor::wait_read,
                                 [this, &listener, alive = alive](boost::system::error_code error) {
                                   if (!*alive) return;
                                   listener.wait_armed = false;
                                   if (error == asio::error::operation_aborted) return;
                                   if (accept_pending(listener)) arm_accept(listener);
                                 });
  }

  // Accepts every connection waiting in the listener's backlog (a storm
  // arrives as one readiness event). False when it stopped on an error and
  // the retry timer will go on.
  bool accept_pending(Listener& listener) {
    if (accept_paused) return false;
    for (;;) {
      // accept4 rather than Asio's accept: the socket comes non-blocking and
      // close-on-exec, with the peer's address, in one syscall.
      tcp::endpoint remote;
      socklen_t length = static_cast<socklen_t>(remote.capacity());
      int accepted = ::accept4(listener.acceptor.native_handle(), remote.data(), &length,
                               SOCK_NONBLOCK | SOCK_CLOEXEC);
      if (accepted < 0) {
        if (errno == EAGAIN || errno == EWOULDBLOCK) return true;
        // A client gone before it was accepted, or a signal: the next one.
        if (errno == ECONNABORTED || errno == EPROTO || errno == EINTR) continue;
        // Out of descriptors (or memory): the pending connection stays in the
        // backlog; try again shortly instead of spinning on it.
        accept_error_log.warn("store: cannot accept a connection: {}", std::strerror(errno));
        pause_accepting();
        return false;
      }
      UniqueFd socket(accepted);
      std::string peer = "unknown peer";
      PeerAddress address{};
      if (length <= remote.capacity()) {
        remote.resize(length);
        peer = endpoint_text(remote);
        address = peer_address(remote);
        if (!remote.address().is_loopback()) remember_local_address(socket.get());
      }
      clients_arriving = true;
      admit(std::move(socket), std::move(peer), address);
    }
  }

  // One getsockname per connection from another host; those are few (agents,
  // remote workers), and loopback clients, the many, skip it.
  void remember_local_address(int socket) {
    tcp::endpoint local;
    socklen_t length = static_cast<socklen_t>(local.capacity());
    if (::getsockname(socket, local.data(), &length) != 0 || length > local.capacity()) return;
    local.resize(length);
    boost::asio::ip::address where = local.address();
    if (where.is_v6() && where.to_v6().is_v4_mapped()) {
      where = boost::asio::ip::make_address_v4(boost::asio::ip::v4_mapped, where.to_v6());
    }
    if (!where.is_loopback()) address_reached_from_outside = where.to_string();
  }

  void pause_accepting() {
    accept_paused = true;
    accept_retry_timer.expires_after(std::chrono::milliseconds(50));
    accept_retry_timer.async_wait([this, alive = alive](boost::system::error_code error) {
      if (!*alive || error) return;
      accept_paused = false;
      for (Listener& listener : listeners) {
        if (!accept_pending(listener)) return;
        arm_accept(listener);
      }
    });
  }

  // Called while serving: takes what waits in the backlogs now rather than
  // when the listeners' turn in the event loop comes. Only while clients
  // are arriving: a server busy with the connections it has would otherwise
  // make an accept failing with EAGAIN per listener every few reads.
  void poll_listeners() {
    reads_since_accept = 0;
    if (!clients_arriving) return;
    clients_arriving = false;
    for (Listener& listener : listeners) {
      if (!accept_pending(listener)) return;
    }
  }

  // Never throws: a connection that cannot be set up is dropped.
  void admit(UniqueFd socket, std::string peer, const PeerAddress& address) noexcept {
    try {
      make_room_in_address(address, peer);
      if (connections.size() >= settings.limits.max_connections && !reclaim(peer)) {
        ++counters.connections_refused;
        refusal_log.warn(
            "store: refusing a connection from {}: {} connections are open (limit {}) and all are "
            "protected",
            peer, connections.size(), settings.limits.max_connections);
        return;
      }
      // TCP_NODELAY and keep-alive come from the listener (Linux copies a
      // listening socket's options to the sockets accepted from it).
      auto connection = std::make_shared<Connection>(next_id++, std::move(socket), settings.limits,
                                                     spaces.join());
      connection->peer = std::move(peer);
      connection->connected_at = Clock::now();
      connection->address = address;
      connection->account = account_of(address);
      auto entry = connections.emplace(connection->id, connection).first;
      ++counters.connections_accepted;
      try {
        enter_group(*connection, address);
      } catch (...) {
        connections.erase(entry);
        throw;
      }
      recharge(*connection);
      if (!watch->add(connection->socket.get(), connection->id, connection->watched)) {
        int refused = errno;
        close(*connection, std::string("cannot watch it: ") + std::strerror(refused));
      }
    } catch (const std::exception& failure) {
      accept_error_log.warn("store: cannot take a connection: {}", failure.what());
    }
  }

  // An address holding max_connections_per_address silent connections gives
  // up the one silent the longest for the newcomer: the newcomer may be a
  // job's worker (it cannot have spoken yet), a socket that said nothing
  // since it connected is worth the least, and the address's clients that
  // spoke are never touched.
  void make_room_in_address(const PeerAddress& address, const std::string& newcomer) {
    std::size_t limit = settings.limits.max_connections_per_address;
    if (limit == 0) return;
    auto found = groups.find(address);
    if (found == groups.end() || found->second.silent.size() < limit) return;
    Connection* chosen = found->second.silent.front();
    ++counters.connections_reclaimed;
    ++counters.silent_connections_replaced;
    double age = std::chrono::duration<double>(Clock::now() - chosen->connected_at).count();
    address_reclaim_log.warn(
        "store: {} silent connections are open from {} (limit {} per address; raise it with "
        "--max-connections-per-address N, 0 for no limit): closing the one from {}, silent for "
        "{:.1f} s, to admit {}",
        found->second.silent.size(), address_text(address), limit, chosen->peer, age, newcomer);
    close(*chosen, "");
  }

  // Idle: nothing pending either way. A PyTorch client blocked in wait()
  // sends nothing until it is answered, so a WAIT or BARRIER pending makes a
  // connection not idle, however long it has been silent.
  bool idle(const Connection& connection) const {
    return !spaces.is_waiting(connection.membership, connection.id) &&
           connection.decoder.buffered_bytes() == 0 && connection.pending_reply_bytes() == 0;
  }

  // Whom a newcomer at max_connections replaces in group: its newest silent
  // connection, else the newest idle one among its k_reclaim_scan newest,
  // else its newest. A storm thus eats its own tail, and the connections an
  // address opened first (an agent's, its workers') outlive the storm.
  Connection* newest_reclaimable(const AddressGroup& group) const {
    if (!group.silent.empty()) return group.silent.back();
    std::size_t looked = 0;
    for (auto it = group.line.rbegin(); it != group.line.rend() && looked < k_reclaim_scan;
         ++it, ++looked) {
      if (idle(**it)) return *it;
    }
    return group.line.back();
  }

  // At the connection limit a newcomer takes the place of a connection of
  // the address that holds the most (newest_reclaimable). An address that
  // fills the table with silent or waiting sockets thus loses its own, and
  // cannot lock others out. False when every open connection is protected.
  bool reclaim(const std::string& newcomer) {
    if (largest_group == 0) return false;
    const AddressGroup& group = *groups_of_size[largest_group];
    Connection* chosen = newest_reclaimable(group);
    ++counters.connections_reclaimed;
    double age = std::chrono::duration<double>(Clock::now() - chosen->connected_at).count();
    std::string_view state = !chosen->spoke                                      ? "silent"
                             : idle(*chosen)                                     ? "idle"
                             : spaces.is_waiting(chosen->membership, chosen->id) ? "waiting"
                                                                                 : "busy";
    reclaim_log.warn(
        "store: {} connections are open (limit {}; raise it with --max-connections N): closing "
        "the one from {}, {} for {:.1f} s since it connected, to admit {} (the newest of the "
        "address that holds the most, {})",
        connections.size(), settings.limits.max_connections, chosen->peer, state, age, newcomer,
        group.line.size());
    close(*chosen, "");
    return true;
  }

  // The byte account of address, shared by its connections and entries.
  std::shared_ptr<ByteAccount> account_of(const PeerAddress& address) {
    if (accounts.size() >= 2 * accounts_swept_at) {
      std::erase_if(accounts, [](const auto& entry) { return entry.second.expired(); });
      accounts_swept_at = std::max<std::size_t>(64, accounts.size());
    }
    std::weak_ptr<ByteAccount>& slot = accounts[address];
    std::shared_ptr<ByteAccount> account = slot.lock();
    if (!account) {
      account = std::make_shared<ByteAccount>();
      slot = account;
    }
    return account;
  }

  // ---- connections by peer address ---------------------------------------------

  void enter_group(Connection& connection, const PeerAddress& address) {
    auto [found, created] = groups.try_emplace(address);
    AddressGroup& group = found->second;
    std::size_t size = group.line.size();
    try {
      if (groups_of_size.size() <= size + 1) groups_of_size.resize(size + 2, nullptr);
      connection.in_line = group.line.insert(group.line.end(), &connection);
      try {
        connection.in_silent = group.silent.insert(group.silent.end(), &connection);
      } catch (...) {
        group.line.erase(connection.in_line);
        throw;
      }
    } catch (...) {
      if (created) groups.erase(found);
      throw;
    }
    group.address = address;
    connection.group = &group;
    resized(group, size);
  }

  // Takes the connection out of its group (closed, or protected from now on).
  void leave_group(Connection& connection) noexcept {
    AddressGroup* group = connection.group;
    if (group == nullptr) return;
    connection.group = nullptr;
    std::size_t size = group->line.size();
    group->line.erase(connection.in_line);
    if (!connection.spoke) group->silent.erase(connection.in_silent);
    resized(*group, size);
    if (group->line.empty()) {
      PeerAddress address = group->address;  // not a reference into the node erased
      groups.erase(address);
    }
  }

  // Moves group from the list of its old size to that of its size now.
  void resized(AddressGroup& group, std::size_t old_size) noexcept {
    if (old_size > 0) {
      AddressGroup*& first = groups_of_size[old_size];
      if (group.previous_of_size != nullptr) {
        group.previous_of_size->next_of_size = group.next_of_size;
      } else {
        first = group.next_of_size;
      }
      if (group.next_of_size != nullptr) {
        group.next_of_size->previous_of_size = group.previous_of_size;
      }
      group.previous_of_size = nullptr;
      group.next_of_size = nullptr;
    }
    std::size_t size = group.line.size();
    if (size > 0) {
      group.next_of_size = groups_of_size[size];
      if (group.next_of_size != nullptr) group.next_of_size->previous_of_size = &group;
      groups_of_size[size] = &group;
    }
    // Sizes change by one, so this steps down at most once.
    largest_group = std::max(largest_group, size);
    while (largest_group > 0 && groups_of_size[largest_group] == nullptr) --largest_group;
  }

  void protect(ConnectionId id) {
    auto found = connections.find(id);
    if (found == connections.end() || found->second->closed) return;
    Connection& connection = *found->second;
    connection.is_protected = true;
    leave_group(connection);
    forget_account(connection);
  }

  // The connection no longer writes for its address (closed or protected);
  // the entries it wrote stay charged to it.
  void forget_account(Connection& connection) noexcept {
    if (!connection.account) return;
    bool last = connection.account.use_count() == 1;
    connection.account.reset();
    if (last) accounts.erase(connection.address);
  }

  // ---- reading and serving ---------------------------------------------------

  // A connection's socket is ready (watch's handler). A connection is read
  // only when it is readable, so no read of a client that has not sent yet
  // fails with EAGAIN.
  // noexcept on purpose: serving runs inside guarded(); what is left (accepting waiting
  // clients, arming the accept retry timer) throws only when memory runs out, where
  // ending the process is the answer.
  // NOLINTNEXTLINE(bugprone-exception-escape)
  void socket_ready(ConnectionId id, bool readable, bool writable) noexcept {
    auto found = connections.find(id);
    if (found == connections.end()) return;                  // closed since the kernel said so
    std::shared_ptr<Connection> connection = found->second;  // alive while it is served
    if (writable) guarded(*connection, [&] { write_ready(*connection); });
    if (!readable || connection->closed || !connection->watched.read) return;
    std::size_t received = 0;
    if (!receive(*connection, connection->inbox.data(), connection->inbox.size(), received)) {
      return;
    }
    guarded(*connection, [&] { read_ready(*connection, received); });
    if (++reads_since_accept >= k_reads_between_accepts) poll_listeners();
  }

  // Reads what is waiting, up to size bytes. False when nothing was: the
  // connection was closed (EOF or reset: the client left), or nothing is
  // waiting after all.
  bool receive(Connection& connection, char* into, std::size_t size, std::size_t& received) {
    ssize_t result = ::recv(connection.socket.get(), into, size, 0);
    if (result > 0) {
      received = static_cast<std::size_t>(result);
      counters.bytes_received += received;
      return true;
    }
    if (result < 0 && (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR)) return false;
    close(connection, "");
    return false;
  }

  // Watches the connection's socket for what it needs now: reading unless
  // its client stopped reading its replies, writing while replies wait.
  void update_watch(Connection& connection) {
    if (connection.closed) return;
    SocketWatch::Interest wanted{.read = !backed_up(connection),
                                 .write = connection.pending_reply_bytes() > 0};
    if (wanted == connection.watched) return;
    if (!watch->change(connection.socket.get(), connection.id, wanted)) {
      int refused = errno;
      return close(connection, std::string("cannot watch it: ") + std::strerror(refused));
    }
    connection.watched = wanted;
  }

  // A well-formed request of connection was served: it is a client, and no
  // longer counts against max_connections_per_address.
  static void spoken(Connection& connection) noexcept {
    if (connection.spoke) return;
    connection.spoke = true;
    if (AddressGroup* group = connection.group) group->silent.erase(connection.in_silent);
  }

  // Serving one connection must never end the event loop, and with it a
  // whole launch: an exception out of it (std::bad_alloc for a huge buffer)
  // closes that connection only.
  template <typename Work>
  void guarded(Connection& connection, Work&& work) noexcept {
    try {
      work();
    } catch (const std::exception& failure) {
      close_after_failure(connection, failure.what());
    } catch (...) {
      close_after_failure(connection, "an unknown exception");
    }
  }

  void close_after_failure(Connection& connection, const char* what) noexcept {
    try {
      close(connection, std::string("serving it failed: ") + what);
    } catch (...) {
      close(connection, "");
    }
  }

  void read_ready(Connection& connection, std::size_t received) {
    if (!take(connection, std::string_view(connection.inbox.data(), received))) {
      return update_watch(connection);
    }
    // A full inbox means more may be waiting: read on through the shared
    // scratch buffer, up to a turn's worth so other connections get theirs
    // (the socket stays readable, so its turn comes again).
    std::size_t taken = received;
    bool filled = received == connection.inbox.size();
    while (filled && taken < k_read_turn_bytes) {
      if (!receive(connection, scratch.data(), scratch.size(), received)) break;
      taken += received;
      if (!take(connection, std::string_view(scratch.data(), received))) break;
      filled = received == scratch.size();
    }
    update_watch(connection);
  }

  // Feeds bytes to the decoder and serves the requests they complete. False
  // when reading must not go on: the connection was closed, or its client is
  // not reading its replies (then the write handler resumes both).
  bool take(Connection& connection, std::string_view bytes) {
    connection.decoder.feed(bytes);
    if (!within_budget(connection)) return false;
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
      spoken(connection);
      if (names_a_round_key(**request)) last_round_request = Clock::now();
      if (const std::string* key = guarded_key(**request)) {
        refuse_write(connection, *key);
        return false;
      }
      Effects effects;
      spaces.handle(connection.membership, connection.id, *connection.decoder.dialect(), **request,
                    effects,
                    Writer{.account = connection.account, .trusted = connection.is_protected});
      if (effects.refused_for_bytes) ++counters.writes_refused_for_bytes;
      if (effects.overrun) {
        ++counters.protected_overruns;
        overrun_log.warn(
            "store: a {} from the protected connection from {} was applied past a limit (it is "
            "never refused): {}",
            op_name((*request)->op), connection.peer, *effects.overrun);
      }
      for (auto& [waiter_id, bytes] : effects.wakeups) send(waiter_id, bytes);
      if (events.run_key_set) tell_run_keys_set(connection.id, **request);
      if (!effects.reply.empty()) connection.out += effects.reply;
      flush(connection);
      if (effects.close_reason) {
        close(connection, *effects.close_reason);
        return false;
      }
      if (connection.closed || !within_budget(connection)) return false;
    }
  }

  // The first key that request would change and only publish() may; nullptr
  // when there is none.
  const std::string* guarded_key(const Request& request) const {
    if (settings.publish_only_prefixes.empty() || !changes_keys(request.op)) return nullptr;
    for (const std::string& key : request.keys) {
      for (const std::string& prefix : settings.publish_only_prefixes) {
        if (key.starts_with(prefix)) return &key;
      }
    }
    return nullptr;
  }

  void refuse_write(Connection& connection, const std::string& key) {
    ++counters.writes_refused;
    write_refusal_log.warn(
        "store: refused a write of {} from {}: only the rendezvous' coordinator writes it",
        printable_key(key), connection.peer);
    close(connection, "");
  }

  // A worker's request: one about a key of the round. The agents' own
  // traffic (the rendezvous, the gang doctor) is all about run-wide keys,
  // or keyless (a connection's checks, a cancelled wait).
  static bool names_a_round_key(const Request& request) {
    return std::any_of(request.keys.begin(), request.keys.end(),
                       [](const std::string& key) { return !is_run_wide(key); });
  }

  // Posts run_key_set for each run-wide key the request stored.
  void tell_run_keys_set(ConnectionId from, const Request& request) {
    switch (request.op) {
      case Op::set:
      case Op::compare_set:
      case Op::add:
      case Op::append:
      case Op::multi_set:
        break;
      default:
        return;
    }
    for (const std::string& key : request.keys) {
      if (!is_run_wide(key)) continue;
      std::optional<std::string> value = spaces.run_wide_value(key);
      if (!value) continue;
      asio::post(io, [this, token = std::weak_ptr<bool>(alive), from, key, value = *value] {
        if (auto still = token.lock(); still && *still && events.run_key_set) {
          events.run_key_set(from, key, value);
        }
      });
    }
  }

  void publish(const std::string& key, const std::string& value) {
    if (!is_run_wide(key)) return;
    Effects effects;
    // Connection id 0 is never a client's: the wakeups go to real waiters.
    // The coordinator's keys are an agent's: never refused for bytes.
    spaces.handle(spaces.join(), 0, Dialect::validated, make_request(Op::set, {key}, {value}),
                  effects, Writer{.account = nullptr, .trusted = true});
    for (auto& [waiter_id, bytes] : effects.wakeups) send(waiter_id, bytes);
    if (effects.overrun) {
      ++counters.protected_overruns;
      overrun_log.warn("store: a key published by the coordinator was stored past a limit: {}",
                       *effects.overrun);
    }
  }

  void unpublish(const std::string& key) {
    if (!is_run_wide(key)) return;
    Effects effects;
    spaces.handle(spaces.join(), 0, Dialect::validated, make_request(Op::delete_key, {key}),
                  effects, Writer{.account = nullptr, .trusted = true});
    for (auto& [waiter_id, bytes] : effects.wakeups) send(waiter_id, bytes);
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

  // ---- the buffer budget -----------------------------------------------------

  // Brings connection's part of `buffered` up to date.
  void recharge(Connection& connection) {
    std::size_t held = connection.closed ? 0 : connection.held_bytes();
    buffered = buffered - connection.charged + held;
    connection.charged = held;
  }

  // Keeps all connections' buffers within max_buffered_bytes: while they are
  // over, the connection holding the most is closed, whichever it is (a
  // client half-way through one huge request, most likely, rather than the
  // small request that crossed the line). False if that closed `current`.
  bool within_budget(Connection& current) {
    recharge(current);
    while (buffered > settings.limits.max_buffered_bytes) {
      Connection* largest = nullptr;
      for (auto& [id, connection] : connections) {
        if (!largest || connection->charged > largest->charged) largest = connection.get();
      }
      if (!largest) break;
      close(*largest,
            fmt::format("connections hold {} bytes in buffers, over the {}-byte budget, and this "
                        "one holds the most ({} bytes)",
                        buffered, settings.limits.max_buffered_bytes, largest->charged));
    }
    return !current.closed;
  }

  // ---- writing ----------------------------------------------------------------

  // Writes what the socket takes now; the rest when it becomes writable.
  void flush(Connection& connection) {
    if (connection.closed) return;
    // Already waiting to be writable: the new replies queue behind the others.
    if (!connection.watched.write) write_pending(connection);
    update_watch(connection);
  }

  // Writes pending replies until they are all sent or the socket is full.
  void write_pending(Connection& connection) {
    while (connection.pending_reply_bytes() > 0) {
      // MSG_NOSIGNAL: a client gone mid-reply is an error here, not SIGPIPE.
      ssize_t written = ::send(connection.socket.get(), connection.out.data() + connection.out_sent,
                               connection.pending_reply_bytes(), MSG_NOSIGNAL);
      if (written < 0 && (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR)) return;
      if (written < 0) return close(connection, "");
      connection.out_sent += static_cast<std::size_t>(written);
      counters.bytes_sent += static_cast<std::uint64_t>(written);
    }
    connection.out_sent = 0;
    if (connection.out.capacity() > k_kept_reply_capacity) {
      std::string().swap(connection.out);  // give back what a large reply took
    } else {
      connection.out.clear();
    }
    recharge(connection);
  }

  // The socket takes bytes again: sends what waits, then serves the
  // requests read while the client was not reading its replies.
  void write_ready(Connection& connection) {
    if (connection.out_sent > connection.out.size() / 2) {
      connection.out.erase(0, connection.out_sent);
      connection.out_sent = 0;
    }
    write_pending(connection);
    update_watch(connection);
    if (connection.closed || backed_up(connection)) return;
    if (serve_requests(connection)) update_watch(connection);
  }

  // ---- closing ----------------------------------------------------------------

  // reason empty: the client left or the socket failed (not worth a warning).
  void close(Connection& connection, const std::string& reason) noexcept {
    if (connection.closed) return;
    connection.closed = true;
    if (!reason.empty()) {
      ++counters.connections_closed_for_errors;
      close_log.warn("store: closing the connection from {}: {}", connection.peer, reason);
    }
    connection.socket.reset();  // which ends its watch too
    spaces.disconnect(connection.membership, connection.id);
    if (events.connection_closed) {
      try {
        asio::post(io, [this, token = std::weak_ptr<bool>(alive), id = connection.id] {
          if (auto still = token.lock(); still && *still && events.connection_closed) {
            events.connection_closed(id);
          }
        });
      } catch (...) {
        // Out of memory while closing: the observer misses this close, and
        // its keep-alive or join timeout still ends the wait.
      }
    }
    buffered -= connection.charged;
    connection.charged = 0;
    leave_group(connection);
    forget_account(connection);
    connections.erase(connection.id);  // handlers still hold it until they run
  }

  void close_all() {
    for (auto& [id, connection] : connections) {
      connection->closed = true;
      connection->socket.reset();
    }
    connections.clear();
    accounts.clear();
    groups.clear();
    groups_of_size.clear();
    largest_group = 0;
    buffered = 0;
  }
};

Expected<std::unique_ptr<Server>> Server::start(asio::io_context& io, ServerSettings settings) {
  if (settings.raise_open_file_limit) open_file_limit::use_hard_limit();
  auto impl = std::make_unique<Impl>(io, std::move(settings));
  auto watch =
      SocketWatch::create(io, [raw = impl.get()](std::uint64_t key, bool readable, bool writable) {
        raw->socket_ready(key, readable, writable);
      });
  if (!watch) return tl::unexpected(watch.error());
  impl->watch = std::move(*watch);
  if (auto bound = impl->bind(); !bound) return tl::unexpected(bound.error());
  for (Listener& listener : impl->listeners) impl->arm_accept(listener);
  return std::unique_ptr<Server>(new Server(std::move(impl)));
}

Server::Server(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
Server::~Server() = default;

int Server::port() const { return impl_->listeners.front().acceptor.local_endpoint().port(); }

std::vector<std::string> Server::endpoints() const {
  std::vector<std::string> listed;
  for (const Listener& listener : impl_->listeners) {
    if (listener.first) listed.push_back(endpoint_text(listener.acceptor.local_endpoint()));
  }
  return listed;
}

void Server::begin_round(std::uint64_t round) { impl_->spaces.begin_round(round); }

std::uint64_t Server::round() const { return impl_->spaces.current_round(); }

std::optional<std::string> Server::address_reached_from_outside() const {
  return impl_->address_reached_from_outside;
}

void Server::observe(ServerEvents events) { impl_->events = std::move(events); }

void Server::protect(ConnectionId id) { impl_->protect(id); }

void Server::disconnect(ConnectionId id, const std::string& reason) {
  auto found = impl_->connections.find(id);
  if (found == impl_->connections.end()) return;
  std::shared_ptr<Connection> connection = found->second;  // close() erases it
  impl_->close(*connection, reason);
}

void Server::publish(const std::string& key, const std::string& value) {
  impl_->publish(key, value);
}

void Server::unpublish(const std::string& key) { impl_->unpublish(key); }

std::optional<std::chrono::steady_clock::time_point> Server::last_round_request() const {
  return impl_->last_round_request;
}

ServerStats Server::stats() const {
  ServerStats stats = impl_->counters;
  stats.connections = impl_->connections.size();
  stats.keys = impl_->spaces.key_count();
  stats.run_wide_keys = impl_->spaces.run_wide_key_count();
  stats.round = impl_->spaces.current_round();
  stats.stored_bytes = impl_->spaces.stored_bytes();
  stats.buffered_bytes = impl_->buffered;
  return stats;
}

}  // namespace gangrun::store
