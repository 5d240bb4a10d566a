// The AsyncStore contract, run against both implementations: AsyncClient to
// the real server on the same io_context (loopback, port 0), and FakeStore.
// Then what only one of them has: sockets that refuse, vanish or stay
// silent; the fake's injected faults. Every test drives the loop until the
// events it expects happened, under a generous bound, and never sleeps.
#include "expected_checks.hpp"
#include "fake_store.hpp"
#include "store/async_client.hpp"
#include "store/server.hpp"

#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <catch2/catch.hpp>

#include <chrono>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

namespace {

using gangrun::testing::ok;
using gangrun::testing::value_of;

namespace asio = boost::asio;
using asio::ip::tcp;
using Catch::Matchers::Contains;
using gangrun::Error;
using gangrun::ErrorCode;
using gangrun::Expected;
using gangrun::store::AsyncClient;
using gangrun::store::AsyncStore;
using gangrun::store::ClientSettings;
using gangrun::store::Dialect;
using gangrun::store::FakeStore;
using gangrun::store::Server;
using gangrun::store::ServerSettings;
using std::chrono::milliseconds;

constexpr std::chrono::seconds k_bound{20};

// Runs the loop until done() or the bound.
void drive(asio::io_context& io, const std::function<bool()>& done) {
  auto deadline = std::chrono::steady_clock::now() + k_bound;
  io.restart();
  while (!done() && std::chrono::steady_clock::now() < deadline) {
    io.run_one_for(milliseconds(100));
  }
  REQUIRE(done());
}

// One operation's outcome, and whether its callback ran inside the call.
template <typename T>
struct Outcome {
  std::optional<Expected<T>> result;
  bool started = false;
  bool ran_inline = false;

  AsyncStore::Done<T> callback() {
    return [this](Expected<T> value) {
      ran_inline = ran_inline || !started;
      result = std::move(value);
    };
  }
  bool done() const { return result.has_value(); }
};

// Starts an operation with start(callback) and drives the loop to its end.
template <typename T>
Expected<T> complete(asio::io_context& io, const std::function<void(AsyncStore::Done<T>)>& start) {
  Outcome<T> outcome;
  start(outcome.callback());
  outcome.started = true;
  drive(io, [&] { return outcome.done(); });
  CHECK_FALSE(outcome.ran_inline);
  return std::move(*outcome.result);
}

// AsyncClients of the real server, which runs on the same loop.
class TcpStores {
 public:
  TcpStores() {
    ServerSettings settings;
    settings.port = 0;
    server_ = value_of(Server::start(io, settings));
  }
  std::unique_ptr<AsyncStore> client(Dialect dialect = Dialect::validated) {
    ClientSettings settings;
    settings.port = server_->port();
    settings.dialect = dialect;
    settings.connect_timeout = milliseconds(5000);
    settings.timeout = milliseconds(5000);
    return std::make_unique<AsyncClient>(io, settings);
  }
  asio::io_context io;

 private:
  std::unique_ptr<Server> server_;
};

// Clients of one FakeStore.
class FakeStores {
 public:
  std::unique_ptr<AsyncStore> client() { return root_.another_client(); }
  asio::io_context io;

 private:
  FakeStore root_{io, milliseconds(5000)};
};

using StringDone = AsyncStore::Done<std::string>;
using IntDone = AsyncStore::Done<std::int64_t>;
using BoolDone = AsyncStore::Done<bool>;
using VoidDone = AsyncStore::Done<void>;

}  // namespace

TEMPLATE_TEST_CASE("AsyncStore performs every operation", "[store][async]", TcpStores, FakeStores) {
  TestType stores;
  asio::io_context& io = stores.io;
  std::unique_ptr<AsyncStore> store = stores.client();

  ok(complete<void>(io, [&](VoidDone done) { store->set("/a", "1", done); }));
  CHECK(value_of(complete<std::string>(io, [&](StringDone done) { store->get("/a", done); })) ==
        "1");
  CHECK(value_of(complete<std::int64_t>(io, [&](IntDone done) { store->add("/n", 5, done); })) ==
        5);
  CHECK(value_of(complete<std::int64_t>(io, [&](IntDone done) { store->add("/n", -7, done); })) ==
        -2);
  CHECK(value_of(complete<std::string>(
            io, [&](StringDone done) { store->compare_set("/c", "", "first", done); })) == "first");
  CHECK(value_of(complete<std::string>(io, [&](StringDone done) {
          store->compare_set("/c", "wrong", "second", done);
        })) == "first");
  CHECK(value_of(complete<bool>(io, [&](BoolDone done) { store->check({"/a", "/c"}, done); })));
  CHECK_FALSE(value_of(complete<bool>(io, [&](BoolDone done) {
    store->check({"/a", "/x"}, done);
  })));
  ok(complete<void>(io, [&](VoidDone done) { store->wait({"/a", "/n"}, done); }));
  CHECK(value_of(complete<std::int64_t>(io, [&](IntDone done) { store->num_keys(done); })) == 3);
  CHECK(value_of(complete<std::vector<std::string>>(
            io, [&](AsyncStore::Done<std::vector<std::string>> done) {
              store->multi_get({"/a", "/c", "/n"}, done);
            })) == std::vector<std::string>{"1", "first", "-2"});
  CHECK(value_of(complete<bool>(io, [&](BoolDone done) { store->delete_key("/a", done); })));
  CHECK_FALSE(value_of(complete<bool>(io, [&](BoolDone done) { store->delete_key("/a", done); })));
  CHECK(value_of(complete<std::int64_t>(io, [&](IntDone done) { store->num_keys(done); })) == 2);
}

TEMPLATE_TEST_CASE("AsyncStore wait and get end when another client writes the key",
                   "[store][async]", TcpStores, FakeStores) {
  TestType stores;
  asio::io_context& io = stores.io;
  std::unique_ptr<AsyncStore> waiter = stores.client();
  std::unique_ptr<AsyncStore> writer = stores.client();

  Outcome<void> waited;
  Outcome<std::string> got;
  waiter->wait({"/k", "/l"}, waited.callback());
  waiter->get("/l", got.callback());  // queued behind the wait
  waited.started = got.started = true;
  ok(complete<void>(io, [&](VoidDone done) { writer->set("/k", "1", done); }));
  CHECK_FALSE(waited.done());
  ok(complete<void>(io, [&](VoidDone done) { writer->set("/l", "2", done); }));
  drive(io, [&] { return waited.done() && got.done(); });
  ok(*waited.result);
  CHECK(value_of(*got.result) == "2");
  CHECK_FALSE(waited.ran_inline);
}

TEMPLATE_TEST_CASE("AsyncStore wait times out, and the next operation still works",
                   "[store][async]", TcpStores, FakeStores) {
  TestType stores;
  asio::io_context& io = stores.io;
  std::unique_ptr<AsyncStore> store = stores.client();
  std::unique_ptr<AsyncStore> writer = stores.client();

  Expected<void> waited =
      complete<void>(io, [&](VoidDone done) { store->wait({"/k"}, done, milliseconds(100)); });
  REQUIRE_FALSE(waited);
  CHECK(waited.error().code() == ErrorCode::store);
  CHECK_THAT(waited.error().message(), Contains("timed out after 100 ms waiting for keys: /k"));

  // The key written after the timeout must not answer a later request.
  ok(complete<void>(io, [&](VoidDone done) { writer->set("/k", "1", done); }));
  CHECK(value_of(complete<std::int64_t>(io, [&](IntDone done) { store->add("/n", 3, done); })) ==
        3);
  CHECK(value_of(complete<std::string>(io, [&](StringDone done) { store->get("/k", done); })) ==
        "1");
  // A get of a key that never comes times out the same way.
  Expected<std::string> missing = complete<std::string>(
      io, [&](StringDone done) { store->get("/never", done, milliseconds(100)); });
  REQUIRE_FALSE(missing);
  CHECK_THAT(missing.error().message(), Contains("timed out"));
  CHECK(value_of(complete<bool>(io, [&](BoolDone done) { store->check({"/k"}, done); })));
}

TEMPLATE_TEST_CASE("AsyncStore drops the callbacks of a store destroyed with work pending",
                   "[store][async]", TcpStores, FakeStores) {
  TestType stores;
  asio::io_context& io = stores.io;
  std::unique_ptr<AsyncStore> store = stores.client();
  bool called = false;
  store->wait(
      {"/never"}, [&](Expected<void>) { called = true; }, milliseconds(50));
  store.reset();
  std::unique_ptr<AsyncStore> other = stores.client();
  ok(complete<void>(io, [&](VoidDone done) { other->set("/k", "1", done); }));
  // Beyond the dropped wait's deadline: still never called.
  Expected<void> late = complete<void>(
      io, [&](VoidDone done) { other->wait({"/late"}, std::move(done), milliseconds(200)); });
  CHECK_FALSE(late);
  CHECK_FALSE(called);
}

TEST_CASE("AsyncClient in the legacy dialect reconnects after a timed-out wait", "[store][async]") {
  TcpStores stores;
  asio::io_context& io = stores.io;
  std::unique_ptr<AsyncStore> store = stores.client(Dialect::legacy);
  std::unique_ptr<AsyncStore> writer = stores.client(Dialect::legacy);
  Expected<void> waited =
      complete<void>(io, [&](VoidDone done) { store->wait({"/k"}, done, milliseconds(100)); });
  REQUIRE_FALSE(waited);
  ok(complete<void>(io, [&](VoidDone done) { writer->set("/k", "1", done); }));
  CHECK(value_of(complete<std::int64_t>(io, [&](IntDone done) { store->add("/n", 2, done); })) ==
        2);
}

TEST_CASE("AsyncClient fails, without hanging, when nothing listens", "[store][async]") {
  asio::io_context io;
  // A port that was free a moment ago.
  tcp::acceptor probe(io, tcp::endpoint(asio::ip::address_v4::loopback(), 0));
  int port = probe.local_endpoint().port();
  probe.close();
  ClientSettings settings;
  settings.port = port;
  settings.connect_timeout = milliseconds(300);
  settings.timeout = milliseconds(5000);
  AsyncClient client(io, settings);
  auto started = std::chrono::steady_clock::now();
  Expected<std::int64_t> count =
      complete<std::int64_t>(io, [&](IntDone done) { client.num_keys(done); });
  REQUIRE_FALSE(count);
  CHECK(count.error().code() == ErrorCode::store);
  CHECK_THAT(count.error().message(),
             Contains("cannot reach the store at 127.0.0.1:" + std::to_string(port)));
  CHECK(std::chrono::steady_clock::now() - started >= milliseconds(300));
}

TEST_CASE("AsyncClient reports a store that goes away", "[store][async]") {
  asio::io_context io;
  ServerSettings server_settings;
  auto server = value_of(Server::start(io, server_settings));
  ClientSettings settings;
  settings.port = server->port();
  settings.connect_timeout = milliseconds(300);
  settings.timeout = milliseconds(5000);
  AsyncClient client(io, settings);
  ok(complete<void>(io, [&](VoidDone done) { client.set("/k", "v", done); }));
  server.reset();
  Expected<std::int64_t> count =
      complete<std::int64_t>(io, [&](IntDone done) { client.num_keys(done); });
  REQUIRE_FALSE(count);
  CHECK(count.error().code() == ErrorCode::store);
}

TEST_CASE("AsyncClient times out against a store that never answers", "[store][async]") {
  asio::io_context io;
  // Takes connections and never reads from them.
  tcp::acceptor silent(io, tcp::endpoint(asio::ip::address_v4::loopback(), 0));
  std::vector<tcp::socket> accepted;
  std::function<void()> accept_next = [&] {
    silent.async_accept([&](boost::system::error_code error, tcp::socket socket) {
      if (error) return;
      accepted.push_back(std::move(socket));
      accept_next();
    });
  };
  accept_next();
  ClientSettings settings;
  settings.port = silent.local_endpoint().port();
  settings.dialect = Dialect::legacy;
  settings.connect_timeout = milliseconds(2000);
  settings.timeout = milliseconds(200);
  AsyncClient client(io, settings);
  for (int attempt = 0; attempt < 2; ++attempt) {
    Expected<std::int64_t> count =
        complete<std::int64_t>(io, [&](IntDone done) { client.num_keys(done); });
    REQUIRE_FALSE(count);
    CHECK_THAT(count.error().message(),
               Contains("GETNUMKEYS on the store at 127.0.0.1:" + std::to_string(settings.port) +
                        " timed out after 200 ms"));
  }
  CHECK(accepted.size() == 2);  // the second attempt came on a new connection
}

TEST_CASE("FakeStore fails or goes silent on demand", "[store][async]") {
  asio::io_context io;
  FakeStore store(io, milliseconds(5000));
  store.fail_with(Error(ErrorCode::store, "injected"));
  Expected<void> failed = complete<void>(io, [&](VoidDone done) { store.set("/k", "v", done); });
  REQUIRE_FALSE(failed);
  CHECK(failed.error().message() == "injected");
  store.fail_with(std::nullopt);

  store.go_silent(true);
  Expected<std::int64_t> silent =
      complete<std::int64_t>(io, [&](IntDone done) { store.num_keys(done, milliseconds(100)); });
  REQUIRE_FALSE(silent);
  CHECK_THAT(silent.error().message(), Contains("GETNUMKEYS on the store at fake store timed out"));
  store.go_silent(false);
  CHECK(value_of(complete<std::int64_t>(io, [&](IntDone done) { store.num_keys(done); })) == 0);
}

TEST_CASE("FakeStore keeps rounds and run-wide keys as the server does", "[store][async]") {
  asio::io_context io;
  FakeStore old_round(io);
  ok(complete<void>(io, [&](VoidDone done) { old_round.set("/k", "0", done); }));
  ok(complete<void>(io, [&](VoidDone done) { old_round.set("gangrun/run/agent", "a", done); }));
  old_round.begin_round(1);
  std::unique_ptr<FakeStore> new_round = old_round.another_client();
  CHECK(value_of(complete<std::int64_t>(io, [&](IntDone done) { new_round->num_keys(done); })) ==
        0);
  CHECK(value_of(complete<std::string>(
            io, [&](StringDone done) { new_round->get("gangrun/run/agent", done); })) == "a");
  CHECK_FALSE(value_of(complete<bool>(io, [&](BoolDone done) { old_round.check({"/k"}, done); })));
}
