// What report.html draws, read out of a run report's JSON (run_report.hpp)
// into plain lanes and bands: one lane per rank, grouped by node, and in it
// one run per attempt the rank took part in. The JSON may come from a file
// someone edited: a value of the wrong type or a key that is missing leaves
// out what needed it, never throws.
#pragma once

#include <nlohmann/json.hpp>

#include <deque>
#include <optional>
#include <string>
#include <vector>

namespace gangrun::report {

// What a worker's log files say of its output (--log-dir): when they were
// last written and how much they hold. The caller, who knows the run
// directory's layout, reads them; the report itself has no output times.
struct LogActivity {
  int attempt = 0;
  int local_rank = 0;
  double last_write_s = 0;  // seconds since the epoch
  long long bytes = 0;      // stdout.log and stderr.log together
};

// One rank in one attempt; times are seconds since the run started.
struct RankRun {
  int attempt = 0;
  long pid = -1;
  double start_s = 0;
  double end_s = 0;
  std::string ended;      // the report's words: "exited with 1", "stopped by gangrun (SIGTERM)"
  std::string outcome;    // "succeeded", "failed", "stopped" (by gangrun), "not-started"
  std::string exit_text;  // "exit 1", "SIGKILL", "exit 0"
  bool root_cause = false;
  bool first_failure = false;
  bool hung = false;     // the odd one out of a hang's stacks
  bool stopped = false;  // stopped from outside (SIGSTOP) when the hang was read
  bool straggler = false;
  std::string straggler_text;  // "outside a collective in 92% of 60 samples"
  std::string stack_line;      // its main thread at the hang, innermost first
  std::optional<double> last_output_s;
  long long output_bytes = 0;
  bool drawn = true;  // false: only its stack is in this report (a rank of another node)
};

struct Lane {
  int rank = 0;
  std::string node;
  std::deque<RankRun> runs;  // by attempt
  bool any(bool RankRun::*mark) const;
};

// A stretch of time over every lane of an attempt.
struct Band {
  enum class Kind { failure_window, hang };
  Kind kind = Kind::failure_window;
  int attempt = 0;
  double start_s = 0;
  double end_s = 0;
  std::string title;
};

struct Timeline {
  double span_s = 0;               // the run's start to its end (or its last worker's)
  std::vector<std::string> nodes;  // in the order drawn: the reports' nodes first
  std::vector<Lane> lanes;         // by node in that order, then by rank
  std::vector<Band> bands;
  std::vector<double> attempt_starts_s;  // where each attempt after the first began
};

// "2026-11-22T10:15:03.123Z" (format_time's form) as seconds since the
// epoch; nullopt for any other text.
std::optional<double> parse_report_time(const std::string& text);

Timeline timeline_of(const nlohmann::json& report, const std::vector<LogActivity>& logs);

struct NodeReport;  // job_reports.hpp

// Every node's report of one job drawn together: times from the earliest
// start among them, the nodes in node-rank order, each report's attempts,
// bands and restarts. A rank whose stack one node read at a hang gets its
// marks and stack line on its own lane when its node's report is among
// them, else a lane of its stack only. The root cause marked in an attempt
// is the one root_cause_node names; other nodes' are their own first
// failures, not the job's, and are not marked.
Timeline job_timeline_of(const std::vector<NodeReport>& nodes);

}  // namespace gangrun::report
