// store::Client against the real server (on its own thread, port 0), in both
// dialects, and against sockets that misbehave on purpose: a closed port, a
// listener that never answers, a server that claims a huge reply. Every
// test runs under short timeouts.
#include "expected_checks.hpp"
#include "store/client.hpp"
#include "store/server.hpp"
#include "threaded_store_server.hpp"

#include <boost/asio/executor_work_guard.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <catch2/catch.hpp>

#include <poll.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <thread>
#include <vector>

namespace {

using gangrun::testing::ok;
using gangrun::testing::value_of;

namespace asio = boost::asio;
using asio::ip::tcp;
using Catch::Matchers::Contains;
using gangrun::ErrorCode;
using gangrun::Expected;
using gangrun::store::Client;
using gangrun::store::ClientSettings;
using gangrun::store::Dialect;
using gangrun::store::Server;
using gangrun::store::ServerSettings;
using Clock = std::chrono::steady_clock;
using std::chrono::milliseconds;

using TestServer = gangrun::testing::ThreadedStoreServer;

// A one-connection fake store on loopback, run by a thread that plays a
// script on the accepted socket. Every blocking step gives up after a few
// seconds, so a client that misbehaves fails the test instead of hanging it.
class ScriptedPeer {
 public:
  // Each step reads exactly n bytes (returning them) or writes bytes.
  class Socket {
   public:
    explicit Socket(int fd) : fd_(fd) {}
    std::string read(std::size_t n) {
      std::string bytes;
      char buffer[4096];
      while (bytes.size() < n) {
        ssize_t got = ::recv(fd_, buffer, std::min(sizeof buffer, n - bytes.size()), 0);
        if (got <= 0) break;
        bytes.append(buffer, static_cast<std::size_t>(got));
      }
      return bytes;
    }
    void write(std::string_view bytes) {
      while (!bytes.empty()) {
        ssize_t sent = ::send(fd_, bytes.data(), bytes.size(), MSG_NOSIGNAL);
        if (sent <= 0) return;
        bytes.remove_prefix(static_cast<std::size_t>(sent));
      }
    }
    // Until the client hangs up (or the step times out).
    void drain() {
      char buffer[4096];
      while (::recv(fd_, buffer, sizeof buffer, 0) > 0) {
      }
    }

   private:
    int fd_;
  };

  explicit ScriptedPeer(std::function<void(Socket&)> script)
      : acceptor_(io_, tcp::endpoint(asio::ip::address_v4::loopback(), 0)) {
    thread_ = std::thread([this, script = std::move(script)] {
      pollfd listening{acceptor_.native_handle(), POLLIN, 0};
      if (::poll(&listening, 1, k_step_ms) != 1) return;
      int fd = ::accept(acceptor_.native_handle(), nullptr, nullptr);
      if (fd < 0) return;
      timeval limit{k_step_ms / 1000, 0};
      ::setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &limit, sizeof limit);
      ::setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &limit, sizeof limit);
      Socket socket(fd);
      script(socket);
      ::close(fd);
    });
  }
  ~ScriptedPeer() { join(); }
  ScriptedPeer(const ScriptedPeer&) = delete;
  ScriptedPeer& operator=(const ScriptedPeer&) = delete;

  int port() const { return acceptor_.local_endpoint().port(); }
  void join() {
    if (thread_.joinable()) thread_.join();
  }

 private:
  static constexpr int k_step_ms = 5000;
  asio::io_context io_;
  tcp::acceptor acceptor_;
  std::thread thread_;
};

ClientSettings settings_for(int port, Dialect dialect) {
  ClientSettings settings;
  settings.host = "127.0.0.1";
  settings.port = port;
  settings.dialect = dialect;
  settings.connect_timeout = milliseconds(5000);
  settings.timeout = milliseconds(5000);
  return settings;
}

Client connect_to(int port, Dialect dialect) {
  Expected<Client> client = Client::connect(settings_for(port, dialect));
  if (!client) FAIL("connect failed: " << client.error().describe());
  return std::move(*client);
}

// A port nothing listens on (bound a moment ago, then released).
int closed_port() {
  asio::io_context io;
  tcp::acceptor acceptor(io, tcp::endpoint(asio::ip::address_v4::loopback(), 0));
  return acceptor.local_endpoint().port();
}

long elapsed_ms(Clock::time_point since) {
  return static_cast<long>(std::chrono::duration_cast<milliseconds>(Clock::now() - since).count());
}

}  // namespace

TEST_CASE("store::Client performs every operation against the server", "[store][client]") {
  TestServer server;
  Dialect dialect = GENERATE(Dialect::validated, Dialect::legacy);
  CAPTURE(dialect == Dialect::validated ? "validated" : "legacy");
  Client client = connect_to(server.port(), dialect);

  ok(client.set("/a", std::string("x\0y", 3)));
  CHECK(value_of(client.get("/a")) == std::string("x\0y", 3));
  ok(client.set("/a", ""));
  CHECK(value_of(client.get("/a")).empty());

  CHECK(value_of(client.add("/n", 5)) == 5);
  CHECK(value_of(client.add("/n", -7)) == -2);
  CHECK(value_of(client.get("/n")) == "-2");

  CHECK(value_of(client.compare_set("/c", "", "first")) == "first");
  CHECK(value_of(client.compare_set("/c", "wrong", "second")) == "first");
  CHECK(value_of(client.compare_set("/c", "first", "second")) == "second");
  CHECK(value_of(client.compare_set("/missing", "expected", "x")) == "expected");

  CHECK(value_of(client.check({"/a", "/n"})));
  CHECK_FALSE(value_of(client.check({"/a", "/missing"})));
  ok(client.wait({"/a", "/n"}));

  CHECK(value_of(client.num_keys()) == 3);
  CHECK(value_of(client.delete_key("/c")));
  CHECK_FALSE(value_of(client.delete_key("/c")));
  CHECK(value_of(client.num_keys()) == 2);

  // 2.1-era queries: the server accepts them in both dialects.
  ok(client.append("/log", "ab"));
  ok(client.append("/log", "cd"));
  CHECK(value_of(client.get("/log")) == "abcd");
  ok(client.multi_set({"/m1", "/m2"}, {"1", "2"}));
  CHECK(value_of(client.multi_get({"/m2", "/m1"})) == std::vector<std::string>{"2", "1"});
  Expected<void> mismatched = client.multi_set({"/m1"}, {});
  REQUIRE_FALSE(mismatched);
  CHECK(mismatched.error().code() == ErrorCode::usage);

  const std::string big(3 * 1024 * 1024, 'v');
  ok(client.set("/big", big));
  CHECK(value_of(client.get("/big")) == big);

  if (dialect == Dialect::validated) {
    std::vector<std::string> keys = value_of(client.list_keys());
    std::sort(keys.begin(), keys.end());
    CHECK(keys == std::vector<std::string>{"/a", "/big", "/log", "/m1", "/m2", "/n"});
    CHECK(value_of(client.ping(0xabcdef01u)) == 0xabcdef01u);
  } else {
    Expected<std::vector<std::string>> keys = client.list_keys();
    REQUIRE_FALSE(keys);
    CHECK(keys.error().code() == ErrorCode::usage);
    Expected<std::uint32_t> pong = client.ping(1);
    REQUIRE_FALSE(pong);
    CHECK(pong.error().code() == ErrorCode::usage);
    // The refused query sent nothing: the connection is still in step.
    CHECK(value_of(client.add("/n", 2)) == 0);
  }
}

TEST_CASE("store::Client wait times out, names the keys, and the client stays usable",
          "[store][client]") {
  TestServer server;
  Dialect dialect = GENERATE(Dialect::validated, Dialect::legacy);
  CAPTURE(dialect == Dialect::validated ? "validated" : "legacy");
  Client client = connect_to(server.port(), dialect);
  Client other = connect_to(server.port(), dialect);

  Clock::time_point start = Clock::now();
  Expected<void> waited = client.wait({"/never", "/also"}, milliseconds(150));
  REQUIRE_FALSE(waited);
  CHECK(waited.error().code() == ErrorCode::store);
  CHECK_THAT(waited.error().message(), Contains("timed out after 150 ms"));
  CHECK_THAT(waited.error().message(), Contains("/never, /also"));
  CHECK(elapsed_ms(start) >= 150);
  CHECK(elapsed_ms(start) < 3000);

  // The abandoned wait is released now; its STOP_WAITING must not be taken
  // for the reply to anything the client asks next.
  ok(other.set("/never", "1"));
  ok(other.set("/also", "2"));
  CHECK(value_of(client.add("/counter", 1)) == 1);
  CHECK(value_of(client.get("/never")) == "1");
  CHECK(value_of(client.check({"/also"})));

  // A second timed-out wait on the same client, then a wait that succeeds.
  REQUIRE_FALSE(client.wait({"/later"}, milliseconds(50)));
  ok(other.set("/later", "x"));
  ok(client.wait({"/later"}, milliseconds(2000)));
  CHECK(value_of(client.add("/counter", 1)) == 2);
}

TEST_CASE("store::Client drops a STOP_WAITING that crosses its CANCEL_WAIT", "[store][client]") {
  // A scripted 2.x server that releases the wait just as the client cancels
  // it: STOP_WAITING then WAIT_CANCELED. The next reply must be ADD's.
  std::string seen;
  ScriptedPeer peer([&](ScriptedPeer::Socket& socket) {
    std::string handshake = socket.read(10);  // VALIDATE + magic, PING + nonce
    seen += handshake;
    if (handshake.size() == 10) socket.write(handshake.substr(6, 4));
    seen += socket.read(1 + 8 + 8 + 2);     // WAIT ["/k"]
    seen += socket.read(1);                 // CANCEL_WAIT
    socket.write(std::string{'\0', '\1'});  // STOP_WAITING, WAIT_CANCELED
    seen += socket.read(1 + 8 + 2 + 8);     // ADD "/n" 1
    const std::int64_t added = 42;
    socket.write(std::string_view(reinterpret_cast<const char*>(&added), sizeof added));
    socket.drain();
  });
  {
    ClientSettings settings = settings_for(peer.port(), Dialect::validated);
    settings.timeout = milliseconds(2000);
    Client client = value_of(Client::connect(settings));
    Expected<void> waited = client.wait({"/k"}, milliseconds(100));
    REQUIRE_FALSE(waited);
    CHECK_THAT(waited.error().message(), Contains("timed out after 100 ms"));
    CHECK(value_of(client.add("/n", 1)) == 42);
  }
  peer.join();
  REQUIRE(seen.size() == 10 + 19 + 1 + 19);
  CHECK(seen[0] == 0);    // VALIDATE
  CHECK(seen[10] == 6);   // WAIT
  CHECK(seen[29] == 12);  // CANCEL_WAIT
  CHECK(seen[30] == 4);   // ADD
}

TEST_CASE("store::Client wait returns when another client sets the key", "[store][client]") {
  TestServer server;
  Client client = connect_to(server.port(), Dialect::validated);
  std::thread setter([port = server.port()] {
    std::this_thread::sleep_for(milliseconds(100));
    Client other = connect_to(port, Dialect::legacy);
    ok(other.set("/k", "v"));
  });
  Clock::time_point start = Clock::now();
  Expected<std::string> value = client.get("/k");
  setter.join();
  REQUIRE(value);
  CHECK(*value == "v");
  CHECK(elapsed_ms(start) >= 90);
}

TEST_CASE("store::Client retries a connection until the server is up", "[store][client]") {
  // The port stays ours: a socket bound to it with SO_REUSEADDR but not listening
  // refuses connections (so the client retries) and keeps other programs off the port,
  // while the server, which sets SO_REUSEADDR too, can still bind it and listen.
  asio::io_context io;
  tcp::acceptor reserved(io);
  reserved.open(tcp::v4());
  reserved.set_option(tcp::acceptor::reuse_address(true));
  reserved.bind(tcp::endpoint(asio::ip::address_v4::loopback(), 0));
  const int port = reserved.local_endpoint().port();
  auto work = asio::make_work_guard(io);
  std::unique_ptr<Server> server;
  std::string start_error;
  std::thread starter([&] {
    std::this_thread::sleep_for(milliseconds(200));
    ServerSettings settings;
    settings.port = port;
    if (auto started = Server::start(io, settings)) {
      server = std::move(*started);
    } else {
      start_error = started.error().describe();
    }
    io.run();  // until io.stop() below
  });
  // Generous: only a hang should reach them.
  ClientSettings settings = settings_for(port, Dialect::validated);
  settings.connect_timeout = milliseconds(30000);
  settings.timeout = milliseconds(30000);
  Clock::time_point start = Clock::now();
  Expected<std::int64_t> count = gangrun::fail(ErrorCode::internal, "not connected");
  {
    Expected<Client> client = Client::connect(settings);
    count = client ? client->num_keys() : tl::unexpected(client.error());
  }
  io.stop();
  starter.join();
  if (!server) {
    FAIL("the server could not start on the reserved port " << port << ": " << start_error);
  }
  if (!count) FAIL(count.error().describe());
  CHECK(*count == 0);
  CHECK(elapsed_ms(start) >= 150);
}

TEST_CASE("store::Client gives up connecting to a closed port after connect_timeout",
          "[store][client]") {
  int port = closed_port();
  ClientSettings settings = settings_for(port, Dialect::validated);
  settings.connect_timeout = milliseconds(300);
  Clock::time_point start = Clock::now();
  Expected<Client> client = Client::connect(settings);
  REQUIRE_FALSE(client);
  CHECK(client.error().code() == ErrorCode::store);
  CHECK_THAT(client.error().message(),
             Contains("cannot reach the store at 127.0.0.1:" + std::to_string(port)));
  CHECK_THAT(client.error().message(), Contains("refused"));
  CHECK(elapsed_ms(start) >= 300);
  CHECK(elapsed_ms(start) < 3000);
}

TEST_CASE("store::Client times out against a server that never answers", "[store][client]") {
  // A listening socket nobody accepts from: the kernel completes the TCP
  // handshake, and then nothing is ever read or written.
  asio::io_context io;
  tcp::acceptor silent(io, tcp::endpoint(asio::ip::address_v4::loopback(), 0));
  const int port = silent.local_endpoint().port();

  SECTION("validated: the VALIDATE + PING handshake times out") {
    ClientSettings settings = settings_for(port, Dialect::validated);
    settings.timeout = milliseconds(200);
    Clock::time_point start = Clock::now();
    Expected<Client> client = Client::connect(settings);
    REQUIRE_FALSE(client);
    CHECK(client.error().code() == ErrorCode::store);
    CHECK_THAT(client.error().message(), Contains("PING"));
    CHECK_THAT(client.error().message(), Contains("timed out after 200 ms"));
    CHECK(elapsed_ms(start) < 3000);
  }
  SECTION("legacy: an operation times out, naming it and the endpoint") {
    ClientSettings settings = settings_for(port, Dialect::legacy);
    settings.timeout = milliseconds(200);
    Client client = value_of(Client::connect(settings));
    Clock::time_point start = Clock::now();
    Expected<std::int64_t> count = client.num_keys();
    REQUIRE_FALSE(count);
    CHECK(count.error().code() == ErrorCode::store);
    CHECK_THAT(count.error().message(), Contains("GETNUMKEYS"));
    CHECK_THAT(count.error().message(), Contains("127.0.0.1:" + std::to_string(port)));
    CHECK_THAT(count.error().message(), Contains("timed out after 200 ms"));
    CHECK(elapsed_ms(start) >= 200);
    CHECK(elapsed_ms(start) < 3000);

    Expected<void> waited = client.wait({"/k"}, milliseconds(100));
    REQUIRE_FALSE(waited);
    CHECK_THAT(waited.error().message(), Contains("timed out after 100 ms waiting for keys: /k"));
  }
}

TEST_CASE("store::Client refuses a reply that claims an absurd length", "[store][client]") {
  // Answers COMPARE_SET, whose reply is a blob, with a length of 2^40 bytes.
  ScriptedPeer peer([](ScriptedPeer::Socket& socket) {
    socket.read(1);
    const std::uint64_t huge = std::uint64_t{1} << 40;
    socket.write(std::string_view(reinterpret_cast<const char*>(&huge), sizeof huge));
    socket.drain();
  });
  ClientSettings settings = settings_for(peer.port(), Dialect::legacy);
  settings.timeout = milliseconds(2000);
  Client client = value_of(Client::connect(settings));
  Expected<std::string> value = client.compare_set("/k", "", "v");
  REQUIRE_FALSE(value);
  CHECK(value.error().code() == ErrorCode::store);
  CHECK_THAT(value.error().message(), Contains("1099511627776 bytes"));
}

TEST_CASE("store::Client reports a store that goes away", "[store][client]") {
  auto server = std::make_unique<TestServer>();
  Client client = connect_to(server->port(), Dialect::validated);
  ok(client.set("/k", "v"));
  server.reset();
  Expected<std::int64_t> count = client.num_keys();
  REQUIRE_FALSE(count);
  CHECK(count.error().code() == ErrorCode::store);
}
