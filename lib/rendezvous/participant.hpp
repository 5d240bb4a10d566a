// An agent's side of the rendezvous: joins through the store (whoever hosts
// it, this process included), waits for each round, follows the round's end
// while its workers run, and reports how they ended. Two connections: one
// for waits on what the coordinator publishes, one for this agent's own
// writes and for reading rounds, so a report never queues behind a wait.
// Both carry TCP keep-alive; the first one that fails (the store's host died
// or is cut off) ends the participant with store_lost. Single-threaded, on
// the agent's loop.
#pragma once

#include "rendezvous/messages.hpp"
#include "store/async_client.hpp"

#include <boost/asio/io_context.hpp>

#include <chrono>
#include <functional>
#include <memory>

namespace gangrun::rendezvous {

struct ParticipantSettings {
  AgentInfo me;
  // Where the store is, the keep-alive, and connect_timeout: how long the
  // first connection is retried (the join timeout: the host may start last).
  store::ClientSettings store;
  std::chrono::milliseconds read_timeout{60000};  // one write or read
};

struct ParticipantEvents {
  // This agent is in a round: start the workers with these ranks.
  std::function<void(const RoundPlan& plan, const Member& me)> round_assigned;
  // The running round ends (another node failed or left, a node joins, or
  // every node succeeded): stop the workers if they still run.
  std::function<void(const RoundEnd& end)> round_ending;
  // The job is over: exit with outcome.exit_code.
  std::function<void(const JobOutcome& outcome)> job_done;
  // The store cannot be reached any more: stop the workers and exit 3.
  std::function<void(const Error& error)> store_lost;
  // The coordinator turned this agent away (another job's store): exit 2.
  std::function<void(const Error& error)> refused;
};

class Participant {
 public:
  Participant(boost::asio::io_context& io, ParticipantSettings settings, ParticipantEvents events);
  // Closes both connections (the coordinator sees the agent leave); no
  // event runs afterwards.
  ~Participant();
  Participant(const Participant&) = delete;
  Participant& operator=(const Participant&) = delete;

  // Joins, then waits for the first round that has a place for this agent.
  void join();
  // The first failure of this node's workers in the current round: sent at
  // once, so every node stops without waiting for this node's teardown.
  void report_failure(const NodeReport& report);
  // How this node's workers ended in the current round; then waits for
  // what comes next.
  void report_result(const NodeReport& report);

  const AgentInfo& me() const;

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace gangrun::rendezvous
