// The node's snapshot (observe/node_status.hpp), built by one function from
// the agent's parts: the gang's live workers, /proc, the doctor's marks, the
// store this agent hosts and the agent's own counters. /metrics renders it;
// `gangrun top` reads the same snapshot. On the agent's loop only.
#pragma once

#include "agent/node_agent.hpp"
#include "doctor/watch/gang_doctor.hpp"
#include "launch/plan.hpp"
#include "observe/metrics_server.hpp"
#include "observe/node_status.hpp"
#include "store/server.hpp"
#include "supervise/gang.hpp"

#include <chrono>
#include <cstdint>
#include <string>

namespace gangrun::agent {

// What the agent counts of its run for the snapshot.
struct AgentCounters {
  std::uint64_t rounds = 0;  // rounds begun here
  int restarts = 0;          // the current round's restart count
  int nodes_in_round = 1;
  int node_rank = 0;  // this node's group rank in the current round
  std::string node;   // as the job's messages name this node
  std::chrono::steady_clock::time_point round_started_at = std::chrono::steady_clock::now();
};

struct NodeParts {
  const launch::LaunchPlan& plan;
  AgentState state;
  const AgentCounters& counters;
  const supervise::Gang& gang;
  const doctor::GangDoctor& doctor;
  const store::Server* store;  // hosted here, else null
};

// proc_root: where /proc is (tests give a tree of their own).
observe::NodeStatus collect_node_status(const NodeParts& parts,
                                        const std::string& proc_root = "/proc");

// /healthz: 200 "ok <state>" whenever the agent's loop answers, in every
// state, a restart and a teardown included: a liveness probe is there to
// restart a wedged agent (one whose loop does not answer within the probe's
// timeout), and a job that failed ends its agent by itself, with its exit
// code, which a restart of the container must not hide.
observe::Health agent_health(AgentState state);

}  // namespace gangrun::agent
