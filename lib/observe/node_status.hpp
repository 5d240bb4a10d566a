// What one node agent can say about its part of a running job, as one typed
// snapshot: its ranks (pid, state, CPU time, memory, how long since each
// printed a line, the doctor's marks), its counters (rounds, restarts,
// hangs, stragglers) and, on the agent that hosts it, the store's. The
// metrics endpoint (metrics_text.hpp) renders it, `gangrun top` reads its
// JSON; both read the same fields, so a number means the same in both.
//
// The snapshot holds no stack, no output line and nothing of the job's
// secret: it may leave the host (an HTTP scrape), so it carries only
// numbers, states and names the job's own messages show anyway.
#pragma once

#include <nlohmann/json_fwd.hpp>

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace gangrun::observe {

// A rank's process, as /proc and the gang see it.
enum class RankState {
  running,   // alive (R, S, D: running, sleeping, waiting on I/O)
  stopped,   // stopped from outside (T: SIGSTOP; t: a tracer)
  zombie,    // ended, not yet reaped
  starting,  // started, not yet readable in /proc
};

// "running", "stopped", ...: the metrics' state label and the JSON.
const char* to_string(RankState state);
std::optional<RankState> rank_state_from(const std::string& text);
// Every state, in the order the metrics list them.
inline constexpr RankState k_rank_states[] = {RankState::running, RankState::stopped,
                                              RankState::zombie, RankState::starting};

struct RankStatus {
  int rank = 0;
  int local_rank = 0;
  long pid = -1;  // the worker's program
  RankState state = RankState::starting;
  double cpu_seconds = 0;  // user + system, since it started (CPU% is its rate)
  long rss_kib = 0;        // resident memory now
  // Since it last printed a line; nullopt: it never did (or its output is
  // not read: --output inherit).
  std::optional<double> seconds_since_output;
  // Since its last sign of progress: a line, else the round's start.
  double seconds_since_progress = 0;
  // As its own output counts them (a progress bar's count, "step N" lines:
  // logmux/step_rate.hpp); nullopt where it shows none.
  std::optional<double> steps_per_second;
  // Where a GPU reader knows it (percent, bytes).
  std::optional<double> gpu_utilization;
  std::optional<std::uint64_t> gpu_memory_bytes;
  // The doctor's marks.
  bool hung = false;  // in the hang the doctor reported this round
  bool slow = false;  // named as a straggler this round
};

// The store's traffic, on the agent that hosts it.
struct StoreStatus {
  std::uint64_t connections = 0;  // open now
  std::uint64_t connections_accepted = 0;
  std::uint64_t connections_refused = 0;
  std::uint64_t connections_closed_for_errors = 0;
  std::uint64_t requests = 0;
  std::uint64_t bytes_received = 0;
  std::uint64_t bytes_sent = 0;
  std::uint64_t stored_bytes = 0;
  std::uint64_t keys = 0;
  // Since the workers' last request about a round's key; nullopt: none yet.
  std::optional<double> seconds_since_request;
};

struct NodeStatus {
  std::string run_id;
  std::string node;  // as the job's messages name it (its host name on one node)
  int node_rank = 0;
  std::string agent_state;  // agent::to_string(AgentState): starting, running, ...
  double collected_at = 0;  // Unix time, seconds
  // Rounds this agent began (a restart begins one), and the restart count
  // of the one now running (TORCHELASTIC_RESTART_COUNT).
  std::uint64_t rounds = 0;
  int restarts = 0;
  // Nodes in the current round (1 on a single node).
  int nodes_in_round = 1;
  int local_world_size = 0;            // ranks this node runs per round
  std::uint64_t hangs = 0;             // hangs the doctor reported, every round
  std::uint64_t stragglers_named = 0;  // ranks named slow, every round
  std::vector<RankStatus> ranks;       // the live ranks, by rank
  std::optional<StoreStatus> store;    // hosted here
};

nlohmann::json to_json(const NodeStatus& status);
// The snapshot from its JSON; nullopt names no field: a frame `gangrun top`
// cannot read is skipped whole.
std::optional<NodeStatus> node_status_from_json(const nlohmann::json& json);

}  // namespace gangrun::observe
