#include "agent/agent_signals.hpp"

#include "util/signals.hpp"

#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include <csignal>

namespace gangrun::agent {

AgentSignals::AgentSignals(boost::asio::io_context& io, const std::set<int>& teardown_signals,
                           SignalHandlers handlers)
    : teardown_signals_(teardown_signals), handlers_(std::move(handlers)), signals_(io) {
  std::set<int> handled = teardown_signals_;
  handled.insert({SIGUSR1, SIGUSR2, SIGTSTP, SIGCONT, SIGCHLD});
  for (int signal_number : handled) signals_.add(signal_number);
  arm();
}

void AgentSignals::arm() {
  signals_.async_wait([this](const boost::system::error_code& error, int signal_number) {
    if (error) return;
    on_signal(signal_number);
    arm();
  });
}

void AgentSignals::on_signal(int signal_number) {
  if (teardown_signals_.contains(signal_number)) return handlers_.teardown(signal_number);
  switch (signal_number) {
    case SIGCHLD:
      handlers_.child_ended();
      return;
    case SIGTSTP:
      // Workers lead orphaned process groups, where the kernel discards
      // SIGTSTP; SIGSTOP is the only stop that reaches them.
      handlers_.forward(SIGSTOP);
      ::raise(SIGSTOP);
      return;
    case SIGCONT:
      handlers_.forward(SIGCONT);
      return;
    default:  // USR1, USR2: the training script's business (SLURM preemption notices)
      spdlog::info("forwarding {} to the workers", signals::name(signal_number));
      handlers_.forward(signal_number);
      return;
  }
}

TeardownStep decide_teardown(const TeardownView& now, int signal_number) {
  const std::string name = signals::name(signal_number);
  // Waiting for a round, as a spare, or for the others: nothing of this
  // node runs, so it leaves now (its closed connection tells the rest).
  if (now.multi_node && !now.gang_running) {
    return {Teardown::leave_rendezvous, fmt::format("received {}; leaving the rendezvous", name)};
  }
  if (!now.signalled_before) {
    if (now.state != AgentState::running) return {Teardown::wait_for_round, ""};
    return {
        Teardown::stop_workers,
        now.live_workers == 0
            ? ""
            : fmt::format("received {}; stopping the workers (send it again to kill them at once)",
                          name)};
  }
  if (now.state != AgentState::stopping || now.live_workers == 0) return {Teardown::nothing, ""};
  return {Teardown::kill_workers, fmt::format("received {} again; killing the workers now", name)};
}

}  // namespace gangrun::agent
