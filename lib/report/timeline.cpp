#include "report/timeline.hpp"

#include "report/job_reports.hpp"
#include "report/json_reading.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cstdio>
#include <ctime>
#include <map>
#include <set>

namespace gangrun::report {
namespace {

using json = nlohmann::json;
using namespace json_reading;

std::optional<double> time_of(const json& object, const char* key) {
  return parse_report_time(text_of(object, key));
}

std::set<int> int_set(const json& list) {
  std::set<int> out;
  if (!list.is_array()) return out;
  for (const json& item : list) {
    if (item.is_number_integer() && item.get<long long>() >= 0 &&
        item.get<long long>() < (1 << 30)) {
      out.insert(static_cast<int>(item.get<long long>()));
    }
  }
  return out;
}

// The node this report's workers ran on, as its messages name it.
std::string this_node(const json& report) {
  if (std::string node = text_of(report, "node"); !node.empty()) return node;
  std::string host = text_of(report, "host");
  const json& plan = member(report, "plan");
  std::optional<int> nodes = int_of(plan, "nnodes");
  std::optional<int> node_rank = int_of(plan, "node_rank");
  if (nodes && *nodes > 1 && node_rank) return fmt::format("node {} ({})", *node_rank, host);
  return host.empty() ? std::string("this node") : host;
}

// "load_batch <- train <- <module>": the main thread's functions, innermost
// first (doctor/stack_groups.hpp writes its summary alike).
std::string main_thread_line(const json& entry) {
  const json& threads = array_of(entry, "threads");
  const json* main = threads.empty() ? nullptr : &threads.front();
  std::optional<int> pid = int_of(entry, "pid");
  for (const json& thread : threads) {
    if ((pid && int_of(thread, "thread_id") == pid) || text_of(thread, "name") == "MainThread") {
      main = &thread;
      break;
    }
  }
  if (!main) return text_of(entry, "unavailable");
  std::string line;
  int shown = 0;
  for (const json& frame : array_of(*main, "frames")) {
    if (shown == 6) return line + " <- ...";
    line += (shown++ ? " <- " : "") + text_of(frame, "function");
  }
  return line.empty() ? "(no Python frames)" : line;
}

std::string exit_text(const json& worker) {
  if (std::string signal = text_of(worker, "signal"); !signal.empty()) return signal;
  if (std::optional<int> code = int_of(worker, "exit_code")) return fmt::format("exit {}", *code);
  return "no exit";
}

std::string outcome_of(const json& worker) {
  if (!text_of(worker, "spawn_error").empty()) return "not-started";
  if (member(worker, "stopped_by_gangrun") == true) return "stopped";
  if (int_of(worker, "exit_code") == 0) return "succeeded";
  return "failed";
}

struct Builder {
  double origin = 0;
  std::map<std::pair<std::string, int>, Lane> lanes;  // by (node, rank)
  std::vector<std::string> nodes;
  double last_s = 0;
  // Every drawn run by (attempt, rank), over every report: where a hang's
  // stack of a rank lands, whichever node's report read it. Lane::runs is a
  // deque, so these stay valid while runs are added.
  std::map<std::pair<int, int>, RankRun*> runs;

  Lane& lane(const std::string& node, int rank) {
    if (std::find(nodes.begin(), nodes.end(), node) == nodes.end()) nodes.push_back(node);
    Lane& found = lanes[{node, rank}];
    found.rank = rank;
    found.node = node;
    return found;
  }
  double since_start(double epoch_s) {
    double at = std::max(0.0, epoch_s - origin);
    last_s = std::max(last_s, at);
    return at;
  }
};

// One report as the timeline reads it: the node its lanes go under, and
// the attempts whose root cause in it is the one drawn (nullopt: every
// attempt's, the report being the only one).
struct Input {
  const json& report;
  const std::vector<LogActivity>& logs;
  std::string node;
  std::optional<std::set<int>> blamed_attempts;
};

void add_logs(RankRun& run, int local_rank, const std::vector<LogActivity>& logs, Builder& built) {
  for (const LogActivity& log : logs) {
    if (log.attempt != run.attempt || log.local_rank != local_rank) continue;
    run.output_bytes = log.bytes;
    if (log.bytes > 0) run.last_output_s = built.since_start(log.last_write_s);
  }
}

std::map<int, RankRun*> add_workers(const json& attempt, int number, const Input& input,
                                    Builder& built) {
  std::map<int, RankRun*> by_rank;
  std::optional<int> root = int_of(member(attempt, "root_cause"), "rank");
  if (input.blamed_attempts && !input.blamed_attempts->count(number)) root.reset();
  std::optional<int> first = int_of(member(attempt, "first_failure"), "rank");
  for (const json& worker : array_of(attempt, "workers")) {
    std::optional<int> rank = int_of(worker, "rank");
    if (!rank || by_rank.count(*rank)) continue;  // a rank twice is no report of ours
    RankRun run;
    run.attempt = number;
    run.pid = int_of(worker, "pid").value_or(-1);
    std::optional<double> start = time_of(worker, "started_at");
    std::optional<double> end = time_of(worker, "ended_at");
    run.start_s = start ? built.since_start(*start) : 0;
    run.end_s = end ? built.since_start(*end) : run.start_s;
    run.end_s = std::max(run.end_s, run.start_s);
    run.ended = text_of(worker, "ended");
    run.outcome = outcome_of(worker);
    run.exit_text = exit_text(worker);
    run.root_cause = root == rank;
    run.first_failure = first == rank;
    add_logs(run, int_of(worker, "local_rank").value_or(-1), input.logs, built);
    Lane& lane = built.lane(input.node, *rank);
    lane.runs.push_back(std::move(run));
    by_rank[*rank] = &lane.runs.back();
    built.runs.try_emplace({number, *rank}, &lane.runs.back());
  }
  return by_rank;
}

// The ranks of a hang's first stack group when there are others: the odd
// ones out, which the others wait for.
std::set<int> odd_ones_out(const json& stacks) {
  const json& groups = array_of(stacks, "groups");
  if (groups.size() < 2) return {};
  return int_set(groups.front());
}

void add_hang(const json& hang, int number, const std::string& node, Builder& built) {
  const json& stacks = member(hang, "stacks");
  std::set<int> hung = odd_ones_out(stacks);
  std::set<int> stopped = int_set(member(hang, "stopped"));
  for (const json& entry : array_of(stacks, "ranks")) {
    std::optional<int> rank = int_of(entry, "rank");
    if (!rank) continue;
    RankRun*& run = built.runs[{number, *rank}];
    if (!run) {
      // A rank of a node whose report is not drawn: its stack is here, its
      // times are not.
      std::string host = text_of(entry, "host");
      Lane& lane = built.lane(host.empty() || host == node ? "another node" : host, *rank);
      RankRun other;
      other.attempt = number;
      other.pid = int_of(entry, "pid").value_or(-1);
      other.drawn = false;
      other.outcome = "elsewhere";
      lane.runs.push_back(std::move(other));
      run = &lane.runs.back();
    }
    run->stack_line = main_thread_line(entry);
    run->hung = hung.count(*rank) > 0;
    run->stopped = stopped.count(*rank) > 0 || !member(entry, "stopped").is_null();
  }
}

void add_stragglers(const json& watch, int number, Builder& built) {
  std::set<int> named = int_set(member(watch, "stragglers"));
  for (const json& entry : array_of(watch, "ranks")) {
    std::optional<int> rank = int_of(entry, "rank");
    if (!rank || !built.runs.count({number, *rank})) continue;
    RankRun& run = *built.runs.at({number, *rank});
    run.straggler = named.count(*rank) > 0;
    std::optional<double> waiting = number_of(entry, "waiting_pct");
    std::optional<int> samples = int_of(entry, "samples");
    if (waiting && samples) {
      run.straggler_text =
          fmt::format("waiting on the others in {:.0f}% of {} samples", *waiting, *samples);
    }
  }
}

// --failure_window's seconds as the plan's options give it, when given.
std::optional<double> failure_window_s(const json& report) {
  const json& option = member(member(member(report, "plan"), "options"), "failure_window");
  std::string value = text_of(option, "value");
  if (value.empty()) return std::nullopt;
  char* end = nullptr;
  double seconds = std::strtod(value.c_str(), &end);
  if (end == value.c_str() || seconds < 0) return std::nullopt;
  return seconds;
}

void add_bands(const json& report, const json& attempt, int number,
               const std::map<int, RankRun*>& by_rank, double attempt_end_s, Timeline& out,
               Builder& built) {
  std::optional<int> first = int_of(member(attempt, "first_failure"), "rank");
  if (first && by_rank.count(*first)) {
    double start = by_rank.at(*first)->end_s;
    double end = attempt_end_s;
    std::string title = "failure window: from the first failure to the last rank's end";
    if (std::optional<double> window = failure_window_s(report)) {
      end = std::min(end, start + *window);
      title = fmt::format("failure window ({} s): the others may still fail on their own", *window);
    }
    out.bands.push_back({Band::Kind::failure_window, number, start, std::max(end, start), title});
  }
  const json& hang = member(attempt, "hang");
  if (!hang.is_object()) return;
  double silent = number_of(hang, "silent_for_s").value_or(0);
  std::optional<double> reported = time_of(hang, "reported_at");
  double end = reported ? built.since_start(*reported) : attempt_end_s;
  out.bands.push_back(
      {Band::Kind::hang, number, std::max(0.0, end - silent), end,
       fmt::format("hang: no rank made progress for {:.1f} s (--hang-timeout {} "
                   "s); --on-hang {}",
                   silent, number_of(hang, "timeout_s").value_or(0), text_of(hang, "action"))});
}

// The run's start, or without one the earliest worker's: seconds since the
// epoch, 0 when the report has neither.
double origin_of(const json& report) {
  if (std::optional<double> start = time_of(report, "started_at")) return *start;
  double earliest = 0;
  for (const json& attempt : array_of(report, "attempts")) {
    for (const json& worker : array_of(attempt, "workers")) {
      std::optional<double> start = time_of(worker, "started_at");
      if (start && (earliest == 0 || *start < earliest)) earliest = *start;
    }
  }
  return earliest;
}

// Every report's workers first, so that a hang read on one node finds the
// lanes of every node; then each report's hang, stragglers and bands.
Timeline timeline_of_reports(const std::vector<Input>& inputs, double origin) {
  Builder built;
  built.origin = origin;
  for (const Input& input : inputs) built.nodes.push_back(input.node);
  std::vector<std::vector<std::map<int, RankRun*>>> workers(inputs.size());
  for (std::size_t i = 0; i < inputs.size(); ++i) {
    for (const json& attempt : array_of(inputs[i].report, "attempts")) {
      int number = int_of(attempt, "attempt").value_or(0);
      workers[i].push_back(add_workers(attempt, number, inputs[i], built));
    }
  }
  Timeline out;
  for (std::size_t i = 0; i < inputs.size(); ++i) {
    const json& attempts = array_of(inputs[i].report, "attempts");
    for (std::size_t a = 0; a < attempts.size(); ++a) {
      const json& attempt = attempts[a];
      const std::map<int, RankRun*>& by_rank = workers[i][a];
      int number = int_of(attempt, "attempt").value_or(0);
      double attempt_start = -1;
      double attempt_end = 0;
      for (const auto& [rank, run] : by_rank) {
        if (attempt_start < 0 || run->start_s < attempt_start) attempt_start = run->start_s;
        attempt_end = std::max(attempt_end, run->end_s);
      }
      if (attempt_start >= 0 && a > 0) out.attempt_starts_s.push_back(attempt_start);
      add_hang(member(attempt, "hang"), number, inputs[i].node, built);
      add_stragglers(member(attempt, "straggler_watch"), number, built);
      add_bands(inputs[i].report, attempt, number, by_rank, attempt_end, out, built);
    }
    if (std::optional<double> end = time_of(inputs[i].report, "ended_at")) built.since_start(*end);
  }
  std::sort(out.attempt_starts_s.begin(), out.attempt_starts_s.end());
  out.span_s = std::max(built.last_s, 0.001);
  out.nodes = built.nodes;
  for (const std::string& name : out.nodes) {
    for (auto& [key, lane] : built.lanes) {
      if (key.first == name) out.lanes.push_back(std::move(lane));
    }
  }
  return out;
}

}  // namespace

bool Lane::any(bool RankRun::*mark) const {
  return std::any_of(runs.begin(), runs.end(), [&](const RankRun& run) { return run.*mark; });
}

std::optional<double> parse_report_time(const std::string& text) {
  std::tm utc{};
  int millis = 0;
  int used = 0;
  if (std::sscanf(text.c_str(), "%4d-%2d-%2dT%2d:%2d:%2d.%3dZ%n", &utc.tm_year, &utc.tm_mon,
                  &utc.tm_mday, &utc.tm_hour, &utc.tm_min, &utc.tm_sec, &millis, &used) != 7 ||
      used != static_cast<int>(text.size())) {
    return std::nullopt;
  }
  utc.tm_year -= 1900;
  utc.tm_mon -= 1;
  return static_cast<double>(::timegm(&utc)) + millis / 1000.0;
}

Timeline timeline_of(const json& report, const std::vector<LogActivity>& logs) {
  return timeline_of_reports({{report, logs, this_node(report), std::nullopt}}, origin_of(report));
}

Timeline job_timeline_of(const std::vector<NodeReport>& nodes) {
  // Each attempt's root cause is drawn on the one node root_cause_node names
  // (the attempts the reports hold, not every number up to the last: the
  // reports are text anyone may have edited).
  std::set<int> attempts;
  for (const NodeReport& node : nodes) {
    for (const json& attempt : array_of(node.report, "attempts")) {
      int number = int_of(attempt, "attempt").value_or(0);
      if (number >= 0) attempts.insert(number);
    }
  }
  std::vector<std::set<int>> blamed(nodes.size());
  for (int attempt : attempts) {
    if (std::optional<std::size_t> node = root_cause_node(nodes, attempt))
      blamed[*node].insert(attempt);
  }
  std::vector<Input> inputs;
  std::optional<double> origin;
  for (std::size_t i : node_order(nodes)) {
    const json& report = nodes[i].report;
    inputs.push_back({report, nodes[i].logs, this_node(report), std::move(blamed[i])});
    double start = origin_of(report);
    if (start > 0 && (!origin || start < *origin)) origin = start;
  }
  return timeline_of_reports(inputs, origin.value_or(0));
}

}  // namespace gangrun::report
