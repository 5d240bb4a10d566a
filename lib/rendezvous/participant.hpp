// An agent's side of the rendezvous: joins through the store (whoever hosts
// it, this process included), waits for each round, follows the round's end
// while its workers run, and reports how they ended. Two connections: the
// link, which the join is written on and which carries this agent's own
// writes (reports, a heartbeat every heartbeat_interval) and short reads;
// and one for the long waits on what the coordinator publishes (rounds,
// their ends), so that nothing of the link queues behind a wait. Both carry
// TCP keep-alive; the first one that fails ends the participant with
// store_lost, and so does a heartbeat the store's host has not taken within
// heartbeat_interval x heartbeat_attempts (its agent is stopped or stuck:
// its kernel still answers TCP, its loop does not).
//
// What it reads it checks: every message's MAC (signing.hpp), and that a
// round fits this node (its node rank and worker count, the store's address
// and port, the number of nodes): anything else is the store lost.
// Single-threaded, on the agent's loop.
#pragma once

#include "rendezvous/messages.hpp"
#include "rendezvous/signing.hpp"
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
  std::chrono::milliseconds heartbeat_interval{1000};
  int heartbeat_attempts = 3;
  std::optional<std::string> secret;  // the job's secret; nullopt: messages are not authenticated
  int min_nodes = 1;                  // a round has between these many nodes
  int max_nodes = 1;
};

struct ParticipantEvents {
  // This agent is in a round: start the workers with these ranks.
  std::function<void(const RoundPlan& plan, const Member& me)> round_assigned;
  // The running round ends (another node failed or left, a node joins, or
  // every node succeeded): stop the workers if they still run.
  std::function<void(const RoundEnd& end)> round_ending;
  // The job is over: exit with outcome.exit_code.
  std::function<void(const JobOutcome& outcome)> job_done;
  // The store cannot be reached any more, its host stopped answering
  // heartbeats, or it sent what the coordinator does not send: stop the
  // workers and exit 3.
  std::function<void(const Error& error)> store_lost;
  // The coordinator turned this agent away (another job's store): exit 2.
  std::function<void(const Error& error)> refused;
};

// Makes `client` one of this agent's protected connections (keys::connection):
// its first word to the store, sealed for the job. Call once the agent is
// welcomed, before anything else on that connection.
void claim_connection(store::AsyncClient& client, const Signer& signer,
                      const std::string& agent_id);

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
  // The job's nonce as the coordinator published it (signing.hpp); empty
  // before this agent read it.
  const std::string& job_nonce() const;
  // Both ends of the link's last connection to the store (nullopt before
  // the first): the local one is the address this node reaches the store
  // from (launch/network_interface.hpp).
  std::optional<store::AsyncClient::Ends> store_connection() const;

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace gangrun::rendezvous
