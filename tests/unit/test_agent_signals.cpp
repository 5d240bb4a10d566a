// gangrun's own signals on the agent's loop (agent/agent_signals.hpp): each
// goes to its handler, and a teardown signal's meaning follows the agent's
// state. The signals are real, sent to this process while caught.
#include "agent/agent_signals.hpp"

#include <boost/asio/io_context.hpp>
#include <catch2/catch.hpp>

#include <csignal>
#include <functional>
#include <vector>

using gangrun::agent::AgentSignals;
using gangrun::agent::AgentState;
using gangrun::agent::decide_teardown;
using gangrun::agent::SignalHandlers;
using gangrun::agent::Teardown;
using gangrun::agent::TeardownView;

namespace {

constexpr std::chrono::seconds k_event_limit{30};

struct Seen {
  std::vector<int> teardown;
  std::vector<int> forwarded;
  int children = 0;
};

void run_until(boost::asio::io_context& io, const std::function<bool()>& until) {
  while (!until()) REQUIRE(io.run_one_for(k_event_limit) > 0);
}

}  // namespace

TEST_CASE("agent signals: each signal goes to its handler, on the loop", "[agent][signals]") {
  boost::asio::io_context io;
  Seen seen;
  AgentSignals signals(
      io, {SIGTERM, SIGINT},
      SignalHandlers{.teardown = [&](int signal) { seen.teardown.push_back(signal); },
                     .child_ended = [&] { ++seen.children; },
                     .forward = [&](int signal) { seen.forwarded.push_back(signal); }});
  ::raise(SIGUSR1);
  // Nothing happens inside the signal handler: only the loop calls.
  CHECK(seen.forwarded.empty());
  run_until(io, [&] { return seen.forwarded.size() == 1; });
  CHECK(seen.forwarded == std::vector<int>{SIGUSR1});

  ::raise(SIGTERM);
  run_until(io, [&] { return seen.teardown.size() == 1; });
  CHECK(seen.teardown == std::vector<int>{SIGTERM});

  ::raise(SIGCHLD);
  run_until(io, [&] { return seen.children == 1; });

  ::raise(SIGCONT);
  run_until(io, [&] { return seen.forwarded.size() == 2; });
  CHECK(seen.forwarded.back() == SIGCONT);

  // Armed again after each: a second teardown signal is heard too.
  ::raise(SIGINT);
  run_until(io, [&] { return seen.teardown.size() == 2; });
  CHECK(seen.teardown.back() == SIGINT);
  CHECK(seen.forwarded.size() == 2);
}

TEST_CASE("agent signals: a teardown signal's meaning follows the agent's state",
          "[agent][signals]") {
  TeardownView running{.multi_node = false,
                       .gang_running = true,
                       .signalled_before = false,
                       .state = AgentState::running,
                       .live_workers = 2};

  SECTION("the first stops the workers, said when some are alive") {
    auto step = decide_teardown(running, SIGTERM);
    CHECK(step.action == Teardown::stop_workers);
    CHECK(step.warning ==
          "received SIGTERM; stopping the workers (send it again to kill them at once)");
    running.live_workers = 0;
    step = decide_teardown(running, SIGTERM);
    CHECK(step.action == Teardown::stop_workers);
    CHECK(step.warning.empty());
  }
  SECTION("between rounds it waits for the next, which ends before it starts") {
    for (AgentState state : {AgentState::starting, AgentState::restarting}) {
      TeardownView between = running;
      between.state = state;
      between.gang_running = false;
      auto step = decide_teardown(between, SIGINT);
      CHECK(step.action == Teardown::wait_for_round);
      CHECK(step.warning.empty());
    }
  }
  SECTION("again while stopping: the workers still alive are killed") {
    TeardownView stopping = running;
    stopping.signalled_before = true;
    stopping.state = AgentState::stopping;
    auto step = decide_teardown(stopping, SIGTERM);
    CHECK(step.action == Teardown::kill_workers);
    CHECK(step.warning == "received SIGTERM again; killing the workers now");
    stopping.live_workers = 0;
    CHECK(decide_teardown(stopping, SIGTERM).action == Teardown::nothing);
    stopping.live_workers = 1;
    stopping.state = AgentState::restarting;
    CHECK(decide_teardown(stopping, SIGTERM).action == Teardown::nothing);
  }
  SECTION("many nodes, no worker running here: the agent leaves the rendezvous") {
    TeardownView waiting = running;
    waiting.multi_node = true;
    waiting.gang_running = false;
    waiting.state = AgentState::restarting;
    auto step = decide_teardown(waiting, SIGHUP);
    CHECK(step.action == Teardown::leave_rendezvous);
    CHECK(step.warning == "received SIGHUP; leaving the rendezvous");
    // Its workers running: as on one node.
    waiting.gang_running = true;
    waiting.state = AgentState::running;
    CHECK(decide_teardown(waiting, SIGHUP).action == Teardown::stop_workers);
  }
}
