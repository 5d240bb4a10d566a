// gangrun top's frame (layout in 80 columns, truncation, which ranks come
// first when they do not fit), its CPU% arithmetic, and the bounds on a
// node's snapshot as read back from the store.
#include "commands/top_frame.hpp"
#include "commands/top_of_nodes.hpp"

#include <catch2/catch.hpp>
#include <nlohmann/json.hpp>

#include <algorithm>

using namespace gangrun;
using namespace gangrun::commands;

namespace {

observe::RankStatus rank_of(int rank, long pid, double cpu_seconds) {
  observe::RankStatus status;
  status.rank = rank;
  status.local_rank = rank % 2;
  status.pid = pid;
  status.state = observe::RankState::running;
  status.cpu_seconds = cpu_seconds;
  status.rss_kib = 300 * 1024;
  status.seconds_since_output = 0.5;
  return status;
}

observe::NodeStatus node_of(const std::string& name, int first_rank, int ranks, double at) {
  observe::NodeStatus node;
  node.run_id = "job7";
  node.node = name;
  node.agent_state = "running";
  node.collected_at = at;
  for (int i = 0; i < ranks; ++i) {
    node.ranks.push_back(rank_of(first_rank + i, 1000 + first_rank + i, 10.0 + i));
  }
  return node;
}

bool fits(const std::vector<std::string>& lines, std::size_t width) {
  return std::all_of(lines.begin(), lines.end(), [&](const std::string& line) {
    return line.size() <= width &&
           std::all_of(line.begin(), line.end(), [](char c) { return c >= 0x20 && c <= 0x7e; });
  });
}

// The rows' first column (the rank), below the three header lines.
std::vector<std::string> first_cells(const std::vector<std::string>& lines) {
  std::vector<std::string> cells;
  for (std::size_t i = 3; i < lines.size(); ++i) {
    std::string line = lines[i];
    line.erase(0, line.find_first_not_of(' '));
    cells.push_back(line.substr(0, line.find(' ')));
  }
  return cells;
}

}  // namespace

TEST_CASE("top cpu percent is the rate of cpu seconds between two snapshots of one process",
          "[top]") {
  observe::RankStatus before = rank_of(0, 42, 10.0);
  observe::RankStatus now = rank_of(0, 42, 11.5);
  CHECK(cpu_percent(before, 100.0, now, 102.0).value() == Approx(75.0));
  // Two cores' worth.
  now.cpu_seconds = 14.0;
  CHECK(cpu_percent(before, 100.0, now, 102.0).value() == Approx(200.0));
  // Another process at the same rank (a restart), no time passed, or time going back: none.
  observe::RankStatus restarted = rank_of(0, 43, 0.2);
  CHECK_FALSE(cpu_percent(before, 100.0, restarted, 101.0));
  CHECK_FALSE(cpu_percent(before, 100.0, now, 100.0));
  CHECK_FALSE(cpu_percent(before, 100.0, now, 99.0));
  // A smaller CPU time is not a negative rate.
  now.cpu_seconds = 9.0;
  CHECK(cpu_percent(before, 100.0, now, 101.0).value() == Approx(0.0));
}

TEST_CASE("top frame fits 80 columns with every column and shows the marks", "[top]") {
  TopView before{.run_id = "job7", .nodes = {node_of("alpha", 0, 2, 100.0)}, .unanswered = {}};
  TopView now{.run_id = "job7",
              .nodes = {node_of("alpha", 0, 2, 101.0), node_of("beta", 2, 2, 101.0)},
              .unanswered = {}};
  now.nodes[0].ranks[0].cpu_seconds = 10.5;  // 50% over the second
  now.nodes[1].ranks[0].hung = true;
  now.nodes[1].ranks[1].slow = true;
  now.nodes[1].ranks[1].steps_per_second = 1.25;
  now.nodes[1].ranks[1].gpu_utilization = 87;
  now.nodes[1].ranks[1].gpu_memory_bytes = 2ULL << 30;
  now.nodes[1].restarts = 1;
  auto lines = frame_lines(now, &before, {.width = 80, .height = 24}, "12:00:00");
  REQUIRE(lines.size() == 7);
  CHECK(fits(lines, 80));
  CHECK(lines[0].find("run job7") != std::string::npos);
  CHECK(lines[1].find("1 hung, 0 stopped, 1 slow") != std::string::npos);
  CHECK(lines[2].find("GPU%") != std::string::npos);
  CHECK(first_cells(lines) == std::vector<std::string>{"0", "1", "2", "3"});
  CHECK(lines[3].find(" 50 ") != std::string::npos);  // CPU%
  CHECK(lines[5].find("HUNG") != std::string::npos);
  CHECK(lines[6].find("SLOW") != std::string::npos);
  CHECK(lines[6].find("1.25") != std::string::npos);
  CHECK(lines[6].find(" 87 ") != std::string::npos);
  CHECK(lines[6].find("2.0G") != std::string::npos);
  // Without an earlier frame CPU% is "-"; without GPU readings no GPU columns.
  now.nodes[1].ranks[1].gpu_utilization.reset();
  now.nodes[1].ranks[1].gpu_memory_bytes.reset();
  auto first = frame_lines(now, nullptr, {.width = 80, .height = 24}, "12:00:00");
  CHECK(first[2].find("GPU%") == std::string::npos);
  CHECK(fits(first, 80));
  CHECK(first[0].find("(q quits)") != std::string::npos);
  // --once prints a frame that no key quits.
  auto printed =
      frame_lines(now, nullptr, {.width = 80, .height = 0, .interactive = false}, "12:00:00");
  CHECK(printed[0].find("q quits") == std::string::npos);
}

TEST_CASE("top frame cuts long node names and narrow terminals", "[top]") {
  TopView now{.run_id = "job7",
              .nodes = {node_of(std::string(200, 'n') + "\x1b[2J\xc3\xa9", 0, 1, 1.0)},
              .unanswered = {"node 1 (" + std::string(300, 'h') + ")"}};
  now.nodes[0].ranks[0].state = observe::RankState::stopped;
  now.nodes[0].ranks[0].hung = true;
  for (int width : {80, 60, 40}) {
    auto lines = frame_lines(now, nullptr, {.width = width, .height = 24}, "12:00:00");
    CHECK(fits(lines, static_cast<std::size_t>(width)));
    CHECK(lines[3].find('~') != std::string::npos);  // the node's name, cut
  }
  auto wide = frame_lines(now, nullptr, {.width = 80, .height = 24}, "12:00:00");
  CHECK(wide[3].find("HUNG STOP") != std::string::npos);
  // All three marks fit 80 columns beside a long node name.
  now.nodes[0].ranks[0].slow = true;
  auto all_marks = frame_lines(now, nullptr, {.width = 80, .height = 24}, "12:00:00");
  CHECK(fits(all_marks, 80));
  CHECK(all_marks[3].find("HUNG STOP SLOW") != std::string::npos);
}

TEST_CASE("top frame with more ranks than rows shows the marked ranks first and counts the rest",
          "[top]") {
  TopView now{.run_id = "job7", .nodes = {node_of("alpha", 0, 40, 1.0)}, .unanswered = {}};
  now.nodes[0].ranks[30].slow = true;
  now.nodes[0].ranks[20].state = observe::RankState::stopped;
  now.nodes[0].ranks[35].hung = true;
  auto lines = frame_lines(now, nullptr, {.width = 80, .height = 10}, "12:00:00");
  REQUIRE(lines.size() == 10);
  CHECK(fits(lines, 80));
  auto cells = first_cells(lines);
  CHECK(std::vector<std::string>(cells.begin(), cells.begin() + 6) ==
        std::vector<std::string>{"35", "20", "30", "0", "1", "2"});
  CHECK(lines.back().find("34 more ranks not shown") != std::string::npos);
  // With no limit (a pipe), every rank in rank order.
  auto all = frame_lines(now, nullptr, {.width = 80, .height = 0}, "12:00:00");
  CHECK(all.size() == 43);
  CHECK(first_cells(all).front() == "0");
}

TEST_CASE("top short forms of sizes and ages", "[top]") {
  CHECK(size_text(512) == "512B");
  CHECK(size_text(300.0 * 1024 * 1024) == "300M");
  CHECK(size_text(1.5 * 1024 * 1024 * 1024) == "1.5G");
  CHECK(age_text(0.42) == "0.4s");
  CHECK(age_text(42) == "42s");
  CHECK(age_text(720) == "12m");
  CHECK(age_text(3 * 3600) == "3h");
  CHECK(age_text(-1) == "-");
}

TEST_CASE("top reads a node's snapshot only within bounds", "[top]") {
  observe::NodeStatus node = node_of("alpha", 0, 2, 1700000000.0);
  nlohmann::json good = observe::to_json(node);
  auto read = status_from_answer(good.dump());
  REQUIRE(read);
  CHECK(read->ranks.size() == 2);

  // Control characters come back escaped, never raw.
  nlohmann::json escaped = good;
  escaped["node"] = "evil\x1b[2Jnode";
  auto shown = status_from_answer(escaped.dump());
  REQUIRE(shown);
  CHECK(shown->node.find('\x1b') == std::string::npos);

  auto refused = [&](const std::function<void(nlohmann::json&)>& change) {
    nlohmann::json bad = good;
    change(bad);
    auto result = status_from_answer(bad.dump());
    return !result && result.error().code() == ErrorCode::store;
  };
  CHECK(refused([](nlohmann::json& j) { j["node"] = std::string(300, 'n'); }));
  CHECK(refused([](nlohmann::json& j) { j["ranks"][0]["rank"] = -1; }));
  CHECK(refused([](nlohmann::json& j) { j["ranks"][0]["cpu_seconds"] = -3.0; }));
  CHECK(refused([](nlohmann::json& j) { j["ranks"][0]["gpu_utilization"] = 101.0; }));
  CHECK(refused([](nlohmann::json& j) { j["ranks"][0]["state"] = "dancing"; }));
  CHECK(refused([](nlohmann::json& j) { j["ranks"][0]["pid"] = "42"; }));
  CHECK(refused([](nlohmann::json& j) { j.erase("ranks"); }));
  CHECK(refused([](nlohmann::json& j) { j["restarts"] = -1; }));
  CHECK_FALSE(status_from_answer("[1, 2]"));
  CHECK_FALSE(status_from_answer("not json"));
  CHECK_FALSE(status_from_answer(std::string(k_max_status_bytes + 1, ' ')));
}
