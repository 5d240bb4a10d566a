#include "observe/metrics_text.hpp"

#include <cmath>
#include <cstdio>
#include <functional>

namespace gangrun::observe {

std::string escaped_label_value(std::string_view value) {
  std::string out;
  out.reserve(value.size());
  for (char c : value) {
    if (c == '\\') {
      out += "\\\\";
    } else if (c == '"') {
      out += "\\\"";
    } else if (c == '\n') {
      out += "\\n";
    } else if (static_cast<unsigned char>(c) < 0x20 || c == 0x7f) {
      out += ' ';
    } else {
      out += c;
    }
  }
  return out;
}

namespace {

std::string number_text(double value) {
  if (std::isnan(value)) return "NaN";
  if (std::isinf(value)) return value > 0 ? "+Inf" : "-Inf";
  char text[32];
  std::snprintf(text, sizeof text, "%.17g", value);
  return text;
}

// Writes one metric family: its HELP and TYPE lines, then its samples.
class Family {
 public:
  Family(std::string& out, std::string base_labels, const char* name, const char* type,
         const char* help)
      : out_(out), base_labels_(std::move(base_labels)), name_(name) {
    out_ += std::string("# HELP ") + name + " " + help + "\n";
    out_ += std::string("# TYPE ") + name + " " + type + "\n";
  }
  // extra_labels: `rank="3",local_rank="1"`, already escaped; may be empty.
  void sample(double value, const std::string& extra_labels = "") {
    out_ += name_;
    out_ += '{';
    out_ += base_labels_;
    if (!extra_labels.empty()) out_ += "," + extra_labels;
    out_ += "} " + number_text(value) + "\n";
  }

 private:
  std::string& out_;
  std::string base_labels_;
  const char* name_;
};

std::string label(const char* name, std::string_view value) {
  return std::string(name) + "=\"" + escaped_label_value(value) + "\"";
}

std::string rank_labels(const RankStatus& rank) {
  return label("rank", std::to_string(rank.rank)) + "," +
         label("local_rank", std::to_string(rank.local_rank));
}

void per_rank(std::string& out, const std::string& base, const NodeStatus& status, const char* name,
              const char* type, const char* help,
              const std::function<double(const RankStatus&)>& value) {
  Family family(out, base, name, type, help);
  for (const RankStatus& rank : status.ranks) family.sample(value(rank), rank_labels(rank));
}

void node_series(std::string& out, const std::string& base, const NodeStatus& status) {
  Family(out, base, "gangrun_agent_state", "gauge",
         "1 for the node agent's state now (starting, running, stopping, restarting, done)")
      .sample(1, label("state", status.agent_state));
  {
    Family workers(out, base, "gangrun_workers", "gauge",
                   "Live workers on this node by process state");
    for (RankState state : k_rank_states) {
      double count = 0;
      for (const RankStatus& rank : status.ranks) count += rank.state == state ? 1 : 0;
      workers.sample(count, label("state", to_string(state)));
    }
  }
  Family(out, base, "gangrun_local_world_size", "gauge", "Workers this node runs per round")
      .sample(status.local_world_size);
  Family(out, base, "gangrun_restarts_total", "counter",
         "Restarts of the gang so far (TORCHELASTIC_RESTART_COUNT of the current round)")
      .sample(status.restarts);
  Family(out, base, "gangrun_rendezvous_rounds_total", "counter",
         "Rounds this node agent began (the first and every restart)")
      .sample(static_cast<double>(status.rounds));
  Family(out, base, "gangrun_nodes_in_round", "gauge", "Nodes in the current round")
      .sample(status.nodes_in_round);
  Family(out, base, "gangrun_hangs_total", "counter", "Hangs the gang doctor reported")
      .sample(static_cast<double>(status.hangs));
  Family(out, base, "gangrun_stragglers_named_total", "counter",
         "Times the straggler watch named a rank slow")
      .sample(static_cast<double>(status.stragglers_named));
  double slow_now = 0;
  for (const RankStatus& rank : status.ranks) slow_now += rank.slow ? 1 : 0;
  Family(out, base, "gangrun_stragglers", "gauge",
         "Live ranks on this node named slow in the current round")
      .sample(slow_now);
}

void rank_series(std::string& out, const std::string& base, const NodeStatus& status) {
  per_rank(out, base, status, "gangrun_rank_seconds_since_progress", "gauge",
           "Seconds since the rank last printed a line (else since its round began)",
           [](const RankStatus& rank) { return rank.seconds_since_progress; });
  {
    Family steps(out, base, "gangrun_rank_steps_per_second", "gauge",
                 "Steps a second the rank's own output counts (a progress bar, step N lines)");
    for (const RankStatus& rank : status.ranks) {
      if (rank.steps_per_second) steps.sample(*rank.steps_per_second, rank_labels(rank));
    }
  }
  per_rank(out, base, status, "gangrun_rank_cpu_seconds_total", "counter",
           "CPU time (user and system) the rank's process used",
           [](const RankStatus& rank) { return rank.cpu_seconds; });
  per_rank(out, base, status, "gangrun_rank_resident_memory_bytes", "gauge",
           "Resident memory of the rank's process",
           [](const RankStatus& rank) { return static_cast<double>(rank.rss_kib) * 1024.0; });
  per_rank(out, base, status, "gangrun_rank_hung", "gauge",
           "1 when the rank is in the hang the doctor reported this round",
           [](const RankStatus& rank) { return rank.hung ? 1.0 : 0.0; });
  per_rank(out, base, status, "gangrun_rank_stopped", "gauge",
           "1 when the rank's process is stopped from outside (SIGSTOP, a tracer)",
           [](const RankStatus& rank) { return rank.state == RankState::stopped ? 1.0 : 0.0; });
  per_rank(out, base, status, "gangrun_rank_slow", "gauge",
           "1 when the straggler watch named the rank slow this round",
           [](const RankStatus& rank) { return rank.slow ? 1.0 : 0.0; });
}

void store_series(std::string& out, const std::string& base, const StoreStatus& store) {
  auto count = [](std::uint64_t value) { return static_cast<double>(value); };
  Family(out, base, "gangrun_store_connections", "gauge",
         "Connections open to the store this agent hosts")
      .sample(count(store.connections));
  Family(out, base, "gangrun_store_connections_accepted_total", "counter",
         "Connections the store accepted")
      .sample(count(store.connections_accepted));
  Family(out, base, "gangrun_store_connections_refused_total", "counter",
         "Connections the store refused at its connection limit")
      .sample(count(store.connections_refused));
  Family(out, base, "gangrun_store_connections_closed_for_errors_total", "counter",
         "Connections the store closed for a limit, bad bytes or a failure")
      .sample(count(store.connections_closed_for_errors));
  Family(out, base, "gangrun_store_requests_total", "counter", "Requests the store served")
      .sample(count(store.requests));
  Family(out, base, "gangrun_store_received_bytes_total", "counter",
         "Bytes the store received from its clients")
      .sample(count(store.bytes_received));
  Family(out, base, "gangrun_store_sent_bytes_total", "counter",
         "Bytes the store sent to its clients")
      .sample(count(store.bytes_sent));
  Family(out, base, "gangrun_store_stored_bytes", "gauge", "Bytes of keys and values stored")
      .sample(count(store.stored_bytes));
  Family(out, base, "gangrun_store_keys", "gauge", "Keys stored").sample(count(store.keys));
}

}  // namespace

std::string metrics_text(const NodeStatus& status) {
  std::string out;
  const std::string base = label("run_id", status.run_id) + "," + label("node", status.node);
  node_series(out, base, status);
  rank_series(out, base, status);
  if (status.store) store_series(out, base, *status.store);
  return out;
}

}  // namespace gangrun::observe
