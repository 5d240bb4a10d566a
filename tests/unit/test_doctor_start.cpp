// The round's start (doctor/watch/start_watch.hpp): which ranks have
// started, that the hang watch counts no silence while the round starts and
// counts it from the start's end, and how the ranks still importing are named.
#include "doctor/watch/hang_watch.hpp"
#include "doctor/watch/start_watch.hpp"

#include <boost/asio/io_context.hpp>
#include <catch2/catch.hpp>

#include <functional>

using gangrun::doctor::HangWatch;
using gangrun::doctor::RankStacks;
using gangrun::doctor::StartTally;
using gangrun::doctor::ThreadStack;
using Clock = std::chrono::steady_clock;
using namespace std::chrono_literals;

namespace {

constexpr std::chrono::seconds k_event_limit{30};

void run_until(boost::asio::io_context& io, const std::function<bool()>& until) {
  while (!until()) REQUIRE(io.run_one_for(k_event_limit) > 0);
}

RankStacks rank_in(int rank, std::vector<std::string> functions) {
  ThreadStack main;
  main.name = "MainThread";
  main.os_thread_id = 100 + rank;
  for (const std::string& function : functions) {
    main.frames.push_back({.function = function, .file = "x.py", .line = 1});
  }
  return {.rank = rank,
          .host = "node1",
          .pid = 100 + rank,
          .threads = {main},
          .unavailable = std::nullopt,
          .stopped = std::nullopt};
}

}  // namespace

TEST_CASE("a round starts until every live rank has printed a line or reached the store",
          "[doctor][watch]") {
  StartTally tally;
  Clock::time_point at = Clock::now();
  tally.round_started(at, true);
  CHECK(tally.starting());
  tally.look({}, at + 1s);  // not spawned yet: still starting
  CHECK(tally.starting());
  tally.look({{.rank = 0, .printed = true, .at_store = false},
              {.rank = 1, .printed = false, .at_store = false},
              {.rank = 2, .printed = false, .at_store = true}},
             at + 2s);
  CHECK(tally.starting());
  CHECK(tally.still_starting({2, 1, 0}) == std::vector<int>{1});
  // Rank 2 left the store again: once started, a rank stays started.
  tally.look({{.rank = 0, .printed = true, .at_store = false},
              {.rank = 1, .printed = false, .at_store = true},
              {.rank = 2, .printed = false, .at_store = false}},
             at + 3s);
  REQUIRE_FALSE(tally.starting());
  CHECK(tally.ended_at() == at + 3s);
  tally.look({{.rank = 0, .printed = false, .at_store = false}}, at + 4s);
  CHECK(tally.ended_at() == at + 3s);  // the end, once seen, stays

  tally.round_started(at + 10s, true);  // a new round forgets the last
  CHECK(tally.starting());
  CHECK(tally.still_starting({0}) == std::vector<int>{0});
}

TEST_CASE("a round whose ranks have all exited, or that ended, no longer starts",
          "[doctor][watch]") {
  StartTally tally;
  Clock::time_point at = Clock::now();
  tally.round_started(at, true);
  tally.look({{.rank = 0, .printed = false, .at_store = false}}, at + 1s);
  CHECK(tally.starting());
  tally.look({}, at + 2s);  // rank 0 exited before it printed or reached the store
  REQUIRE_FALSE(tally.starting());
  CHECK(tally.ended_at() == at + 2s);

  tally.round_started(at + 10s, true);
  tally.round_ended(at + 11s);  // a lead whose ranks are done watches the other nodes on
  CHECK(tally.ended_at() == at + 11s);
}

TEST_CASE("a round with nothing to watch has no start", "[doctor][watch]") {
  StartTally tally;
  Clock::time_point at = Clock::now();
  tally.round_started(at, false);  // not Python, or no store
  CHECK_FALSE(tally.starting());
  CHECK(tally.ended_at() == at);
}

TEST_CASE("a rank still starting whose main thread is in an import is named as importing",
          "[doctor][watch]") {
  using gangrun::doctor::importing_line;
  using gangrun::doctor::importing_ranks;
  std::vector<RankStacks> ranks = {
      rank_in(0, {"wait", "init_process_group", "<module>"}),
      rank_in(1, {"exec_module", "_load_unlocked", "_find_and_load", "<module>"}),
      rank_in(2, {"_call_with_frames_removed", "_find_and_load", "<module>"}),
      rank_in(3, {"load_batch", "<module>"}),
  };
  // Rank 0 is at the store: it waits, and is not among those starting.
  CHECK(importing_ranks(ranks, {1, 2, 3}) == std::vector<int>{1, 2});
  CHECK(importing_ranks(ranks, {3}).empty());
  CHECK(importing_line({}, 1) == "");
  CHECK(importing_line({1, 2}, 3) ==
        "ranks 1, 2 are importing a module (a slow filesystem, a large package)");
  CHECK(importing_line({2}, 1) ==
        "rank 2 is importing a module (a slow filesystem, a large package)");
  CHECK_THAT(importing_line({1, 2}, 2), Catch::Matchers::Contains("every rank still starting"));
}

TEST_CASE("the hang watch counts no silence while the round starts, and from its end after",
          "[doctor][watch]") {
  boost::asio::io_context io;
  Clock::time_point started = Clock::now();
  bool starting = true;
  std::optional<Clock::time_point> started_at;
  int looks_while_starting = 0;
  std::optional<Clock::time_point> reported_at;
  std::optional<Clock::duration> silent_for;
  HangWatch watch(
      io, 50ms,
      [&] {
        HangWatch::Progress progress;
        progress.starting = starting;
        progress.started_at = started_at;
        if (starting && ++looks_while_starting == 3) {
          // The third look after the timeout finds the start over, as a
          // look of the start watch just saw it.
          starting = false;
          started_at = Clock::now();
        }
        return progress;
      },
      [&](Clock::duration silent) {
        silent_for = silent;
        reported_at = Clock::now();
      });
  watch.start();
  run_until(io, [&] { return reported_at.has_value(); });
  CHECK(looks_while_starting == 3);
  REQUIRE(started_at);
  // Silent from the start's end, never from the round's start.
  CHECK(*reported_at - *started_at >= 50ms);
  CHECK(*reported_at - started >= 100ms);
  CHECK(*silent_for >= 50ms);
}

TEST_CASE("the start's end is the silence's first sign of life", "[doctor][watch]") {
  Clock::time_point since = Clock::now();
  HangWatch::Progress progress;
  progress.workers = {since + 1s};
  progress.started_at = since + 4s;
  CHECK(progress.latest(since) == since + 4s);
  CHECK(progress.told(since, since + 9s) == since + 4s);
}

TEST_CASE("a node whose ranks are still starting tells the lead no silence", "[doctor][watch]") {
  Clock::time_point since = Clock::now();
  HangWatch::Progress starting;
  starting.starting = true;
  starting.workers = {since + 1s};
  CHECK(starting.told(since, since + 30s) == since + 30s);
}
