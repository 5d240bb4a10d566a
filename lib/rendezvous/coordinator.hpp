// The rendezvous' coordinator: runs in the agent that hosts the store, on
// its loop, and decides every round of a multi-node run. It follows the
// agents through the store it hosts (store::ServerEvents): an agent joins by
// writing its join key, and is gone when that connection closes (the agent
// died, or its keep-alive timed out). Rounds are published as run-wide keys
// that every agent, this host's own included, waits for (keys.hpp).
//
//   forming ──▶ round running ──▶ round ending ──▶ forming ... ──▶ finished
//
// Whom it believes: a join only with a MAC of the job's secret (signing.hpp;
// without a secret, anyone's) whose fields are in range (static: a node rank
// 0..N-1 not yet taken; c10d: none); an agent's heartbeats, failures and
// results only from the connection it joined on, which the store never
// reclaims for a newcomer (store::Server::protect). The keys it writes the
// store refuses to every client (keys::coordinator_only_prefixes()).
//
// An agent is lost when its link closes, or when its loop has not written a
// heartbeat for heartbeat_interval x heartbeat_attempts (its process is
// stopped or stuck although its kernel still answers TCP): its link is then
// closed, so the agent, if it ever wakes, stops its workers.
//
// forming: static, every node rank 0..N-1 has joined; c10d, MAX agents, or
// MIN and then last_call_timeout. c10d ranks: the store's host's own agent
// first, then the others in the order they joined, which a host name cannot
// game. Nobody in time (join_timeout): the
// job ends with exit 3. A round ends when a node reports a failure, a node is lost, an agent is
// told to stop by a signal, every node succeeded, or (c10d) a newcomer can grow a round that has
// fewer than MAX nodes. Once every node of the round has answered (or is gone) the coordinator
// publishes the next round or the job's outcome: a failure restarts everyone while restarts are
// left (one per failure, not per node); a lost node shrinks a c10d job that
// keeps at least MIN nodes (one restart), else exit 3; growing costs none.
#pragma once

#include "rendezvous/keys.hpp"
#include "rendezvous/messages.hpp"
#include "store/server.hpp"

#include <boost/asio/io_context.hpp>

#include <chrono>
#include <functional>
#include <memory>

namespace gangrun::rendezvous {

struct CoordinatorSettings {
  int min_nodes = 1;
  int max_nodes = 1;
  bool static_ranks = true;  // static: agents bring their node ranks; c10d: the round gives them
  int max_restarts = 0;
  std::chrono::milliseconds join_timeout{600000};
  std::chrono::milliseconds last_call_timeout{30000};
  // After the outcome, how long the store stays up for agents still to read it.
  std::chrono::milliseconds close_timeout{30000};
  std::chrono::milliseconds heartbeat_interval{1000};
  int heartbeat_attempts = 3;
  // After a node's first failure report, how long the coordinator gathers
  // the others' before it ends the round and decides whom the failure is
  // blamed on (report/blame.hpp); 0: at once. Ends early when every node
  // has answered.
  std::chrono::milliseconds failure_window{0};
  // A round stopped for a hang (NodeReport::stopped_for_hang) restarts
  // while restarts are left (--on-hang restart); else the job ends with 5.
  bool restart_on_hang = false;
  std::optional<std::string> secret;  // the job's secret; nullopt: the control plane is open
  // The agent of the store's own host: rank 0 in a c10d round it takes part in.
  std::string host_agent_id;
  std::string run_id;       // --rdzv_id: an agent of another job is turned away
  std::string master_addr;  // what workers dial: the store's address and port
  std::string master_port;
  // How many of the gang doctor's latest requests keep their keys.
  std::int64_t doctor_requests_kept = keys::k_doctor_requests_kept;
};

class Coordinator {
 public:
  // Observes server (which outlives the coordinator) from now on.
  Coordinator(boost::asio::io_context& io, store::Server& server, CoordinatorSettings settings);
  ~Coordinator();
  Coordinator(const Coordinator&) = delete;
  Coordinator& operator=(const Coordinator&) = delete;

  // Runs done (posted, once) when the job's outcome is published and every
  // agent that joined has left, or close_timeout after the outcome.
  void when_everyone_answered(std::function<void()> done);

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace gangrun::rendezvous
