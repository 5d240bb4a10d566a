// One page of a job of several nodes (report/job_reports.hpp,
// timeline.hpp's job_timeline_of, report_html.hpp's job_report_html): each
// node's report as run_report.cpp writes it, merged; and the checks of
// `gangrun report RUN_DIR RUN_DIR ...` on its run directories
// (launch/run_report_files.hpp).
#include "launch/run_report_files.hpp"
#include "report/job_reports.hpp"
#include "report/report_html.hpp"
#include "report/timeline.hpp"
#include "temp_dir.hpp"
#include "timeline_checks.hpp"

#include <catch2/catch.hpp>
#include <fmt/format.h>

#include <algorithm>
#include <fstream>
#include <sstream>

using namespace gangrun::report;
using gangrun::test::count;
using gangrun::test::lane_of;
using nlohmann::json;

namespace {

json worker(int rank, int local_rank, const std::string& start, const std::string& end,
            std::optional<int> code) {
  return {{"rank", rank},
          {"local_rank", local_rank},
          {"pid", 100 + rank},
          {"exit_code", code ? json(*code) : json()},
          {"signal", code ? json() : json("SIGTERM")},
          {"started_at", start},
          {"ended_at", end},
          {"stopped_by_gangrun", !code},
          {"ended", code ? fmt::format("exited with {}", *code) : "stopped by gangrun (SIGTERM)"}};
}

// Node node_rank of a job of nnodes nodes, ranks 2*node_rank and
// 2*node_rank+1, started at start_s seconds past 01:00:00.
json node_report(int node_rank, int nnodes, int start_s) {
  auto at = [](int seconds) { return fmt::format("2026-12-02T01:00:{:02d}.000Z", seconds); };
  int first = 2 * node_rank;
  return {
      {"version", 1},
      {"run_id", "job7"},
      {"host", "vm"},
      {"node", fmt::format("node {} (vm, 10.0.0.{})", node_rank, node_rank + 1)},
      {"started_at", at(start_s)},
      {"ended_at", at(start_s + 10)},
      {"exit_code", 4},
      {"restarts", 0},
      {"plan", {{"nnodes", nnodes}, {"node_rank", node_rank}}},
      {"job", {{"exit_code", 4}, {"message", "rank 3 failed"}, {"root_cause_here", false}}},
      {"root_cause", nullptr},
      {"attempts",
       json::array({{{"attempt", 0},
                     {"root_cause", nullptr},
                     {"first_failure", nullptr},
                     {"workers",
                      json::array({worker(first, 0, at(start_s), at(start_s + 9), {}),
                                   worker(first + 1, 1, at(start_s), at(start_s + 9), {})})}}})}};
}

// Node 1's rank 3 fails first and is the job's root cause; node 0 read
// every rank's stack at a hang, rank 3's among them.
std::vector<NodeReport> two_nodes() {
  json node0 = node_report(0, 2, 2);
  json node1 = node_report(1, 2, 1);
  json& failed = node1["attempts"][0]["workers"][1];
  failed["exit_code"] = 4;
  failed["ended_at"] = "2026-12-02T01:00:05.000Z";
  node1["attempts"][0]["root_cause"] = {{"rank", 3}, {"local_rank", 1}};
  node1["attempts"][0]["first_failure"] = {{"rank", 3}, {"local_rank", 1}};
  node1["root_cause"] = failed;
  node1["root_cause"]["attempt"] = 0;
  node1["job"]["root_cause_here"] = true;
  // Node 0 stopped its ranks when told, and blames its own first "failure".
  node0["attempts"][0]["root_cause"] = {{"rank", 0}, {"local_rank", 0}};
  node0["root_cause"] = node0["attempts"][0]["workers"][0];
  node0["attempts"][0]["hang"] = {
      {"timeout_s", 3},
      {"silent_for_s", 3.5},
      {"reported_at", "2026-12-02T01:00:08.000Z"},
      {"action", "stop"},
      {"stopped", json::array()},
      {"stacks",
       {{"groups", {{3}, {0, 1, 2}}},
        {"ranks",
         {{{"rank", 3},
           {"host", "vm"},
           {"pid", 103},
           {"threads",
            {{{"name", "MainThread"},
              {"thread_id", 103},
              {"frames", {{{"function", "load_batch"}, {"file", "t.py"}, {"line", 3}}}}}}}},
          {{"rank", 7},
           {"host", "far"},
           {"pid", 107},
           {"threads",
            {{{"name", "MainThread"},
              {"thread_id", 107},
              {"frames", {{{"function", "all_reduce"}, {"file", "d.py"}, {"line", 1}}}}}}}}}}}}};
  // Given node 1 first: the page orders by node rank, not by the arguments.
  return {{node1, {}}, {node0, {}}};
}

std::string read(const std::string& path) {
  std::ifstream in(path);
  std::stringstream text;
  text << in.rdbuf();
  return text.str();
}

}  // namespace

TEST_CASE("job page: one origin, the earliest start among the nodes' reports",
          "[report][job-page]") {
  Timeline timeline = job_timeline_of(two_nodes());
  // Node 1 started at :01, node 0 at :02: node 0's ranks start a second in.
  CHECK(lane_of(timeline, 2).runs[0].start_s == Approx(0.0));
  CHECK(lane_of(timeline, 0).runs[0].start_s == Approx(1.0));
  CHECK(lane_of(timeline, 3).runs[0].end_s == Approx(4.0));
  CHECK(timeline.span_s == Approx(11.0));  // node 0's end, :12
  REQUIRE(timeline.bands.size() == 2);     // node 0's, then node 1's
  CHECK(timeline.bands[0].kind == Band::Kind::hang);
  CHECK(timeline.bands[0].end_s == Approx(7.0));  // read at :08
  CHECK(timeline.bands[1].kind == Band::Kind::failure_window);
  CHECK(timeline.bands[1].start_s == Approx(4.0));  // rank 3's end
}

TEST_CASE("job page: lanes grouped by node in node-rank order, whatever order they came in",
          "[report][job-page]") {
  Timeline timeline = job_timeline_of(two_nodes());
  REQUIRE(timeline.nodes.size() == 3);
  CHECK(timeline.nodes[0] == "node 0 (vm, 10.0.0.1)");
  CHECK(timeline.nodes[1] == "node 1 (vm, 10.0.0.2)");
  CHECK(timeline.nodes[2] == "far");  // rank 7's node gave no report
  std::vector<int> ranks;
  for (const Lane& lane : timeline.lanes) ranks.push_back(lane.rank);
  CHECK(ranks == std::vector<int>{0, 1, 2, 3, 7});
  CHECK(lane_of(timeline, 1).node == timeline.nodes[0]);
  CHECK(lane_of(timeline, 2).node == timeline.nodes[1]);
}

TEST_CASE("job page: a stack read on one node lands on its rank's own lane of another",
          "[report][job-page]") {
  Timeline timeline = job_timeline_of(two_nodes());
  const Lane& hung = lane_of(timeline, 3);
  REQUIRE(hung.runs.size() == 1);
  CHECK(hung.runs[0].drawn);
  CHECK(hung.runs[0].hung);
  CHECK(hung.runs[0].stack_line == "load_batch");
  CHECK_FALSE(lane_of(timeline, 2).any(&RankRun::hung));
  // A rank whose node's report is not given keeps a lane of its stack only.
  const Lane& far = lane_of(timeline, 7);
  REQUIRE(far.runs.size() == 1);
  CHECK_FALSE(far.runs[0].drawn);
  CHECK(far.runs[0].stack_line == "all_reduce");
}

TEST_CASE("job page: the root cause is the one the reports agree on, else the earliest failure",
          "[report][job-page]") {
  std::vector<NodeReport> nodes = two_nodes();
  CHECK(root_cause_node(nodes, 0) == 0u);  // node 1, given first
  Timeline timeline = job_timeline_of(nodes);
  CHECK(lane_of(timeline, 3).any(&RankRun::root_cause));
  CHECK_FALSE(lane_of(timeline, 0).any(&RankRun::root_cause));  // node 0's own, not the job's

  // Without the coordinator's word, the root cause that ended first.
  nodes[0].report["job"]["root_cause_here"] = false;
  CHECK(root_cause_node(nodes, 0) == 0u);  // :05 before node 0's :11
  nodes[1].report["attempts"][0]["workers"][0]["ended_at"] = "2026-12-02T01:00:03.000Z";
  CHECK(root_cause_node(nodes, 0) == 1u);
  CHECK(root_cause_node(nodes, 1) == std::nullopt);  // no attempt 1

  std::string page = job_report_html(two_nodes());
  CHECK(page.find("root cause: rank 3 on node 1 (vm, 10.0.0.2) (attempt 0)") != std::string::npos);
  CHECK(count(page, "data-root-cause=\"true\"") == 1);
}

TEST_CASE("job page: the node ranks the plan has and no report is of are named",
          "[report][job-page]") {
  std::vector<NodeReport> nodes = {{node_report(1, 4, 1), {}}, {node_report(3, 4, 1), {}}};
  CHECK(missing_node_ranks(nodes) == std::vector<int>{0, 2});
  CHECK(missing_node_ranks(two_nodes()).empty());
  std::string page = job_report_html(nodes);
  CHECK(page.find("<dt>missing nodes</dt><dd>node ranks 0, 2:") != std::string::npos);
  CHECK(count(page, "<tr data-node-rank=") == 2);
  CHECK(job_report_html(two_nodes()).find("missing nodes") == std::string::npos);
}

TEST_CASE("job page: run directories of one job, each node once, and a page whole or not at all",
          "[report][job-page]") {
  gangrun::test::TempDir dir;
  std::vector<NodeReport> nodes = two_nodes();
  dir.write("logs/job7_b/report.json", nodes[0].report.dump());
  dir.write("logs/job7_a/report.json", nodes[1].report.dump());
  std::string dir0 = dir / "logs/job7_a";
  std::string dir1 = dir / "logs/job7_b";

  auto page = gangrun::launch::write_job_report_page({dir0, dir1 + "/"});
  REQUIRE(page);
  CHECK(*page == dir / "logs/report-job7.html");
  CHECK(count(read(*page), "<g class=\"lane\"") == 5);

  auto twice = gangrun::launch::write_job_report_page({dir0, dir0 + "/"});
  REQUIRE_FALSE(twice);
  CHECK(twice.error().message() == "report: " + dir0 + " and " + dir0 +
                                       "/ are both of 'node 0 (vm, 10.0.0.1)': give each node's "
                                       "run directory once");

  auto missing_output = gangrun::launch::write_job_report_page({dir0, dir1}, dir / "no/page.html");
  REQUIRE_FALSE(missing_output);
  CHECK(missing_output.error().message().find("its directory " + dir / "no" + " does not exist") !=
        std::string::npos);

  json other = nodes[0].report;
  other["run_id"] = "job8\x1b[2J";
  dir.write("logs/job8_b/report.json", other.dump());
  auto mixed = gangrun::launch::write_job_report_page({dir0, dir / "logs/job8_b"});
  REQUIRE_FALSE(mixed);
  CHECK(mixed.error().message() == "report: " + dir0 + " is of run 'job7' and " +
                                       dir / "logs/job8_b" +
                                       " of run 'job8\\x1b[2J': give the run directories of one "
                                       "job's nodes");

  auto no_report = gangrun::launch::write_job_report_page({dir0, dir / "logs"});
  REQUIRE_FALSE(no_report);
  CHECK(no_report.error().message().find("has no report.json") != std::string::npos);
}
