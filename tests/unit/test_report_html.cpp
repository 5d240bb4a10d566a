// report.html (report/report_html.hpp, timeline_svg.hpp): drawn from a run
// report's JSON, a fixture here with hostile text in every field a run
// controls, and refreshed from a run directory (launch/run_report_files.hpp).
#include "launch/run_report_files.hpp"
#include "report/html_text.hpp"
#include "report/report_html.hpp"
#include "report/timeline.hpp"
#include "temp_dir.hpp"
#include "timeline_checks.hpp"

#include <catch2/catch.hpp>

#include <sys/stat.h>

#include <algorithm>
#include <fstream>
#include <regex>
#include <sstream>

using namespace gangrun::report;
using gangrun::test::count;
using gangrun::test::lane_of;
using nlohmann::json;

namespace {

// A failed run with a hang, as run_report.cpp writes it: attempt 0 failed
// (rank 1 first, rank 3 blamed) and was restarted; in attempt 1 rank 2 hung
// in load_batch while the others waited in all_reduce, rank 1 was stopped
// from outside, and rank 5 of another node is in the stacks only.
const char* const k_fixture = R"fixture({
  "version": 1, "run_id": "r<1>", "host": "<script>alert(1)</script>", "node": null,
  "entrypoint": "train.py \"--name=]]>\" '<b>'", "started_at": "2026-12-02T01:00:00.000Z",
  "ended_at": "2026-12-02T01:00:20.000Z", "exit_code": 5, "restarts": 1,
  "plan": {"nnodes": 1, "node_rank": 0, "options": {"failure_window": {"value": "1.5"}}},
  "root_cause": {"rank": 2, "attempt": 1, "ended": "stopped by gangrun (SIGTERM)",
                 "error": {"message": "</pre><script>x()</script>", "traceback": null}},
  "attempts": [
    {"attempt": 0, "root_cause": {"rank": 3, "local_rank": 3},
     "first_failure": {"rank": 1, "local_rank": 1},
     "blame": "rank 3 never reached the collective; ranks 1, 2 timed out waiting",
     "workers": [
       {"rank": 0, "local_rank": 0, "pid": 100, "exit_code": 0, "signal": null,
        "started_at": "2026-12-02T01:00:00.100Z", "ended_at": "2026-12-02T01:00:04.000Z",
        "stopped_by_gangrun": false, "ended": "exited with 0"},
       {"rank": 1, "local_rank": 1, "pid": 101, "exit_code": 1, "signal": null,
        "started_at": "2026-12-02T01:00:00.100Z", "ended_at": "2026-12-02T01:00:03.000Z",
        "stopped_by_gangrun": false, "ended": "exited with 1"},
       {"rank": 2, "local_rank": 2, "pid": 102, "exit_code": 1, "signal": null,
        "started_at": "2026-12-02T01:00:00.100Z", "ended_at": "2026-12-02T01:00:03.500Z",
        "stopped_by_gangrun": false, "ended": "exited with 1"},
       {"rank": 3, "local_rank": 3, "pid": 103, "exit_code": null, "signal": "SIGTERM",
        "started_at": "2026-12-02T01:00:00.100Z", "ended_at": "2026-12-02T01:00:05.000Z",
        "stopped_by_gangrun": true, "ended": "stopped by gangrun (SIGTERM)"}]},
    {"attempt": 1, "root_cause": {"rank": 2, "local_rank": 2}, "first_failure": null,
     "blame": null,
     "hang": {"timeout_s": 5, "silent_for_s": 5.5, "reported_at": "2026-12-02T01:00:18.000Z",
              "action": "stop", "stopped": [1],
              "stacks": {"summary": ["rank 2 (<host>, pid 202): load_batch <- train"],
                         "groups": [[2], [0, 1, 3, 5]],
                         "ranks": [
                {"rank": 2, "host": "<host>", "pid": 202, "unavailable": null, "stopped": null,
                 "threads": [{"name": "MainThread", "thread_id": 202, "active": true,
                              "frames": [{"function": "load_batch\u00e9</title><script>",
                                          "file": "a\"b.py", "line": 7},
                                         {"function": "train", "file": "t.py", "line": 9}]}]},
                {"rank": 1, "host": "<host>", "pid": 201, "unavailable": null,
                 "stopped": {"state": "T", "text": "stopped"}, "threads": []},
                {"rank": 5, "host": "node1", "pid": 305, "unavailable": null, "stopped": null,
                 "threads": [{"name": "MainThread", "thread_id": 305, "active": false,
                              "frames": [{"function": "all_reduce", "file": "d.py", "line": 1}]}]}]}},
     "straggler_watch": {"samples": 12, "stragglers": [3],
                         "ranks": [{"rank": 3, "host": "h", "samples": 12, "waiting_pct": 8}]},
     "workers": [
       {"rank": 0, "local_rank": 0, "pid": 200, "exit_code": null, "signal": "SIGTERM",
        "started_at": "2026-12-02T01:00:06.000Z", "ended_at": "2026-12-02T01:00:18.500Z",
        "stopped_by_gangrun": true, "ended": "stopped by gangrun (SIGTERM)"},
       {"rank": 1, "local_rank": 1, "pid": 201, "exit_code": null, "signal": "SIGTERM",
        "started_at": "2026-12-02T01:00:06.000Z", "ended_at": "2026-12-02T01:00:18.500Z",
        "stopped_by_gangrun": true, "ended": "stopped by gangrun (SIGTERM)"},
       {"rank": 2, "local_rank": 2, "pid": 202, "exit_code": null, "signal": "SIGTERM",
        "started_at": "2026-12-02T01:00:06.000Z", "ended_at": "2026-12-02T01:00:18.500Z",
        "stopped_by_gangrun": true, "ended": "stopped by gangrun (SIGTERM)"},
       {"rank": 3, "local_rank": 3, "pid": 203, "exit_code": null, "signal": "SIGTERM",
        "started_at": "2026-12-02T01:00:06.000Z", "ended_at": "2026-12-02T01:00:18.500Z",
        "stopped_by_gangrun": true, "ended": "stopped by gangrun (SIGTERM)"}]}]
})fixture";

json fixture() { return json::parse(k_fixture); }

std::string lower(std::string text) {
  std::transform(text.begin(), text.end(), text.begin(),
                 [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  return text;
}

// The opening tag of the lane of rank.
std::string lane_tag(const std::string& page, int rank) {
  std::string start = "<g class=\"lane\" data-rank=\"" + std::to_string(rank) + "\"";
  std::size_t at = page.find(start);
  REQUIRE(at != std::string::npos);
  return page.substr(at, page.find('>', at) - at + 1);
}

}  // namespace

TEST_CASE("html_escape leaves no markup, no invalid UTF-8 and no control characters",
          "[report][html]") {
  CHECK(html_escape("<script>alert(\"x\")</script>") ==
        "&lt;script&gt;alert(&quot;x&quot;)&lt;/script&gt;");
  CHECK(html_escape("a ]]> b & 'c'") == "a ]]&gt; b &amp; &#39;c&#39;");
  CHECK(html_escape("caf\xC3\xA9 \xE2\x9C\x93 \xF0\x9F\x98\x80") ==
        "caf\xC3\xA9 \xE2\x9C\x93 \xF0\x9F\x98\x80");
  const std::string replacement = "\xEF\xBF\xBD";
  CHECK(html_escape("\xFF\xFE") == replacement + replacement);
  CHECK(html_escape("\xC0\xAF") == replacement + replacement);                    // overlong '/'
  CHECK(html_escape("\xED\xA0\x80") == replacement + replacement + replacement);  // a surrogate
  CHECK(html_escape("cut \xE2\x9C") == "cut " + replacement + replacement);
  CHECK(html_escape("\x1B[2J\r\x7F") == replacement + "[2J" + replacement + replacement);
  CHECK(html_escape(std::string("a\0b", 3)) == "a" + replacement + "b");
  CHECK(html_escape("tab\tnew\nline") == "tab\tnew\nline");
}

TEST_CASE("report times are read back as format_time writes them", "[report][html]") {
  CHECK(parse_report_time("1970-01-01T00:00:01.250Z") == 1.25);
  CHECK(parse_report_time("2026-12-02T01:00:00.000Z") == 1796173200.0);
  CHECK_FALSE(parse_report_time("2026-12-02 01:00:00").has_value());
  CHECK_FALSE(parse_report_time("2026-12-02T01:00:00.000Zjunk").has_value());
  CHECK_FALSE(parse_report_time("").has_value());
}

TEST_CASE("the timeline has a lane per rank by node, each attempt a run, the marks in place",
          "[report][html]") {
  std::vector<LogActivity> logs = {
      {.attempt = 1, .local_rank = 2, .last_write_s = 1796173212.0, .bytes = 2048}};
  Timeline timeline = timeline_of(fixture(), logs);
  REQUIRE(timeline.nodes == std::vector<std::string>{"<script>alert(1)</script>", "node1"});
  REQUIRE(timeline.lanes.size() == 5);
  CHECK(timeline.span_s == Approx(20.0));
  for (int rank = 0; rank < 4; ++rank) {
    CHECK(timeline.lanes[static_cast<std::size_t>(rank)].rank == rank);
    CHECK(lane_of(timeline, rank).runs.size() == 2);
  }
  const Lane& hung = lane_of(timeline, 2);
  CHECK(hung.runs[1].hung);
  CHECK(hung.runs[1].root_cause);
  CHECK_FALSE(hung.runs[0].root_cause);
  CHECK(hung.runs[1].stack_line == "load_batch\u00e9</title><script> <- train");
  REQUIRE(hung.runs[1].last_output_s);
  CHECK(*hung.runs[1].last_output_s == Approx(12.0));
  CHECK(hung.runs[1].output_bytes == 2048);
  CHECK(lane_of(timeline, 3).runs[0].root_cause);
  CHECK(lane_of(timeline, 3).runs[0].outcome == "stopped");
  CHECK(lane_of(timeline, 3).runs[1].straggler);
  CHECK(lane_of(timeline, 1).runs[0].first_failure);
  CHECK(lane_of(timeline, 1).runs[1].stopped);
  CHECK_FALSE(lane_of(timeline, 0).any(&RankRun::hung));

  const Lane& other = lane_of(timeline, 5);
  CHECK(other.node == "node1");
  REQUIRE(other.runs.size() == 1);
  CHECK_FALSE(other.runs[0].drawn);

  REQUIRE(timeline.attempt_starts_s.size() == 1);
  CHECK(timeline.attempt_starts_s[0] == Approx(6.0));
  REQUIRE(timeline.bands.size() == 2);
  CHECK(timeline.bands[0].kind == Band::Kind::failure_window);
  CHECK(timeline.bands[0].start_s == Approx(3.0));  // rank 1's exit
  CHECK(timeline.bands[0].end_s == Approx(4.5));    // --failure_window 1.5
  CHECK(timeline.bands[1].kind == Band::Kind::hang);
  CHECK(timeline.bands[1].start_s == Approx(12.5));
  CHECK(timeline.bands[1].end_s == Approx(18.0));
}

TEST_CASE("report.html escapes the run's text and marks the lanes for a reader", "[report][html]") {
  std::string page = report_html(fixture(), {});
  INFO(page.substr(0, 3000));
  CHECK(lower(page).find("<script") == std::string::npos);
  CHECK(page.find("]]>") == std::string::npos);
  CHECK(page.find("&lt;script&gt;alert(1)&lt;/script&gt;") != std::string::npos);
  CHECK(page.find("load_batch\u00e9&lt;/title&gt;&lt;script&gt;") != std::string::npos);
  CHECK(page.find("&quot;--name=]]&gt;&quot; &#39;&lt;b&gt;&#39;") != std::string::npos);
  // Self-contained: nothing to fetch.
  CHECK_FALSE(std::regex_search(page, std::regex(R"((src|href)\s*=)", std::regex::icase)));
  CHECK(page.find("http://") == std::string::npos);
  CHECK(page.find("https://") == std::string::npos);
  CHECK(page.find("default-src 'none'") != std::string::npos);

  CHECK(count(page, "<g class=\"lane\"") == 5);
  CHECK(count(page, "<g class=\"node\"") == 2);
  CHECK(lane_tag(page, 2).find("data-hung=\"true\"") != std::string::npos);
  CHECK(lane_tag(page, 2).find("data-root-cause=\"true\"") != std::string::npos);
  CHECK(lane_tag(page, 1).find("data-stopped=\"true\"") != std::string::npos);
  CHECK(lane_tag(page, 3).find("data-straggler=\"true\"") != std::string::npos);
  CHECK(lane_tag(page, 0).find("data-hung") == std::string::npos);
  CHECK(lane_tag(page, 5).find("data-node=\"node1\"") != std::string::npos);
  CHECK(count(page, "class=\"band hang\"") == 1);
  CHECK(count(page, "class=\"band failure-window\"") == 1);
  CHECK(count(page, "<details class=\"rank-stack\"") == 3);
  CHECK(page.find("rank 3 never reached the collective") != std::string::npos);
}

TEST_CASE("a report that is not ours draws what it can and never throws", "[report][html]") {
  for (const char* text :
       {R"({})", R"({"attempts": 3})", R"({"attempts": [{"workers": [{"rank": "x"}, 7]}]})",
        R"({"attempts": [{"workers": [{"rank": 1, "started_at": 5}, {"rank": 1}]}],
            "started_at": "bad"})",
        R"({"attempts": [{"hang": {"stacks": {"groups": "x", "ranks": [{"rank": 99999999999}]}},
                          "workers": [{"rank": 0, "local_rank": 0}]}]})"}) {
    INFO(text);
    std::string page;
    REQUIRE_NOTHROW(page = report_html(json::parse(text), {}));
    CHECK(page.find("</html>") != std::string::npos);
  }
}

TEST_CASE("gangrun report draws report.html again from a run directory's report.json",
          "[report][html]") {
  gangrun::test::TempDir dir;
  auto missing = gangrun::launch::refresh_report_page(dir / "nowhere");
  REQUIRE_FALSE(missing);
  CHECK(missing.error().message().find(dir / "nowhere") != std::string::npos);
  CHECK(missing.error().message().find("No such file or directory") != std::string::npos);

  std::string file = dir.write("plain", "x");
  auto not_a_directory = gangrun::launch::refresh_report_page(file);
  REQUIRE_FALSE(not_a_directory);
  CHECK(not_a_directory.error().message().find("not a directory") != std::string::npos);

  auto empty = gangrun::launch::refresh_report_page(dir.path().string());
  REQUIRE_FALSE(empty);
  CHECK(empty.error().message().find("has no report.json") != std::string::npos);

  dir.write("report.json", "{\"not\": \"a report\"");
  auto broken = gangrun::launch::refresh_report_page(dir.path().string());
  REQUIRE_FALSE(broken);
  CHECK(broken.error().message().find("is not a gangrun run report") != std::string::npos);

  dir.write("report.json", k_fixture);
  dir.write("attempt_1/2/stdout.log", "step 1\n");
  auto page = gangrun::launch::refresh_report_page(dir.path().string());
  REQUIRE(page);
  CHECK(*page == dir / "report.html");
  std::ifstream in(*page);
  std::stringstream text;
  text << in.rdbuf();
  CHECK(count(text.str(), "<g class=\"lane\"") == 5);
  CHECK(count(text.str(), "class=\"last-output\"") == 1);  // rank 2's log, attempt 1
}
