#include "agent/node_status_source.hpp"

#include "doctor/proc_stat.hpp"

#include <unistd.h>

#include <algorithm>
#include <map>

namespace gangrun::agent {
namespace {

using Clock = std::chrono::steady_clock;

double seconds_between(Clock::time_point earlier, Clock::time_point later) {
  return std::max(0.0, std::chrono::duration<double>(later - earlier).count());
}

// State, CPU time and resident memory from /proc/PID/stat (fields 3, 14,
// 15 and 24; proc_stat_fields starts at field 3).
void read_proc(observe::RankStatus& rank, const std::string& proc_root) {
  std::vector<std::string> fields = doctor::proc_stat_fields(rank.pid, proc_root);
  if (fields.size() < 22 || fields[0].empty()) {
    rank.state = observe::RankState::starting;
    return;
  }
  switch (fields[0][0]) {
    case 'T':
    case 't':
      rank.state = observe::RankState::stopped;
      break;
    case 'Z':
    case 'X':
      rank.state = observe::RankState::zombie;
      break;
    default:
      rank.state = observe::RankState::running;
  }
  static const long page_kib = ::sysconf(_SC_PAGESIZE) / 1024;
  // A line the kernel did not write as documented: the numbers stay 0.
  std::optional<double> cpu_seconds = doctor::cpu_seconds_of(fields);
  if (!cpu_seconds) return;
  rank.cpu_seconds = *cpu_seconds;
  try {
    rank.rss_kib = std::stol(fields[21]) * page_kib;
  } catch (const std::exception&) {
  }
}

observe::StoreStatus store_status(const store::Server& server, Clock::time_point now) {
  store::ServerStats stats = server.stats();
  observe::StoreStatus store;
  store.connections = stats.connections;
  store.connections_accepted = stats.connections_accepted;
  store.connections_refused = stats.connections_refused;
  store.connections_closed_for_errors = stats.connections_closed_for_errors;
  store.requests = stats.requests;
  store.bytes_received = stats.bytes_received;
  store.bytes_sent = stats.bytes_sent;
  store.stored_bytes = stats.stored_bytes;
  store.keys = stats.keys;
  if (auto last = server.last_round_request())
    store.seconds_since_request = seconds_between(*last, now);
  return store;
}

}  // namespace

observe::NodeStatus collect_node_status(const NodeParts& parts, const std::string& proc_root) {
  const Clock::time_point now = Clock::now();
  const AgentCounters& counters = parts.counters;
  observe::NodeStatus status;
  status.run_id = parts.plan.run_id;
  status.node = counters.node.empty() ? parts.plan.host : counters.node;
  status.node_rank = counters.node_rank;
  status.agent_state = to_string(parts.state);
  status.collected_at =
      std::chrono::duration<double>(std::chrono::system_clock::now().time_since_epoch()).count();
  status.rounds = counters.rounds;
  status.restarts = counters.restarts;
  status.nodes_in_round = counters.nodes_in_round;
  status.local_world_size = parts.plan.local_world_size;

  const doctor::LiveMarks marks = parts.doctor.marks();
  status.hangs = marks.hangs;
  status.stragglers_named = marks.stragglers_named;
  const std::map<int, double> rates = parts.gang.steps_per_second();
  for (const supervise::Gang::LiveWorker& worker : parts.gang.live_worker_list()) {
    observe::RankStatus rank;
    rank.rank = worker.rank;
    rank.local_rank = worker.local_rank;
    rank.pid = worker.pid;
    read_proc(rank, proc_root);
    if (worker.last_line_at) rank.seconds_since_output = seconds_between(*worker.last_line_at, now);
    rank.seconds_since_progress =
        seconds_between(std::max(worker.last_line_at.value_or(counters.round_started_at),
                                 counters.round_started_at),
                        now);
    if (auto rate = rates.find(worker.rank); rate != rates.end())
      rank.steps_per_second = rate->second;
    rank.hung = marks.hang_reported;
    rank.slow = marks.slow_ranks.contains(worker.rank);
    status.ranks.push_back(rank);
  }
  std::sort(status.ranks.begin(), status.ranks.end(),
            [](const auto& a, const auto& b) { return a.rank < b.rank; });
  if (parts.store) status.store = store_status(*parts.store, now);
  return status;
}

observe::Health agent_health(AgentState state) {
  return {.healthy = true, .body = std::string("ok ") + to_string(state)};
}

}  // namespace gangrun::agent
