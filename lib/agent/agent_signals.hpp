// gangrun's own signals on the agent's loop (never work inside a handler),
// and what a teardown signal means in the state the agent is in. The
// agent (agent/node_agent.cpp) carries the teardown out; everything else a
// signal asks for is handed to the handlers given here.
#pragma once

#include "agent/node_agent.hpp"

#include <boost/asio/io_context.hpp>
#include <boost/asio/signal_set.hpp>

#include <cstddef>
#include <functional>
#include <optional>
#include <set>
#include <string>

namespace gangrun::agent {

struct SignalHandlers {
  std::function<void(int signal_number)> teardown;  // one of the plan's teardown signals
  std::function<void()> child_ended;                // SIGCHLD: reap the strays
  // Passes a signal to the workers: USR1 and USR2 (the training script's
  // business, SLURM preemption notices), CONT, and STOP for SIGTSTP.
  std::function<void(int signal_number)> forward;
};

// Catches teardown_signals, SIGUSR1, SIGUSR2, SIGTSTP, SIGCONT and SIGCHLD
// from construction until destruction, and calls the matching handler on
// io, one signal at a time. On SIGTSTP it stops gangrun itself (SIGSTOP)
// after forwarding SIGSTOP to the workers.
class AgentSignals {
 public:
  AgentSignals(boost::asio::io_context& io, const std::set<int>& teardown_signals,
               SignalHandlers handlers);

 private:
  void arm();
  void on_signal(int signal_number);

  std::set<int> teardown_signals_;
  SignalHandlers handlers_;
  boost::asio::signal_set signals_;
};

// What a teardown signal does now.
enum class Teardown {
  leave_rendezvous,  // many nodes, no worker of this node running: leave, die of the signal
  wait_for_round,    // remembered: the next round ends before it starts
  stop_workers,      // the first signal: the gang is stopped with it
  kill_workers,      // again while stopping: the workers still alive are killed at once
  nothing,           // again, with nothing left to kill
};

struct TeardownView {
  bool multi_node = false;
  bool gang_running = false;
  bool signalled_before = false;  // a teardown signal arrived already
  AgentState state = AgentState::starting;
  std::size_t live_workers = 0;
};

struct TeardownStep {
  Teardown action = Teardown::nothing;
  std::string warning;  // logged first; empty: nothing to say
};

// What the teardown signal signal_number does in the agent's state now.
TeardownStep decide_teardown(const TeardownView& now, int signal_number);

}  // namespace gangrun::agent
