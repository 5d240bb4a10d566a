// What the node agents and the rendezvous' coordinator say to each other,
// as JSON values of run-wide store keys (keys.hpp names them). gangrun's
// own format: agents of one run are all gangrun.
#pragma once

#include "util/error.hpp"

#include <cstdint>
#include <optional>
#include <string>
#include <variant>
#include <vector>

namespace gangrun::rendezvous {

// What a message read from the store may hold; the readers below refuse a
// field outside these, and every integer that is not written as one.
inline constexpr int k_max_ranks = 1 << 24;
inline constexpr int k_max_local_world_size = 1 << 16;

// An agent introducing itself when it joins.
struct AgentInfo {
  std::string id;    // unique per agent process (host, pid, random)
  std::string host;  // its host name, for messages
  // For messages, beside the host name, which alone may not tell nodes
  // apart (report/node_name.hpp): --local_addr, else the address its link to
  // the store leaves from (the participant fills that in when it joins).
  std::string address;
  int node_rank = -1;  // static rendezvous: --node_rank; c10d: -1
  int local_world_size = 1;
  std::string run_id;  // --rdzv_id: agents of one job give the same
};

// One node of a round.
struct Member {
  std::string id;
  std::string host;
  std::string address;  // AgentInfo::address
  int group_rank = 0;
  int rank_offset = 0;  // the global rank of its local rank 0
  int local_world_size = 1;
};

// A round the coordinator formed: who takes part and with which ranks.
struct RoundPlan {
  std::uint64_t round = 0;  // the rendezvous' own count, also the store's key space
  int restart_count = 0;    // TORCHELASTIC_RESTART_COUNT: failures restarted so far
  std::vector<Member> members;
  // The round's node count. A plan read from an Assignment (plan_of) holds
  // only its own node in members; count nodes with this.
  int nodes = 0;
  int world_size = 0;
  std::string master_addr;  // the store every worker meets through
  std::string master_port;

  // nullptr when the agent is not in this round (a spare).
  const Member* member(const std::string& agent_id) const;
};

// One node's place in a round (keys::assignment): what the round's nodes
// share, its size, and the node's own Member. Every node reads its own, so
// forming a round costs the store N small messages, not N copies of the
// whole plan, which names every node (N x N bytes: 550 MB at 2,048 nodes).
struct Assignment {
  std::uint64_t round = 0;
  int restart_count = 0;
  int nodes = 0;
  int world_size = 0;
  std::string master_addr;
  std::string master_port;
  Member me;
};
Assignment assignment_of(const RoundPlan& plan, const Member& member);
// The round as its node knows it from its assignment: members holds only it.
RoundPlan plan_of(const Assignment& assignment);

// What every agent waits for (keys::round_brief): round r has formed (each
// node then reads its assignment; a node without one is a spare), or the
// job's outcome.
struct RoundFormed {
  std::uint64_t round = 0;
};

// The end of the job, the same for every agent.
struct JobOutcome {
  int exit_code = 0;
  // "rank 3 on node 2 (vm, 10.0.0.3) failed (exit code 1)"; empty on success
  std::string message;
  std::string root_agent;          // the agent whose node had the root cause; empty if none
  std::optional<int> stop_signal;  // an agent was told to stop by this signal
  // The ranks the failed ones were waiting for (report/blame.hpp), which the
  // job's failure is blamed on; empty when none was singled out.
  std::vector<int> waited_for;
};

// What follows a round: the next round, or the end of the job.
using Next = std::variant<RoundPlan, JobOutcome>;
using Brief = std::variant<RoundFormed, JobOutcome>;

// A worker that ended by itself, as its node saw it.
struct RankEnd {
  int rank = 0;
  bool failed = false;      // else it exited 0
  std::int64_t ms_ago = 0;  // how long before the report was written
};

// How a node's workers ended in a round, or how its workers failed so far.
struct NodeReport {
  std::string agent;
  std::string host;
  bool succeeded = false;
  std::optional<int> rank;             // the node's root cause
  int exit_code = 0;                   // its shell code (128+S for a signal)
  std::string what;                    // "exited with code 3", "was killed by SIGKILL"
  std::optional<int> stop_signal;      // the agent was told to stop by this signal
  bool stopped_for_round_end = false;  // its workers were stopped because the round ended
  // Its workers were stopped because the whole gang made no progress for
  // --hang-timeout (doctor/watch/gang_doctor.hpp): the job ends with exit code 5
  // unless --on-hang restart has a restart left.
  bool stopped_for_hang = false;
  // Its workers that ended by themselves so far; the others of the node are
  // still running (or were stopped by gangrun). Ages, not times: the nodes'
  // clocks need not agree, and the reader subtracts them from the time it
  // read the report.
  std::vector<RankEnd> ended;
};

enum class EndReason { success, failure, signal, lost_node, scale_up, shutdown };

// Why a round ends: every agent stops its workers when it reads this.
struct RoundEnd {
  EndReason reason = EndReason::success;
  std::string message;  // for the log: "rank 3 on node 2 (vm, 10.0.0.3) failed (exit code 1)"
};

// A member of a round as every message names it: node rank, host name and
// address (report/node_name.hpp).
std::string node_name(const Member& member);

std::string to_json(const AgentInfo& info);
std::string to_json(const Next& next);
std::string to_json(const Assignment& assignment);
std::string to_json(const Brief& brief);
std::string to_json(const NodeReport& report);
std::string to_json(const RoundEnd& end);

// Each fails with ErrorCode::store when the text is not what the other side
// writes (another program on the port, a different gangrun, a forger): a
// missing field, a field of the wrong type or out of range (ranks and world
// sizes within k_max_*, exit codes 0..255, signals 1..64, rank lists no
// longer than k_max_local_world_size or k_max_ranks), a round whose
// ranks are not numbered node after node, a job that "succeeded" with a
// root cause or a signal. Text fields come back bounded and printable
// (control characters escaped, strings::printable), safe for a terminal.
Expected<AgentInfo> agent_info_from_json(const std::string& text);
Expected<Next> next_from_json(const std::string& text);
// Besides the checks above: the node's place fits the round's size (its
// group rank below the node count, its ranks inside the world).
Expected<Assignment> assignment_from_json(const std::string& text);
Expected<Brief> brief_from_json(const std::string& text);
Expected<NodeReport> node_report_from_json(const std::string& text);
Expected<RoundEnd> round_end_from_json(const std::string& text);

}  // namespace gangrun::rendezvous
