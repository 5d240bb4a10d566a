// Who may hold the store's connections and write its keys (server.hpp): the
// connections Server::protect marks survive a storm past max_connections,
// waiting connections give way to newcomers instead of locking them out, one
// address holds at most max_connections_per_address, and keys under
// publish_only_prefixes are written by publish() alone. The real server runs
// on this thread's loop; clients are raw sockets speaking the validated
// dialect, so each test waits for what the server did, never for a time.
#include "expected_checks.hpp"
#include "store/codec.hpp"
#include "store/server.hpp"
#include "util/fd.hpp"

#include <boost/asio/io_context.hpp>
#include <catch2/catch.hpp>

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>

#include <cerrno>
#include <chrono>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

namespace {

using gangrun::UniqueFd;
using gangrun::store::ConnectionId;
using gangrun::store::Dialect;
using gangrun::store::make_request;
using gangrun::store::Op;
using gangrun::store::ReplyReader;
using gangrun::store::Request;
using gangrun::store::Server;
using gangrun::store::ServerEvents;
using gangrun::store::ServerSettings;
using gangrun::store::ServerStats;
using gangrun::testing::value_of;

constexpr std::chrono::seconds k_bound{20};
const std::string k_guarded = "gangrun/run/rdzv/";
const std::string k_end_key = k_guarded + "end/0";

// The server on a loopback ephemeral port, on a loop this thread runs; it
// records which connection last wrote each run-wide key.
class LoopServer {
 public:
  explicit LoopServer(ServerSettings settings) {
    settings.host = "127.0.0.1";
    settings.port = 0;
    settings.raise_open_file_limit = false;
    server_ = value_of(Server::start(io_, settings));
    server_->observe(
        ServerEvents{.run_key_set = [this](ConnectionId from, const std::string& key,
                                           const std::string&) { writers_[key] = from; }});
  }

  Server& server() { return *server_; }
  int port() const { return server_->port(); }
  ServerStats stats() const { return server_->stats(); }

  // Runs the loop until done() holds; fails the test after k_bound.
  void until(const std::function<bool()>& done, const std::string& what) {
    auto deadline = std::chrono::steady_clock::now() + k_bound;
    io_.restart();
    while (!done() && std::chrono::steady_clock::now() < deadline) {
      io_.run_one_for(std::chrono::milliseconds(20));
    }
    INFO("waiting for " << what);
    REQUIRE(done());
  }

  // The connection that wrote key (once the server told its observer).
  ConnectionId writer_of(const std::string& key) {
    until([&] { return writers_.contains(key); }, "the server to report a write of " + key);
    return writers_.at(key);
  }

 private:
  boost::asio::io_context io_;
  std::unique_ptr<Server> server_;
  std::map<std::string, ConnectionId> writers_;
};

// One client connection from a loopback address of its choice (all of
// 127.0.0.0/8 is loopback on Linux), in the validated dialect.
class RawClient {
 public:
  RawClient(int port, const char* from = "127.0.0.1")
      : socket_(::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0)) {
    REQUIRE(socket_.get() >= 0);
    sockaddr_in local{};
    local.sin_family = AF_INET;
    REQUIRE(::inet_pton(AF_INET, from, &local.sin_addr) == 1);
    REQUIRE(::bind(socket_.get(), reinterpret_cast<sockaddr*>(&local), sizeof local) == 0);
    sockaddr_in server{};
    server.sin_family = AF_INET;
    server.sin_port = htons(static_cast<std::uint16_t>(port));
    REQUIRE(::inet_pton(AF_INET, "127.0.0.1", &server.sin_addr) == 1);
    // Completes once the kernel queued it: the server accepts it when its loop runs.
    REQUIRE(::connect(socket_.get(), reinterpret_cast<sockaddr*>(&server), sizeof server) == 0);
    send(make_request(Op::validate, {}, {}, 0, gangrun::store::k_validate_magic));
  }

  void send(const Request& request) {
    std::string bytes = value_of(encode_request(Dialect::validated, request));
    REQUIRE(::send(socket_.get(), bytes.data(), bytes.size(), MSG_NOSIGNAL) ==
            static_cast<ssize_t>(bytes.size()));
  }

  // Reads what has arrived without blocking; true once the server closed it.
  bool closed() {
    char buffer[4096];
    for (;;) {
      ssize_t got = ::recv(socket_.get(), buffer, sizeof buffer, MSG_DONTWAIT);
      if (got > 0) {
        received_.append(buffer, static_cast<std::size_t>(got));
        continue;
      }
      if (got == 0 || (errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR)) eof_ = true;
      return eof_;
    }
  }
  bool has(std::size_t bytes) {
    closed();
    return received_.size() >= bytes;
  }
  // Bytes received and not yet taken.
  ReplyReader reply() const { return ReplyReader(received_); }
  void take(std::size_t bytes) { received_.erase(0, bytes); }

 private:
  UniqueFd socket_;
  std::string received_;
  bool eof_ = false;
};

// Sends PING and runs the loop until its answer arrives: the client is served.
void ping(LoopServer& server, RawClient& client, std::uint32_t nonce = 7) {
  client.send(make_request(Op::ping, {}, {}, 0, nonce));
  server.until([&] { return client.has(4) || client.closed(); }, "a PING answer");
  REQUIRE_FALSE(client.closed());
  CHECK(client.reply().read_u32() == nonce);
  client.take(4);
}

// GET key's value as a fresh client reads it.
std::string read_key(LoopServer& server, const std::string& key) {
  RawClient reader(server.port());
  reader.send(make_request(Op::get, {key}));
  std::optional<std::string> value;
  server.until(
      [&] {
        reader.closed();
        value = reader.reply().read_bytes();
        return value.has_value();
      },
      "a GET answer");
  return *value;
}

// Opens count silent connections, each admitted (or let in by a reclaim)
// before the next: accepted_before + count connections reached the server.
std::vector<std::unique_ptr<RawClient>> storm(LoopServer& server, std::size_t count,
                                              const char* from = "127.0.0.1") {
  std::vector<std::unique_ptr<RawClient>> clients;
  for (std::size_t i = 0; i < count; ++i) {
    ServerStats before = server.stats();
    clients.push_back(std::make_unique<RawClient>(server.port(), from));
    server.until(
        [&] {
          ServerStats now = server.stats();
          return now.connections + now.connections_reclaimed + now.connections_refused >
                 before.connections + before.connections_reclaimed + before.connections_refused;
        },
        "the server to take a connection");
  }
  return clients;
}

ServerSettings with_limits(std::size_t max_connections, std::size_t per_address) {
  ServerSettings settings;
  settings.limits.max_connections = max_connections;
  settings.limits.max_connections_per_address = per_address;
  return settings;
}

}  // namespace

TEST_CASE("store limits: a protected connection survives a storm past max_connections",
          "[store][limits]") {
  LoopServer server(with_limits(8, 0));
  RawClient agent(server.port());
  agent.send(make_request(Op::set, {"gangrun/run/rdzv/join/0"}, {"agent 0"}));
  server.server().protect(server.writer_of("gangrun/run/rdzv/join/0"));
  server.server().protect(9999);  // unknown: ignored
  RawClient bystander(server.port());
  ping(server, bystander);  // heard from after the agent, and not protected

  auto silent = storm(server, 30);
  CHECK(server.stats().connections == 8);
  CHECK(server.stats().connections_reclaimed == 30 - 6);
  server.until([&] { return bystander.closed(); }, "the unprotected bystander to be reclaimed");
  CHECK_FALSE(agent.closed());
  ping(server, agent);
}

TEST_CASE("store limits: a newcomer is refused only when every connection is protected",
          "[store][limits]") {
  LoopServer server(with_limits(2, 0));
  std::vector<std::unique_ptr<RawClient>> agents;
  for (int i = 0; i < 2; ++i) {
    std::string key = "gangrun/run/rdzv/join/" + std::to_string(i);
    agents.push_back(std::make_unique<RawClient>(server.port()));
    agents.back()->send(make_request(Op::set, {key}, {"agent"}));
    server.server().protect(server.writer_of(key));
  }
  RawClient newcomer(server.port());
  server.until([&] { return newcomer.closed(); }, "the newcomer to be refused");
  CHECK(server.stats().connections_refused == 1);
  CHECK(server.stats().connections_reclaimed == 0);
  for (auto& agent : agents) ping(server, *agent);
}

TEST_CASE("store limits: waiting connections give way to newcomers instead of locking them out",
          "[store][limits]") {
  LoopServer server(with_limits(4, 0));
  std::vector<std::unique_ptr<RawClient>> waiters;
  for (int i = 0; i < 4; ++i) {
    waiters.push_back(std::make_unique<RawClient>(server.port()));
    waiters.back()->send(make_request(Op::wait, {"/never"}));
    ping(server, *waiters.back());  // answered once the WAIT is registered
  }
  // A silent connection arrives after them: it is the one idle, so it goes first.
  RawClient newcomer(server.port());
  ping(server, newcomer);
  CHECK(server.stats().connections_reclaimed == 1);
  server.until([&] { return waiters.front()->closed(); },
               "the waiter heard from least recently to be reclaimed");
  for (std::size_t i = 1; i < waiters.size(); ++i) CHECK_FALSE(waiters[i]->closed());

  // Now every other connection waits too, and the newcomer that was idle
  // goes before them; then the waiter heard from least recently.
  RawClient second(server.port());
  ping(server, second);
  server.until([&] { return newcomer.closed(); }, "the idle newcomer to be reclaimed first");
  CHECK_FALSE(waiters[1]->closed());
  CHECK(server.stats().connections_refused == 0);
}

TEST_CASE("store limits: one address holds at most max_connections_per_address",
          "[store][limits]") {
  LoopServer server(with_limits(100, 3));
  auto first = storm(server, 3);
  RawClient over(server.port());
  server.until([&] { return over.closed(); }, "the fourth connection of 127.0.0.1 to be refused");
  CHECK(server.stats().connections_refused == 1);
  CHECK(server.stats().connections == 3);

  RawClient elsewhere(server.port(), "127.0.0.2");
  ping(server, elsewhere);

  // A protected connection counts against no address: its place is free again.
  first.front()->send(make_request(Op::set, {"gangrun/run/rdzv/join/0"}, {"agent"}));
  server.server().protect(server.writer_of("gangrun/run/rdzv/join/0"));
  RawClient another(server.port());
  ping(server, another);
  CHECK(server.stats().connections == 5);
}

TEST_CASE("store limits: at max_connections the most crowded address gives way",
          "[store][limits]") {
  LoopServer server(with_limits(6, 0));
  RawClient quiet(server.port(), "127.0.0.2");
  ping(server, quiet);  // heard from least recently of all
  auto crowd = storm(server, 5, "127.0.0.3");
  RawClient newcomer(server.port(), "127.0.0.4");
  ping(server, newcomer);
  // Which of the crowd goes depends on the order its bytes were read in.
  server.until(
      [&] {
        for (auto& member : crowd) {
          if (member->closed()) return true;
        }
        return false;
      },
      "one of the crowd to be reclaimed");
  CHECK(server.stats().connections_reclaimed == 1);
  CHECK_FALSE(quiet.closed());
}

TEST_CASE("store limits: keys under publish_only_prefixes change only through publish",
          "[store][limits]") {
  ServerSettings settings;
  settings.publish_only_prefixes = {k_guarded};
  LoopServer server(settings);
  server.server().publish(k_end_key, "running");

  const std::vector<Request> writes = {
      make_request(Op::set, {k_end_key}, {"success"}),
      make_request(Op::add, {k_end_key}, {}, 1),
      make_request(Op::delete_key, {k_end_key}),
      make_request(Op::compare_set, {k_end_key}, {"running", "success"}),
      make_request(Op::append, {k_end_key}, {"!"}),
      make_request(Op::multi_set, {"gangrun/run/free", k_end_key}, {"x", "success"}),
      make_request(Op::queue_push, {k_end_key}, {"x"}),
      make_request(Op::queue_pop, {k_end_key}),
      make_request(Op::barrier, {k_end_key}, {}, 2),
  };
  for (const Request& write : writes) {
    INFO(gangrun::store::op_name(write.op));
    RawClient forger(server.port());
    forger.send(write);
    server.until([&] { return forger.closed(); }, "the forged write's connection to be closed");
    CHECK(read_key(server, k_end_key) == "running");
  }
  CHECK(server.stats().writes_refused == writes.size());
  CHECK(read_key(server, "gangrun/run/free").empty());  // MULTI_SET stored none of its keys

  // Reads stay allowed, a WAIT is woken by publish, and keys outside stay writable.
  RawClient waiter(server.port());
  waiter.send(make_request(Op::wait, {k_guarded + "round/1"}));
  ping(server, waiter);
  server.server().publish(k_guarded + "round/1", "plan");
  server.until([&] { return waiter.has(1); }, "the WAIT to be answered");
  CHECK(waiter.reply().read_u8() == gangrun::store::k_wait_stop_waiting);
  waiter.take(1);
  waiter.send(make_request(Op::check, {k_end_key}));
  server.until([&] { return waiter.has(1); }, "the CHECK answer");
  CHECK(waiter.reply().read_u8() == gangrun::store::k_check_ready);
  waiter.take(1);
  waiter.send(make_request(Op::set, {"gangrun/run/agents/0"}, {"up"}));
  ping(server, waiter);
  CHECK(read_key(server, "gangrun/run/agents/0") == "up");
  server.server().publish(k_end_key, "success");
  CHECK(read_key(server, k_end_key) == "success");
}
