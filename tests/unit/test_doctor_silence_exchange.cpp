// The gang doctor across nodes without a store (silence_exchange.hpp): a
// node tells the lead its ranks' silence every tick, the lead keeps when
// each node last made progress, and the hang watch counts every sign of
// life it is given (HangWatch::Progress), the other nodes' among them.
#include "doctor/watch/hang_watch.hpp"
#include "doctor/watch/silence_exchange.hpp"

#include <boost/asio/io_context.hpp>
#include <catch2/catch.hpp>

#include <functional>

using gangrun::doctor::DoctorRound;
using gangrun::doctor::HangWatch;
using gangrun::doctor::NodeRound;
using gangrun::doctor::SilenceExchange;
using Clock = std::chrono::steady_clock;
using namespace std::chrono_literals;

namespace {

constexpr std::chrono::seconds k_event_limit{30};

void run_until(boost::asio::io_context& io, const std::function<bool()>& until) {
  while (!until()) REQUIRE(io.run_one_for(k_event_limit) > 0);
}

DoctorRound round_of_two(bool lead) {
  DoctorRound round;
  round.hang_watched = true;
  round.nodes = NodeRound{.round = 1,
                          .members = {"a", "b", "c"},
                          .node_count = 3,
                          .names = {},
                          .lead = lead,
                          .job_nonce = "nonce"};
  round.goes_on = true;
  round.start = Clock::now();
  return round;
}

}  // namespace

TEST_CASE("the hang watch's progress is the latest sign of life of any kind", "[doctor][watch]") {
  Clock::time_point since = Clock::now();
  HangWatch::Progress none;
  CHECK(none.latest(since) == since);  // the round's start counts as the first
  HangWatch::Progress progress;
  progress.workers = {since + 1s, since + 3s};
  CHECK(progress.latest(since) == since + 3s);
  progress.store_request = since + 5s;
  CHECK(progress.latest(since) == since + 5s);
  progress.other_nodes = {since + 2s, since + 7s};
  CHECK(progress.latest(since) == since + 7s);
  HangWatch::Progress before_the_round;
  before_the_round.workers = {since - 1s};
  CHECK(before_the_round.latest(since) == since);
}

TEST_CASE("silences are told every quarter of the hang timeout, within 0.1 s and 1 s",
          "[doctor][watch]") {
  CHECK(SilenceExchange::tick_for(0.1) == 100ms);
  CHECK(SilenceExchange::tick_for(2) == 500ms);
  CHECK(SilenceExchange::tick_for(300) == 1000ms);
}

TEST_CASE("a node that is not the lead tells its silence every tick while its ranks run",
          "[doctor][watch]") {
  boost::asio::io_context io;
  DoctorRound round = round_of_two(/*lead=*/false);
  Clock::time_point last_line = Clock::now() - 300ms;
  std::vector<std::chrono::milliseconds> told;
  int reads = 0;
  SilenceExchange exchange(
      io,
      {.tell = [&](std::chrono::milliseconds silent) { told.push_back(silent); },
       .read = [&](const std::function<void(SilenceExchange::Silences)>&) { ++reads; }},
      10ms, round, [&] { return last_line; });
  exchange.round_started();
  REQUIRE(told.size() == 1);  // at once, then every tick
  CHECK(told[0] >= 300ms);
  run_until(io, [&] { return told.size() == 3; });
  CHECK(told[2] >= told[0]);  // the same last line, seen later
  CHECK(reads == 0);          // only the lead reads
  // The node's ranks are done: the next tick finds the round no longer its own.
  round.over = true;
  round.goes_on = false;
  io.restart();
  io.run();
  CHECK(told.size() == 3);
}

TEST_CASE("the lead keeps when each other node last made progress, as last told",
          "[doctor][watch]") {
  boost::asio::io_context io;
  DoctorRound round = round_of_two(/*lead=*/true);
  std::function<void(SilenceExchange::Silences)> pending;
  int told = 0;
  SilenceExchange exchange(
      io,
      {.tell = [&](std::chrono::milliseconds) { ++told; },
       .read =
           [&](std::function<void(SilenceExchange::Silences)> done) { pending = std::move(done); }},
      10ms, round, [&] { return round.start; });
  Clock::time_point before = Clock::now();
  exchange.round_started();
  Clock::time_point after = Clock::now();
  REQUIRE(pending);
  CHECK(told == 0);  // the lead tells nobody
  // b told 2 s of silence; c has not told yet: it counts as making progress now.
  std::exchange(pending, nullptr)({{"b", 2000ms}, {"c", std::nullopt}});
  Clock::time_point now = Clock::now() + 1h;
  std::vector<Clock::time_point> progress = exchange.others_progress({"b", "c"}, now);
  REQUIRE(progress.size() == 2);
  // Counted from the reading: a hang is declared late, never early.
  CHECK(progress[0] >= before - 2000ms);
  CHECK(progress[0] <= after - 2000ms);
  CHECK(progress[1] == now);

  // A later reading: b's silence is no longer believed, so it is forgotten.
  run_until(io, [&] { return pending != nullptr; });
  std::exchange(pending, nullptr)({{"b", std::nullopt}});
  CHECK(exchange.others_progress({"b"}, now) == std::vector<Clock::time_point>{now});

  // A new round forgets every node's progress.
  run_until(io, [&] { return pending != nullptr; });
  std::exchange(pending, nullptr)({{"b", 10ms}});
  CHECK(exchange.others_progress({"b"}, now)[0] < now - 1h + 1s);
  exchange.stop();
  exchange.round_started();
  CHECK(exchange.others_progress({"b"}, now) == std::vector<Clock::time_point>{now});

  // A reading that comes once the round is no longer the lead's to watch is dropped.
  round.over = true;
  round.goes_on = false;
  REQUIRE(pending);
  std::exchange(pending, nullptr)({{"b", 10ms}});
  CHECK(exchange.others_progress({"b"}, now) == std::vector<Clock::time_point>{now});
}
