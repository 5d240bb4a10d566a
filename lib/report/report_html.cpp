#include "report/report_html.hpp"

#include "report/blame.hpp"
#include "report/html_text.hpp"
#include "report/job_reports.hpp"
#include "report/json_reading.hpp"
#include "report/run_report.hpp"
#include "report/timeline_svg.hpp"

#include <fmt/format.h>

namespace gangrun::report {
namespace {

using json = nlohmann::json;
using namespace json_reading;

// No script, no fetch of any kind: only the inline style applies. A page
// that shows a stranger's text is safest when nothing in it can run.
constexpr std::string_view k_head_security =
    "<meta http-equiv=\"Content-Security-Policy\" content=\"default-src 'none'; style-src "
    "'unsafe-inline'; img-src data:\">";

constexpr std::string_view k_style = R"(
body{font:14px/1.4 system-ui,sans-serif;margin:16px 24px;color:#1d2430;background:#fff}
h1{font-size:20px;margin:0 0 8px}h2{font-size:16px;margin:20px 0 6px}
dl.facts{display:grid;grid-template-columns:max-content auto;gap:2px 14px;margin:0}
dl.facts dt{color:#5a6474}dl.facts dd{margin:0;font-family:monospace}
.blame{background:#fdecea;border-left:4px solid #c62828;padding:6px 10px;margin:10px 0}
.legend span{display:inline-block;margin-right:14px}
.legend i{display:inline-block;width:14px;height:10px;margin-right:4px;vertical-align:middle}
.scroll{overflow:auto;border:1px solid #d8dde6;max-height:80vh}
svg.timeline{font:11px monospace;display:block}
.axis line{stroke:#e6e9ef}.axis text{fill:#5a6474;text-anchor:middle}
.node-label{font-weight:bold;fill:#1d2430}.rank-label{fill:#1d2430}
.run.succeeded,i.succeeded{fill:#6fbf73;background:#6fbf73}
.run.failed,i.failed{fill:#e57373;background:#e57373}
.run.stopped,i.stopped{fill:#b0b7c3;background:#b0b7c3}
.run.not-started{fill:none;stroke:#e57373;stroke-dasharray:2 2}
.run.root-cause,i.root-cause{stroke:#8e0000;stroke-width:2.5;fill:#c62828;background:#c62828}
.run.hung{stroke:#6a1b9a;stroke-width:2}
.run.stopped-out{stroke:#ef6c00;stroke-width:2;stroke-dasharray:3 2}
.run.straggler{stroke:#f9a825;stroke-width:2}
.mark{font-weight:bold}.mark.root-cause{fill:#c62828}.mark.hung{fill:#6a1b9a}
.mark.stopped-out{fill:#ef6c00}.mark.straggler{fill:#b8860b}.exit{fill:#5a6474}
.band.failure-window,i.failure-window{fill:#ffcc80;fill-opacity:.35;background:#ffe0b2}
.band.hang,i.hang{fill:#ce93d8;fill-opacity:.3;background:#e1bee7}
.band-label{fill:#6a1b9a;font-weight:bold}
.restart{stroke:#1565c0;stroke-dasharray:4 3}
.last-output{stroke:#1d2430;stroke-width:1.5}.elsewhere{fill:#5a6474;font-style:italic}
pre{background:#f5f6f8;padding:8px;overflow:auto;max-height:30em}
details{margin:2px 0}summary{cursor:pointer}
table{border-collapse:collapse;font:12px monospace}table.nodes{margin:8px 0}td,th{border:1px solid #d8dde6;padding:2px 6px;text-align:left}
)";

std::string e(const std::string& text) { return html_escape(text); }

void fact(const char* name, const std::string& value, std::string& out) {
  if (value.empty()) return;
  out += fmt::format("<dt>{}</dt><dd>{}</dd>", name, e(value));
}

void facts(const json& report, std::string& out) {
  out += "<dl class=\"facts\">";
  fact("program", text_of(report, "entrypoint"), out);
  fact("host", text_of(report, "host"), out);
  fact("node", text_of(report, "node"), out);
  fact("started", text_of(report, "started_at"), out);
  fact("ended", text_of(report, "ended_at"), out);
  if (std::optional<int> code = int_of(report, "exit_code")) {
    fact("exit code", std::to_string(*code), out);
  }
  if (std::optional<int> restarts = int_of(report, "restarts")) {
    fact("restarts", std::to_string(*restarts), out);
  }
  fact("gangrun stopped by", text_of(report, "gangrun_signal"), out);
  fact("log directory", text_of(report, "log_dir"), out);
  fact("job", text_of(member(report, "job"), "message"), out);
  out += "</dl>";
}

void legend(std::string& out) {
  out +=
      "<p class=\"legend\">"
      "<span><i class=\"succeeded\"></i>exited 0</span>"
      "<span><i class=\"failed\"></i>failed on its own</span>"
      "<span><i class=\"root-cause\"></i>root cause</span>"
      "<span><i class=\"stopped\"></i>stopped by gangrun</span>"
      "<span><i class=\"failure-window\"></i>failure window</span>"
      "<span><i class=\"hang\"></i>hang</span>"
      "<span>| tick: last output (log file written)</span>"
      "<span>dashed blue: a restart</span></p>";
}

std::string lines_text(const json& lines) {
  std::string text;
  if (!lines.is_array()) return text;
  for (const json& line : lines) {
    if (line.is_string()) text += line.get<std::string>() + "\n";
  }
  return text;
}

// Every rank's threads in full, a <details> each, closed.
void stacks_details(const json& stacks, std::string& out) {
  out += fmt::format("<pre class=\"stack-summary\">{}</pre>",
                     e(lines_text(member(stacks, "summary"))));
  if (std::string file = text_of(stacks, "file"); !file.empty()) {
    out += fmt::format("<p>every thread of every rank: <code>{}</code></p>", e(file));
  }
  for (const json& entry : array_of(stacks, "ranks")) {
    std::optional<int> rank = int_of(entry, "rank");
    if (!rank) continue;
    std::string text;
    if (std::string why = text_of(entry, "unavailable"); !why.empty()) text += why + "\n";
    if (std::string stopped = text_of(member(entry, "stopped"), "text"); !stopped.empty()) {
      text += stopped + "\n";
    }
    for (const json& thread : array_of(entry, "threads")) {
      text += fmt::format("thread {} ({})\n", text_of(thread, "name"),
                          int_of(thread, "thread_id").value_or(0));
      for (const json& frame : array_of(thread, "frames")) {
        text += fmt::format("    {} ({}:{})\n", text_of(frame, "function"), text_of(frame, "file"),
                            int_of(frame, "line").value_or(0));
      }
    }
    out += fmt::format(
        "<details class=\"rank-stack\" data-rank=\"{}\"><summary>rank {} ({}, pid {})</summary>"
        "<pre>{}</pre></details>",
        *rank, *rank, e(text_of(entry, "host")), int_of(entry, "pid").value_or(0), e(text));
  }
}

void attempt_findings(const json& attempt, std::string& out) {
  int number = int_of(attempt, "attempt").value_or(0);
  std::string blame = text_of(attempt, "blame");
  const json& hang = member(attempt, "hang");
  const json& at_failure = member(attempt, "stacks_at_failure");
  const json& timer = member(attempt, "timer_expired");
  const json& late = member(attempt, "late_to_store");
  const json& straggler = member(attempt, "straggler_watch");
  if (blame.empty() && !hang.is_object() && !at_failure.is_object() && !timer.is_object() &&
      !late.is_object() && !straggler.is_object()) {
    return;
  }
  out += fmt::format("<section class=\"attempt\" data-attempt=\"{}\"><h2>attempt {}</h2>", number,
                     number);
  if (!blame.empty()) out += fmt::format("<p class=\"blame\">{}</p>", e(blame));
  if (hang.is_object()) {
    out += fmt::format(
        "<h3>hang: no rank made progress for {:.1f} s (--hang-timeout {} s, --on-hang {})</h3>",
        number_of(hang, "silent_for_s").value_or(0), number_of(hang, "timeout_s").value_or(0),
        e(text_of(hang, "action")));
    stacks_details(member(hang, "stacks"), out);
  }
  if (timer.is_object()) {
    out += fmt::format("<h3>rank {}'s timer {} expired</h3>", int_of(timer, "rank").value_or(-1),
                       e(text_of(timer, "scope_id")));
    if (member(timer, "stacks").is_object()) stacks_details(member(timer, "stacks"), out);
  }
  if (at_failure.is_object()) {
    out += "<h3>the others' stacks when a rank failed</h3>";
    stacks_details(at_failure, out);
  }
  if (late.is_object()) {
    std::string ranks;
    for (const json& rank : array_of(late, "ranks")) {
      if (rank.is_number_integer()) ranks += (ranks.empty() ? "" : ", ") + rank.dump();
    }
    out += fmt::format("<h3>not at the store {} after {} s: ranks {}</h3>",
                       e(text_of(late, "store")), number_of(late, "after_s").value_or(0), e(ranks));
  }
  if (straggler.is_object()) {
    out +=
        "<h3>straggler watch</h3><table><tr><th>rank</th><th>host</th><th>samples</th>"
        "<th>waiting %</th></tr>";
    for (const json& rank : array_of(straggler, "ranks")) {
      out += fmt::format("<tr><td>{}</td><td>{}</td><td>{}</td><td>{:.0f}</td></tr>",
                         int_of(rank, "rank").value_or(-1), e(text_of(rank, "host")),
                         int_of(rank, "samples").value_or(0),
                         number_of(rank, "waiting_pct").value_or(0));
    }
    out += "</table>";
  }
  out += "</section>";
}

// where: " on node 1 (vm, 10.0.0.2)" on a page of several nodes, else "".
void root_cause(const json& report, std::string& out, const std::string& where = "") {
  const json& root = member(report, "root_cause");
  if (!root.is_object()) return;
  out += fmt::format("<h2 class=\"root-cause\">root cause: rank {}{} (attempt {})</h2><p>{}</p>",
                     int_of(root, "rank").value_or(-1), e(where),
                     int_of(root, "attempt").value_or(0), e(text_of(root, "ended")));
  const json& error = member(root, "error");
  if (error.is_object()) {
    out += fmt::format("<pre class=\"error\">{}\n{}</pre>", e(text_of(error, "message")),
                       e(text_of(error, "traceback")));
  }
  if (std::string spawn = text_of(root, "spawn_error"); !spawn.empty()) {
    out += fmt::format("<pre class=\"error\">{}</pre>", e(spawn));
  }
}

// of: " on node 1 (vm, 10.0.0.2)" on a page of several nodes, else "".
void workers_table(const json& report, std::string& out, const std::string& of = "") {
  const json& attempts = array_of(report, "attempts");
  if (attempts.empty()) return;
  const json& last = attempts.back();
  out += fmt::format(
      "<details class=\"workers\"><summary>every worker of attempt {}{}</summary>"
      "<table><tr><th>rank</th><th>local rank</th><th>pid</th><th>ended</th>"
      "<th>seconds</th><th>peak RSS (KiB)</th></tr>",
      int_of(last, "attempt").value_or(0), e(of));
  for (const json& worker : array_of(last, "workers")) {
    out += fmt::format(
        "<tr><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{:.2f}</td><td>{}</td></tr>",
        int_of(worker, "rank").value_or(-1), int_of(worker, "local_rank").value_or(-1),
        int_of(worker, "pid").value_or(-1), e(text_of(worker, "ended")),
        number_of(worker, "duration_s").value_or(0), number_of(worker, "peak_rss_kib").value_or(0));
  }
  out += "</table></details>";
}

std::string page_head(const std::string& title) {
  return fmt::format(
      "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">{}<title>{}</title>"
      "<style>{}</style></head><body><h1>{}</h1>",
      k_head_security, e(title), k_style, e(title));
}

constexpr std::string_view k_page_end =
    "<p class=\"note\">Times are seconds since the run started. The tick on a bar is "
    "when the rank's log files were last written (with --log-dir); the report keeps no "
    "other output times.</p></body></html>\n";

std::string node_of(const json& report) {
  if (std::string node = text_of(report, "node"); !node.empty()) return node;
  return text_of(report, "host");
}

// The job's facts, then a row per node given: its rank, name, exit and run
// directory.
void job_facts(const std::vector<NodeReport>& nodes, const std::vector<std::size_t>& order,
               std::string& out) {
  const json& first = nodes[order.front()].report;
  std::string started = text_of(first, "started_at");
  std::string ended = text_of(first, "ended_at");
  for (std::size_t i : order) {
    // format_time's text sorts as its times do.
    std::string start = text_of(nodes[i].report, "started_at");
    std::string end = text_of(nodes[i].report, "ended_at");
    if (!start.empty() && (started.empty() || start < started)) started = start;
    if (end > ended) ended = end;
  }
  out += "<dl class=\"facts\">";
  fact("program", text_of(first, "entrypoint"), out);
  fact("started", started, out);
  fact("ended", ended, out);
  fact("job", text_of(member(first, "job"), "message"), out);
  if (std::optional<int> code = int_of(member(first, "job"), "exit_code")) {
    fact("job's exit code", std::to_string(*code), out);
  }
  if (std::vector<int> missing = missing_node_ranks(nodes); !missing.empty()) {
    fact("missing nodes",
         fmt::format("node {}: the plan has them, and no report of theirs was given (each "
                     "node's run directory holds its own)",
                     rank_list(missing)),
         out);
  }
  out += "</dl>";
  out +=
      "<table class=\"nodes\"><tr><th>node rank</th><th>node</th><th>host</th>"
      "<th>exit code</th><th>restarts</th><th>run directory</th></tr>";
  for (std::size_t i : order) {
    const json& report = nodes[i].report;
    std::optional<int> rank = node_rank_of(report);
    std::optional<int> code = int_of(report, "exit_code");
    out += fmt::format(
        "<tr data-node-rank=\"{}\"><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td>"
        "<td>{}</td></tr>",
        rank.value_or(-1), rank ? std::to_string(*rank) : "?", e(node_of(report)),
        e(text_of(report, "host")), code ? std::to_string(*code) : "",
        int_of(report, "restarts").value_or(0), e(text_of(report, "log_dir")));
  }
  out += "</table>";
}

}  // namespace

std::string job_report_html(const std::vector<NodeReport>& nodes) {
  if (nodes.empty()) return report_html(json::object(), {});
  std::vector<std::size_t> order = node_order(nodes);
  std::string out = page_head(fmt::format(
      "gangrun run {}, {} nodes", text_of(nodes[order.front()].report, "run_id"), nodes.size()));
  job_facts(nodes, order, out);
  legend(out);
  out += "<div class=\"scroll\">" + timeline_svg(job_timeline_of(nodes)) + "</div>";
  if (std::optional<std::size_t> root = root_cause_node(nodes, last_attempt(nodes))) {
    root_cause(nodes[*root].report, out, " on " + node_of(nodes[*root].report));
  }
  for (std::size_t i : order) {
    std::string node = node_of(nodes[i].report);
    std::string findings;
    for (const json& attempt : array_of(nodes[i].report, "attempts")) {
      attempt_findings(attempt, findings);
    }
    if (!findings.empty()) {
      out +=
          fmt::format("<section class=\"node-findings\" data-node=\"{}\"><h2>{}</h2>{}</section>",
                      e(node), e(node), findings);
    }
  }
  for (std::size_t i : order)
    workers_table(nodes[i].report, out, " on " + node_of(nodes[i].report));
  out += k_page_end;
  return out;
}

Expected<void> write_job_report_html(const std::string& path,
                                     const std::vector<NodeReport>& nodes) {
  return write_file_atomically(path, job_report_html(nodes));
}

std::string report_html(const json& report, const std::vector<LogActivity>& logs) {
  std::string out = page_head("gangrun run " + text_of(report, "run_id"));
  facts(report, out);
  legend(out);
  out += "<div class=\"scroll\">" + timeline_svg(timeline_of(report, logs)) + "</div>";
  root_cause(report, out);
  for (const json& attempt : array_of(report, "attempts")) attempt_findings(attempt, out);
  workers_table(report, out);
  out += k_page_end;
  return out;
}

Expected<void> write_report_html(const std::string& path, const json& report,
                                 const std::vector<LogActivity>& logs) {
  return write_file_atomically(path, report_html(report, logs));
}

}  // namespace gangrun::report
