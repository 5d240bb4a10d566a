// A job of several nodes seen through every node's report: each node's run
// directory holds a report of its own ranks (run_report.hpp), and these
// functions read them together for one page (report_html.hpp). Pure: the
// reports come in as JSON, read by json_reading, never throwing.
//
// One owner for which node's report names the job's root cause: the page's
// marks (timeline.hpp) and its words (report_html.hpp) both ask here.
#pragma once

#include "report/timeline.hpp"

#include <nlohmann/json.hpp>

#include <optional>
#include <string>
#include <vector>

namespace gangrun::report {

// One node's report.json and what its log files say (LogActivity).
struct NodeReport {
  nlohmann::json report;
  std::vector<LogActivity> logs;
};

// The node's rank as its report's "node" names it ("node 1 (vm, 10.0.0.2)",
// the round's, which a c10d rendezvous assigns), else plan.node_rank.
std::optional<int> node_rank_of(const nlohmann::json& report);

// Indices into nodes in node-rank order; a report without a node rank comes
// after those with one, in the order given.
std::vector<std::size_t> node_order(const std::vector<NodeReport>& nodes);

// The node whose report names the root cause of the attempt numbered
// attempt, or nullopt when none names one. On the job's last attempt the
// node the reports agree on is it (report.job.root_cause_here, which the
// rendezvous' coordinator told every node); otherwise, and when no report
// says so, the node whose root cause ended first: before the coordinator
// told the others to stop, a node's root cause is its first failure.
std::optional<std::size_t> root_cause_node(const std::vector<NodeReport>& nodes, int attempt);

// The job's last attempt's number, over every node's report (0 when none).
int last_attempt(const std::vector<NodeReport>& nodes);

// The node ranks below the plan's nnodes that no report is of, ascending
// (the largest nnodes any report's plan gives).
std::vector<int> missing_node_ranks(const std::vector<NodeReport>& nodes);

}  // namespace gangrun::report
