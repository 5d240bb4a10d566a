// Who may hold the store's connections and write its keys (server.hpp): the
// connections Server::protect marks survive a storm past max_connections,
// which eats its own tail (the newest connection of the most crowded address
// goes), waiting connections give way to newcomers instead of locking them
// out, one address holds at most max_connections_per_address silent
// connections (clients that spoke do not count), the stored bytes are held
// to max_total_bytes and max_bytes_per_address except for protected
// connections, and keys under publish_only_prefixes are written by
// publish() alone. The real server runs
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
  // handshake: send VALIDATE at once, as PyTorch's client does; without
  // it the connection stays silent.
  RawClient(int port, const char* from = "127.0.0.1", bool handshake = true)
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
    if (handshake) send(make_request(Op::validate, {}, {}, 0, gangrun::store::k_validate_magic));
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
  // Closes it from this end (the client left).
  void close_now() { socket_.reset(); }
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
                                              const char* from = "127.0.0.1",
                                              bool handshake = true) {
  std::vector<std::unique_ptr<RawClient>> clients;
  for (std::size_t i = 0; i < count; ++i) {
    ServerStats before = server.stats();
    clients.push_back(std::make_unique<RawClient>(server.port(), from, handshake));
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

// Protects the connection of client, found by the run-wide key it writes.
void protect(LoopServer& server, RawClient& client, const std::string& key) {
  client.send(make_request(Op::set, {key}, {"agent"}));
  server.server().protect(server.writer_of(key));
}

ServerSettings with_limits(std::size_t max_connections, std::size_t per_address) {
  ServerSettings settings;
  settings.limits.max_connections = max_connections;
  settings.limits.max_connections_per_address = per_address;
  return settings;
}

}  // namespace

TEST_CASE("store limits: a storm past max_connections eats its own tail", "[store][limits]") {
  LoopServer server(with_limits(8, 0));
  RawClient agent(server.port());
  protect(server, agent, "gangrun/run/rdzv/join/0");
  server.server().protect(9999);  // unknown: ignored
  // Unprotected, and connected before the storm: a node agent's long wait.
  RawClient bystander(server.port());
  bystander.send(make_request(Op::wait, {"gangrun/run/never"}));
  ping(server, bystander);

  auto silent = storm(server, 30, "127.0.0.1", false);
  CHECK(server.stats().connections == 8);
  CHECK(server.stats().connections_reclaimed == 30 - 6);
  CHECK(server.stats().connections_refused == 0);
  // The six that got in first stay, the rest gave way one after another.
  for (std::size_t i = 0; i < silent.size(); ++i) {
    INFO("storm connection " << i);
    if (i < 5) {
      CHECK_FALSE(silent[i]->closed());
    } else if (i < 29) {
      server.until([&] { return silent[i]->closed(); }, "a newer storm connection to give way");
    }
  }
  CHECK_FALSE(silent.back()->closed());
  ping(server, bystander);
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
  // Every connection waits: the newest gives way.
  RawClient newcomer(server.port());
  ping(server, newcomer);
  CHECK(server.stats().connections_reclaimed == 1);
  server.until([&] { return waiters.back()->closed(); }, "the newest waiter to be reclaimed");
  for (std::size_t i = 0; i + 1 < waiters.size(); ++i) CHECK_FALSE(waiters[i]->closed());

  // Now the newcomer is the one idle, and newest: it goes before the waiters.
  RawClient second(server.port());
  ping(server, second);
  server.until([&] { return newcomer.closed(); }, "the idle newcomer to be reclaimed first");
  CHECK_FALSE(waiters[2]->closed());
  CHECK(server.stats().connections_refused == 0);
}

TEST_CASE("store limits: silent connections over max_connections_per_address give way",
          "[store][limits]") {
  LoopServer server(with_limits(100, 3));
  // Clients that spoke (the job's workers) do not count against the cap.
  std::vector<std::unique_ptr<RawClient>> workers;
  for (int i = 0; i < 5; ++i) {
    workers.push_back(std::make_unique<RawClient>(server.port()));
    ping(server, *workers.back());
  }
  auto idle = storm(server, 3, "127.0.0.1", false);
  CHECK(server.stats().connections == 8);
  CHECK(server.stats().connections_reclaimed == 0);

  // A newcomer from the same address gets in: the one silent the longest goes.
  RawClient newcomer(server.port());
  ping(server, newcomer);
  server.until([&] { return idle.front()->closed(); }, "the oldest silent connection to go");
  CHECK_FALSE(idle[1]->closed());
  CHECK_FALSE(idle[2]->closed());
  for (auto& worker : workers) ping(server, *worker);
  ServerStats stats = server.stats();
  CHECK(stats.silent_connections_replaced == 1);
  CHECK(stats.connections_refused == 0);
  CHECK(stats.connections == 8);

  // Another address has a cap of its own.
  auto elsewhere = storm(server, 3, "127.0.0.2", false);
  ping(server, newcomer);
  for (auto& conn : elsewhere) CHECK_FALSE(conn->closed());
  CHECK(server.stats().silent_connections_replaced == 1);
}

TEST_CASE("store limits: a reclaim takes the most crowded address's newest, never a protected one",
          "[store][limits]") {
  LoopServer server(with_limits(7, 0));
  RawClient quiet(server.port(), "127.0.0.2");
  ping(server, quiet);
  std::vector<std::unique_ptr<RawClient>> crowd;
  for (int i = 0; i < 5; ++i) {
    crowd.push_back(std::make_unique<RawClient>(server.port(), "127.0.0.3"));
    ping(server, *crowd.back());
  }
  // The newest of the crowd is an agent's.
  protect(server, *crowd.back(), "gangrun/run/rdzv/join/1");
  RawClient first(server.port(), "127.0.0.4");
  ping(server, first);  // the seventh: nothing to reclaim yet
  CHECK(server.stats().connections_reclaimed == 0);

  RawClient newcomer(server.port(), "127.0.0.4");
  ping(server, newcomer);
  server.until([&] { return crowd[3]->closed(); }, "the crowd's newest unprotected to go");
  CHECK(server.stats().connections_reclaimed == 1);
  for (int i = 0; i < 3; ++i) CHECK_FALSE(crowd[static_cast<std::size_t>(i)]->closed());
  ping(server, *crowd.back());
  ping(server, quiet);
  ping(server, first);
}

TEST_CASE("store limits: a full store closes the writer, never a protected connection",
          "[store][limits][bytes]") {
  ServerSettings settings;
  settings.limits.max_total_bytes = 1000;
  settings.limits.reserved_run_wide_bytes = 500;
  settings.limits.max_bytes_per_address = 0;
  LoopServer server(settings);
  RawClient agent(server.port());
  protect(server, agent, "gangrun/run/agents/0");
  RawClient bystander(server.port());
  ping(server, bystander);
  RawClient filler(server.port(), "127.0.0.2");
  filler.send(make_request(Op::set, {"/fill/0"}, {std::string(900, 'x')}));
  ping(server, filler);
  filler.send(make_request(Op::set, {"/fill/1"}, {std::string(200, 'x')}));
  server.until([&] { return filler.closed(); }, "the filler to be closed");
  CHECK(server.stats().writes_refused_for_bytes == 1);
  CHECK(read_key(server, "/fill/1").empty());

  // The agent's run-wide keys go into the reserve.
  agent.send(make_request(Op::set, {"gangrun/run/agents/1"}, {std::string(300, 'a')}));
  ping(server, agent);
  CHECK(read_key(server, "gangrun/run/agents/1") == std::string(300, 'a'));
  CHECK(server.stats().protected_overruns == 0);
  // Past even the reserve: applied, logged, and the agent stays.
  agent.send(make_request(Op::set, {"gangrun/run/agents/2"}, {std::string(400, 'b')}));
  ping(server, agent);
  CHECK(read_key(server, "gangrun/run/agents/2") == std::string(400, 'b'));
  CHECK(server.stats().protected_overruns == 1);
  CHECK(server.stats().stored_bytes > 1500);

  // Any other client's write that grows the store is refused, and only it is closed.
  bystander.send(make_request(Op::set, {"gangrun/run/x"}, {"1"}));
  server.until([&] { return bystander.closed(); }, "the bystander's write to be refused");
  CHECK(server.stats().writes_refused_for_bytes == 2);
  ping(server, agent);
}

TEST_CASE("store limits: one address's keys hold at most max_bytes_per_address",
          "[store][limits][bytes]") {
  ServerSettings settings;
  settings.limits.max_bytes_per_address = 1000;
  LoopServer server(settings);
  RawClient first(server.port(), "127.0.0.2");
  first.send(make_request(Op::set, {"/a"}, {std::string(600, 'x')}));
  ping(server, first);
  first.close_now();
  // The address still holds its keys once that connection is gone.
  RawClient second(server.port(), "127.0.0.2");
  second.send(make_request(Op::set, {"/b"}, {std::string(500, 'x')}));
  server.until([&] { return second.closed(); }, "the write past the quota to be refused");
  CHECK(server.stats().writes_refused_for_bytes == 1);
  CHECK(read_key(server, "/b").empty());

  // Another address has its own quota, and a protected connection none.
  RawClient other(server.port(), "127.0.0.3");
  other.send(make_request(Op::set, {"/c"}, {std::string(900, 'x')}));
  ping(server, other);
  RawClient agent(server.port(), "127.0.0.2");
  protect(server, agent, "gangrun/run/agents/0");
  agent.send(make_request(Op::set, {"gangrun/run/agents/1"}, {std::string(900, 'x')}));
  ping(server, agent);
  // Once its key is deleted, the address may write again.
  RawClient third(server.port(), "127.0.0.2");
  third.send(make_request(Op::delete_key, {"/a"}));
  server.until([&] { return third.has(8); }, "the DELETE answer");
  CHECK(third.reply().read_i64() == 1);
  third.take(8);
  third.send(make_request(Op::set, {"/b"}, {std::string(900, 'x')}));
  ping(server, third);
  CHECK(server.stats().writes_refused_for_bytes == 1);
  CHECK(server.stats().protected_overruns == 0);
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
