// The store benchmark's load generator: one program that drives any TCPStore
// server (gangrun's, PyTorch's) with the same bytes, so the two are compared on
// equal terms. It speaks the legacy (1.13) dialect, or with --validated PyTorch
// 2.x's: each connection first sends VALIDATE and PING and waits for PING's
// answer, as a 2.x TCPStore client does, before its requests (2.x numbering).
// gangrun's server serves both; each PyTorch server only its own.
//
//   store_load [--validated] [--one-source] setget HOST PORT CONNECTIONS SECONDS
//       Each connection repeats SET key_i value then GET key_i (one GET in flight
//       per connection, as a PyTorch client does) for SECONDS; prints requests/s.
//   store_load [--validated] [--one-source] storm HOST PORT N TIMEOUT_SECONDS [THREADS]
//       N connections open at once, from THREADS threads (default 8) that each
//       connect their share as fast as they can; each connection ADDs 1 to a
//       counter, the one that brings it to N SETs a "done" key, and every one
//       WAITs for "done". Prints the time from the first connect to the last
//       STOP_WAITING.
//       On IPv4 loopback each thread connects from its own source address
//       (127.0.T.1 for thread T): with tens of thousands of connections to one
//       port, the kernel's search for a free ephemeral port otherwise grows with
//       every connection, and the generator, not the server, is what gets
//       slower. The connections end with a reset, so that no TIME_WAIT is left
//       to slow down the next storm. --one-source connects from HOST's own
//       address instead (for a server that looks up each client's name: only
//       127.0.0.1 is sure to be in /etc/hosts).
//
// Output: one JSON object on stdout. Exit 1 on any error or timeout.
#include "store/codec.hpp"

#include <boost/asio/connect.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/read.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/write.hpp>

#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sys/epoll.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <exception>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <thread>
#include <utility>
#include <vector>

namespace {

namespace asio = boost::asio;
namespace store = gangrun::store;
using asio::ip::tcp;
using Clock = std::chrono::steady_clock;

// Set once by main from --validated and --one-source, before any connection.
store::Dialect dialect = store::Dialect::legacy;
bool one_source = false;

std::string request(store::Op op, std::vector<std::string> keys, std::vector<std::string> values,
                    std::int64_t number = 0, std::uint32_t word = 0) {
  auto bytes = store::encode_request(
      dialect, store::make_request(op, std::move(keys), std::move(values), number, word));
  if (!bytes) {
    std::fprintf(stderr, "store_load: %s\n", bytes.error().describe().c_str());
    std::exit(1);
  }
  return *bytes;
}

[[noreturn]] void die(const std::string& message) {
  std::fprintf(stderr, "store_load: %s\n", message.c_str());
  std::exit(1);
}

// What a 2.x client sends on connecting: VALIDATE (no answer) and PING, whose
// answer (the nonce back, 4 bytes) it waits for. Empty in the legacy dialect.
constexpr std::uint32_t k_ping_nonce = 0x5EED;
constexpr std::size_t k_ping_reply_size = 4;
std::string handshake() {
  if (dialect != store::Dialect::validated) return {};
  return request(store::Op::validate, {}, {}, 0, store::k_validate_magic) +
         request(store::Op::ping, {}, {}, 0, k_ping_nonce);
}

Clock::duration to_duration(double seconds) {
  return std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(seconds));
}

class UniqueSocket {
 public:
  UniqueSocket() = default;
  explicit UniqueSocket(int fd) : fd_(fd) {}
  UniqueSocket(UniqueSocket&& other) noexcept : fd_(std::exchange(other.fd_, -1)) {}
  UniqueSocket(const UniqueSocket&) = delete;
  UniqueSocket& operator=(const UniqueSocket&) = delete;
  UniqueSocket& operator=(UniqueSocket&& other) noexcept {
    std::swap(fd_, other.fd_);
    return *this;
  }
  ~UniqueSocket() {
    if (fd_ >= 0) ::close(fd_);
  }
  int get() const { return fd_; }

 private:
  int fd_ = -1;
};

UniqueSocket connect_to(const tcp::endpoint& endpoint) {
  UniqueSocket fd(::socket(endpoint.protocol().family(), SOCK_STREAM | SOCK_CLOEXEC, 0));
  if (fd.get() < 0) die("socket failed");
  if (::connect(fd.get(), endpoint.data(), static_cast<socklen_t>(endpoint.size())) != 0) {
    die("connect to the server failed");
  }
  int on = 1;
  ::setsockopt(fd.get(), IPPROTO_TCP, TCP_NODELAY, &on, sizeof on);
  const std::string hello = handshake();
  if (hello.empty()) return fd;
  if (::send(fd.get(), hello.data(), hello.size(), MSG_NOSIGNAL) !=
      static_cast<ssize_t>(hello.size())) {
    die("send of VALIDATE + PING failed");
  }
  char echo[k_ping_reply_size];
  std::size_t got = 0;
  while (got < sizeof echo) {
    ssize_t n = ::recv(fd.get(), echo + got, sizeof echo - got, 0);
    if (n <= 0) die("the server closed the connection after VALIDATE + PING");
    got += static_cast<std::size_t>(n);
  }
  return fd;
}

void raise_open_file_limit() {
  rlimit limit{};
  if (::getrlimit(RLIMIT_NOFILE, &limit) == 0 && limit.rlim_cur < limit.rlim_max) {
    limit.rlim_cur = limit.rlim_max;
    ::setrlimit(RLIMIT_NOFILE, &limit);
  }
}

// ---- setget -------------------------------------------------------------------

// Plain epoll rather than Asio here: the generator shares the machine with the
// server, so every syscall it saves is CPU the server under test gets.
int run_setget(const tcp::endpoint& endpoint, int connections, double seconds) {
  const std::string value(64, 'v');
  const std::size_t reply_size = 8 + value.size();
  struct Client {
    UniqueSocket fd;
    std::string round;         // SET key value + GET key
    std::size_t received = 0;  // bytes of the current reply
    std::uint64_t rounds = 0;
  };
  std::vector<Client> clients(static_cast<std::size_t>(connections));
  int epoll_fd = ::epoll_create1(EPOLL_CLOEXEC);
  if (epoll_fd < 0) die("epoll_create1 failed");
  for (std::size_t i = 0; i < clients.size(); ++i) {
    Client& client = clients[i];
    client.fd = connect_to(endpoint);
    std::string key = "/bench/key" + std::to_string(i);
    client.round = request(store::Op::set, {key}, {value}) + request(store::Op::get, {key}, {});
    epoll_event event{};
    event.events = EPOLLIN;
    event.data.u64 = i;
    if (::epoll_ctl(epoll_fd, EPOLL_CTL_ADD, client.fd.get(), &event) != 0) die("epoll_ctl failed");
  }

  std::vector<char> sink(reply_size);
  auto send_round = [&](Client& client) {
    if (::send(client.fd.get(), client.round.data(), client.round.size(), MSG_NOSIGNAL) !=
        static_cast<ssize_t>(client.round.size())) {
      die("send failed or was short");
    }
  };
  Clock::time_point start = Clock::now();
  Clock::time_point deadline = start + to_duration(seconds);
  for (Client& client : clients) send_round(client);
  std::vector<epoll_event> events(clients.size());
  Clock::time_point now = start;
  while (now < deadline) {
    int ready = ::epoll_wait(epoll_fd, events.data(), static_cast<int>(events.size()), 1000);
    if (ready < 0 && errno != EINTR) die("epoll_wait failed");
    for (int e = 0; e < ready; ++e) {
      Client& client = clients[events[static_cast<std::size_t>(e)].data.u64];
      ssize_t got = ::recv(client.fd.get(), sink.data(), reply_size - client.received, 0);
      if (got <= 0) die("the server closed a connection");
      client.received += static_cast<std::size_t>(got);
      if (client.received < reply_size) continue;
      client.received = 0;
      ++client.rounds;
      send_round(client);
    }
    now = Clock::now();
  }
  ::close(epoll_fd);

  std::uint64_t rounds = 0;
  for (Client& client : clients) rounds += client.rounds;
  double elapsed = std::chrono::duration<double>(now - start).count();
  // Two requests (SET and GET) per round.
  std::printf(
      "{\"mode\": \"setget\", \"connections\": %d, \"seconds\": %.3f, \"requests\": %llu, "
      "\"requests_per_second\": %.1f}\n",
      connections, elapsed, static_cast<unsigned long long>(rounds) * 2,
      static_cast<double>(rounds * 2) / elapsed);
  return 0;
}

// ---- storm ----------------------------------------------------------------------

struct StormClient {
  tcp::socket socket;
  std::string buffer;
};

// A socket for one storm connection, bound to `source` (port chosen at connect).
tcp::socket storm_socket(asio::io_context& io, const tcp::endpoint& server,
                         const std::optional<asio::ip::address>& source) {
  tcp::socket socket(io);
  socket.open(server.protocol());
  if (source) {
    int on = 1;
    ::setsockopt(socket.native_handle(), IPPROTO_IP, IP_BIND_ADDRESS_NO_PORT, &on, sizeof on);
    socket.bind(tcp::endpoint(*source, 0));
  }
  return socket;
}

// One thread's share of a storm: `share` of the `total` connections, on its
// own event loop. Returns when all of them were released (or exits on error).
Clock::time_point run_storm_share(const tcp::endpoint& endpoint, int share, int total,
                                  double timeout_seconds, int thread) {
  std::optional<asio::ip::address> source;
  if (!one_source && endpoint.address().is_v4() && endpoint.address().is_loopback()) {
    source = asio::ip::make_address_v4(
        asio::ip::address_v4::uint_type{0x7f000001u | (static_cast<unsigned>(thread + 1) << 8)});
  }
  asio::io_context io;
  const std::string counter = "/storm/share";
  const std::string done = "/storm/done";
  const std::string add = request(store::Op::add, {counter}, {}, 1);
  const std::string wait = request(store::Op::wait, {done}, {});
  const std::string set_done = request(store::Op::set, {done}, {"1"});
  const std::string hello = handshake();
  int released = 0;
  std::vector<std::unique_ptr<StormClient>> clients;
  Clock::time_point last_release = Clock::now();
  asio::steady_timer timer(io, to_duration(timeout_seconds));

  for (int i = 0; i < share; ++i) {
    clients.push_back(
        std::make_unique<StormClient>(StormClient{storm_socket(io, endpoint, source), {}}));
    StormClient& client = *clients.back();
    // ADD, then the last arriver SETs "done", then every one WAITs.
    auto add_and_wait = [&] {
      client.buffer.resize(8);
      asio::async_write(client.socket, asio::buffer(add), [&](auto write_error, std::size_t) {
        if (write_error) die("write: " + write_error.message());
        asio::async_read(
            client.socket, asio::buffer(client.buffer), [&](auto read_error, std::size_t) {
              if (read_error) die("read ADD reply: " + read_error.message());
              store::ReplyReader reader(client.buffer);
              std::int64_t reached = reader.read_i64().value_or(0);
              // The last arriver releases everyone, then waits like the others.
              const std::string& next = reached == total ? set_done + wait : wait;
              asio::async_write(client.socket, asio::buffer(next), [&](auto error2, std::size_t) {
                if (error2) die("write: " + error2.message());
                client.buffer.resize(1);
                asio::async_read(client.socket, asio::buffer(client.buffer),
                                 [&](auto error3, std::size_t) {
                                   if (error3) die("read WAIT reply: " + error3.message());
                                   last_release = Clock::now();
                                   if (++released == share) timer.cancel();
                                 });
              });
            });
      });
    };
    client.socket.async_connect(endpoint, [&, i, add_and_wait](auto error) {
      if (error) die("connect " + std::to_string(i) + ": " + error.message());
      client.socket.set_option(tcp::no_delay(true));
      if (hello.empty()) return add_and_wait();
      asio::async_write(client.socket, asio::buffer(hello),
                        [&, add_and_wait](auto error1, std::size_t) {
                          if (error1) die("write VALIDATE + PING: " + error1.message());
                          client.buffer.resize(k_ping_reply_size);
                          asio::async_read(client.socket, asio::buffer(client.buffer),
                                           [add_and_wait](auto error2, std::size_t) {
                                             if (error2)
                                               die("read PING reply: " + error2.message());
                                             add_and_wait();
                                           });
                        });
    });
  }
  timer.async_wait([&](auto error) {
    if (!error) {
      die("storm of " + std::to_string(total) + " timed out after " +
          std::to_string(timeout_seconds) + " s with " + std::to_string(released) + " of " +
          std::to_string(share) + " released on one thread");
    }
  });
  io.run();
  for (auto& client : clients) {
    boost::system::error_code ignored;
    client->socket.set_option(asio::socket_base::linger(true, 0), ignored);
  }
  return last_release;
}

int run_storm(const tcp::endpoint& endpoint, int count, double timeout_seconds, int threads) {
  threads = std::clamp(threads, 1, count);
  std::vector<Clock::time_point> last_releases(static_cast<std::size_t>(threads));
  std::vector<std::thread> workers;
  Clock::time_point start = Clock::now();
  for (int t = 0; t < threads; ++t) {
    int share = count / threads + (t < count % threads ? 1 : 0);
    workers.emplace_back([&, t, share] {
      last_releases[static_cast<std::size_t>(t)] =
          run_storm_share(endpoint, share, count, timeout_seconds, t);
    });
  }
  for (std::thread& worker : workers) worker.join();
  Clock::time_point last = *std::max_element(last_releases.begin(), last_releases.end());
  std::printf("{\"mode\": \"storm\", \"connections\": %d, \"threads\": %d, \"seconds\": %.4f}\n",
              count, threads, std::chrono::duration<double>(last - start).count());
  return 0;
}

}  // namespace

int main(int argc, char** argv) try {
  for (; argc > 1 && std::string(argv[1]).starts_with("--"); --argc, ++argv) {
    if (std::string(argv[1]) == "--validated") {
      dialect = store::Dialect::validated;
    } else if (std::string(argv[1]) == "--one-source") {
      one_source = true;
    } else {
      die(std::string("unknown option ") + argv[1]);
    }
  }
  if (argc != 6 && argc != 7) {
    std::fprintf(stderr,
                 "usage: store_load [--validated] [--one-source] setget HOST PORT CONNECTIONS "
                 "SECONDS\n"
                 "       store_load [--validated] [--one-source] storm HOST PORT N TIMEOUT_SECONDS "
                 "[THREADS]\n");
    return 2;
  }
  raise_open_file_limit();
  std::string mode = argv[1];
  boost::system::error_code error;
  auto address = asio::ip::make_address(argv[2], error);
  if (error) die(std::string("bad HOST ") + argv[2]);
  tcp::endpoint endpoint(address, static_cast<unsigned short>(std::atoi(argv[3])));
  int count = std::atoi(argv[4]);
  double seconds = std::atof(argv[5]);
  if (count <= 0 || seconds <= 0) die("CONNECTIONS/N and SECONDS must be positive");
  if (mode == "setget") return run_setget(endpoint, count, seconds);
  int threads = argc == 7 ? std::atoi(argv[6]) : 8;
  if (threads <= 0) die("THREADS must be positive");
  if (mode == "storm") return run_storm(endpoint, count, seconds, threads);
  die("unknown mode " + mode);
} catch (const std::exception& error) {
  // Only allocation can throw here; say so rather than abort.
  die(std::string("store_load: ") + error.what());
}
