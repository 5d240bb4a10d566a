#include "report/job_reports.hpp"

#include "report/json_reading.hpp"

#include <algorithm>
#include <cstdio>
#include <set>

namespace gangrun::report {
namespace {

using json = nlohmann::json;
using namespace json_reading;

const json* attempt_numbered(const json& report, int number) {
  for (const json& attempt : array_of(report, "attempts")) {
    if (int_of(attempt, "attempt") == number) return &attempt;
  }
  return nullptr;
}

// When the attempt's root cause ended, as its own worker entry says.
std::optional<double> root_cause_end(const json& attempt) {
  std::optional<int> rank = int_of(member(attempt, "root_cause"), "rank");
  if (!rank) return std::nullopt;
  for (const json& worker : array_of(attempt, "workers")) {
    if (int_of(worker, "rank") == rank) return parse_report_time(text_of(worker, "ended_at"));
  }
  return std::nullopt;
}

bool is_last_attempt(const json& report, int number) {
  const json& attempts = array_of(report, "attempts");
  return !attempts.empty() && int_of(attempts.back(), "attempt") == number;
}

}  // namespace

std::optional<int> node_rank_of(const json& report) {
  // "node 1 (vm, 10.0.0.2)": the rank of the round, which on a c10d
  // rendezvous is not the plan's.
  std::string node = text_of(report, "node");
  int from_name = -1;
  int used = 0;
  if (std::sscanf(node.c_str(), "node %d (%n", &from_name, &used) == 1 && used > 0 &&
      from_name >= 0) {
    return from_name;
  }
  std::optional<int> rank = int_of(member(report, "plan"), "node_rank");
  if (rank && *rank < 0) return std::nullopt;
  return rank;
}

std::vector<std::size_t> node_order(const std::vector<NodeReport>& nodes) {
  std::vector<std::size_t> order(nodes.size());
  for (std::size_t i = 0; i < order.size(); ++i) order[i] = i;
  std::stable_sort(order.begin(), order.end(), [&](std::size_t a, std::size_t b) {
    std::optional<int> rank_a = node_rank_of(nodes[a].report);
    std::optional<int> rank_b = node_rank_of(nodes[b].report);
    if (rank_a && rank_b) return *rank_a < *rank_b;
    return rank_a.has_value() && !rank_b;
  });
  return order;
}

std::optional<std::size_t> root_cause_node(const std::vector<NodeReport>& nodes, int attempt) {
  std::optional<std::size_t> earliest;
  std::optional<double> earliest_end;
  for (std::size_t i = 0; i < nodes.size(); ++i) {
    const json* found = attempt_numbered(nodes[i].report, attempt);
    if (!found || !member(*found, "root_cause").is_object()) continue;
    if (is_last_attempt(nodes[i].report, attempt) &&
        member(member(nodes[i].report, "job"), "root_cause_here") == true) {
      return i;
    }
    std::optional<double> end = root_cause_end(*found);
    if (!earliest || (end && (!earliest_end || *end < *earliest_end))) {
      earliest = i;
      earliest_end = end;
    }
  }
  return earliest;
}

int last_attempt(const std::vector<NodeReport>& nodes) {
  int last = 0;
  for (const NodeReport& node : nodes) {
    for (const json& attempt : array_of(node.report, "attempts")) {
      last = std::max(last, int_of(attempt, "attempt").value_or(0));
    }
  }
  return last;
}

std::vector<int> missing_node_ranks(const std::vector<NodeReport>& nodes) {
  int planned = 0;
  std::set<int> present;
  for (const NodeReport& node : nodes) {
    // A plan's nnodes is its own text; anything past a sane size is not a
    // list to print.
    std::optional<int> nnodes = int_of(member(node.report, "plan"), "nnodes");
    if (nnodes && *nnodes <= 65536) planned = std::max(planned, *nnodes);
    if (std::optional<int> rank = node_rank_of(node.report)) present.insert(*rank);
  }
  std::vector<int> missing;
  for (int rank = 0; rank < planned; ++rank) {
    if (!present.count(rank)) missing.push_back(rank);
  }
  return missing;
}

}  // namespace gangrun::report
