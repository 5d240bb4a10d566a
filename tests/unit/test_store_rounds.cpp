// Rounds of the store's key space (key_spaces.hpp) through the real server
// on loopback and the blocking client: connections stay up across rounds,
// keys do not, run-wide keys do.
#include "expected_checks.hpp"
#include "store/client.hpp"
#include "store/key_spaces.hpp"
#include "store/server.hpp"
#include "threaded_store_server.hpp"

#include <boost/asio/executor_work_guard.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/post.hpp>
#include <catch2/catch.hpp>

#include <chrono>
#include <future>
#include <memory>
#include <string>
#include <thread>

namespace {

using gangrun::testing::ok;
using gangrun::testing::value_of;

using gangrun::Expected;
using gangrun::store::Client;
using gangrun::store::Dialect;
using gangrun::store::ServerSettings;
using gangrun::store::ServerStats;
using std::chrono::milliseconds;

using RoundServer = gangrun::testing::ThreadedStoreServer;

const std::string k_agent_key = std::string(gangrun::store::k_run_wide_prefix) + "agents/0";

}  // namespace

TEST_CASE("store rounds: a new round deletes old keys and keeps old connections",
          "[store][rounds]") {
  RoundServer server;
  for (Dialect dialect : {Dialect::validated, Dialect::legacy}) {
    server.begin_round(server.stats().round + 1);  // an empty round for each dialect
    Client old_client = server.connect(dialect);
    ok(old_client.set("/attempt", "0"));
    CHECK(value_of(old_client.num_keys()) == 1);

    server.begin_round(server.stats().round + 1);
    // Still connected, but its keys are gone.
    CHECK(value_of(old_client.num_keys()) == 0);
    CHECK_FALSE(value_of(old_client.check({"/attempt"})));

    Client new_client = server.connect(dialect);
    CHECK(value_of(new_client.num_keys()) == 0);
    ok(new_client.set("/attempt", "1"));
    ok(new_client.set("/only_new", "x"));
    CHECK(value_of(new_client.num_keys()) == 2);
    // The straggler neither sees nor changes the new round's keys.
    CHECK_FALSE(value_of(old_client.check({"/only_new"})));
    ok(old_client.set("/attempt", "stale"));
    CHECK(value_of(new_client.get("/attempt")) == "1");
    CHECK(value_of(old_client.get("/attempt")) == "stale");
    CHECK(value_of(old_client.num_keys()) == 1);
    CHECK(server.stats().connections == 2);
  }
}

TEST_CASE("store rounds: a wait of an old round is not woken by the new round", "[store][rounds]") {
  RoundServer server;
  Client waiter = server.connect();
  Client old_writer = server.connect();
  server.begin_round(1);
  Client writer = server.connect();
  // Round 0's wait times out although round 1 has the key.
  auto waited =
      std::async(std::launch::async, [&] { return waiter.wait({"/ready"}, milliseconds(500)); });
  ok(writer.set("/ready", "1"));
  Expected<void> result = waited.get();
  REQUIRE_FALSE(result);
  CHECK(result.error().code() == gangrun::ErrorCode::store);
  // A write in its own round does wake it.
  auto again =
      std::async(std::launch::async, [&] { return waiter.wait({"/ready"}, milliseconds(5000)); });
  ok(old_writer.set("/ready", "0"));
  ok(again.get());
}

TEST_CASE("store rounds: run-wide keys survive rounds and are seen from every round",
          "[store][rounds]") {
  RoundServer server;
  Client agent = server.connect();
  ok(agent.set(k_agent_key, "alive"));
  CHECK(value_of(agent.add(std::string(gangrun::store::k_run_wide_prefix) + "count", 1)) == 1);
  ok(agent.set("/round_key", "r0"));
  CHECK(value_of(agent.num_keys()) == 1);  // GETNUMKEYS counts the round only

  server.begin_round(7);
  Client worker = server.connect(Dialect::legacy);
  CHECK(value_of(worker.get(k_agent_key)) == "alive");
  CHECK(value_of(worker.num_keys()) == 0);
  CHECK_FALSE(value_of(worker.check({"/round_key"})));
  // Either round writes the same run-wide key.
  CHECK(value_of(worker.add(std::string(gangrun::store::k_run_wide_prefix) + "count", 1)) == 2);
  CHECK(value_of(agent.add(std::string(gangrun::store::k_run_wide_prefix) + "count", 1)) == 3);
  // A wait from the old round on a run-wide key is woken by the new round.
  auto waited = std::async(std::launch::async, [&] {
    return agent.wait({std::string(gangrun::store::k_run_wide_prefix) + "go"}, milliseconds(5000));
  });
  ok(worker.set(std::string(gangrun::store::k_run_wide_prefix) + "go", "1"));
  ok(waited.get());

  ServerStats stats = server.stats();
  CHECK(stats.round == 7);
  CHECK(stats.run_wide_keys == 3);
  CHECK(stats.keys == 3);
}

TEST_CASE("store rounds: a request mixing run-wide and round keys closes its connection",
          "[store][rounds]") {
  RoundServer server;
  Client client = server.connect();
  Expected<bool> mixed = client.check({"/a", k_agent_key});
  CHECK_FALSE(mixed);
  CHECK(server.stats().connections_closed_for_errors == 1);
}

TEST_CASE("store rounds: the byte limit holds for every space together", "[store][rounds]") {
  ServerSettings settings;
  settings.limits.max_total_bytes = 105;
  RoundServer server(settings);
  Client old_client = server.connect();
  ok(old_client.set(k_agent_key, std::string(40, 'a')));  // 60 bytes, run-wide
  value_of(old_client.num_keys());  // SET has no reply: a round trip makes sure it landed
  server.begin_round(1);
  Client client = server.connect();
  ok(client.set("/k", std::string(40, 'b')));  // 42 bytes: 102 in all
  value_of(client.num_keys());
  CHECK(server.stats().stored_bytes == 102);
  // Over the limit, whichever space the write goes to: the store closes the
  // connection (SET has no reply; the next request finds it closed).
  ok(client.set("/more", "xx"));
  CHECK_FALSE(client.num_keys());
  CHECK(server.stats().connections_closed_for_errors == 1);
  // A straggler's old round counts too.
  ok(old_client.set("/old", "xxxx"));
  CHECK_FALSE(old_client.num_keys());
  CHECK(server.stats().connections_closed_for_errors == 2);
  // Deleting a round's keys gives their bytes back.
  CHECK(server.stats().stored_bytes == 102);
  server.begin_round(2);
  CHECK(server.stats().stored_bytes == 60);
}

TEST_CASE("store rounds: a request about a round's key is a worker's; run-wide keys are not",
          "[store][rounds]") {
  RoundServer server;
  Client agent = server.connect();
  ok(agent.set(k_agent_key, "1"));
  CHECK(value_of(agent.check({k_agent_key})));
  CHECK(value_of(agent.num_keys()) == 0);  // keyless
  CHECK_FALSE(server.last_round_request());

  Client worker = server.connect();
  auto before = std::chrono::steady_clock::now();
  ok(worker.set("/step", "1"));
  CHECK(value_of(worker.get("/step")) == "1");
  auto first = server.last_round_request();
  REQUIRE(first);
  CHECK(*first >= before);
  ok(agent.set(k_agent_key, "2"));
  CHECK(value_of(agent.get(k_agent_key)) == "2");
  CHECK(server.last_round_request() == first);
}
