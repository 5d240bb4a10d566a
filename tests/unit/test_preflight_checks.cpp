// gangrun preflight's verdicts on written facts (preflight/checks.hpp): what
// passes, what warns and what fails, where, and the fix each names.
#include "preflight/checks.hpp"
#include "preflight/report_text.hpp"

#include <catch2/catch.hpp>

#include <algorithm>

using namespace gangrun::preflight;
using nlohmann::json;

namespace {

constexpr double k_gib = 1024.0 * 1024 * 1024;

// The facts of one node's first worker, healthy.
json leader(int rank, int node_rank, const std::string& host) {
  return {{"rank", rank},
          {"local_rank", 0},
          {"node_rank", node_rank},
          {"host", host},
          {"masks", json::object()},
          {"torch", {{"version", "2.13.0"}, {"cuda", nullptr}, {"cuda_devices", 0}}},
          {"python", {{"version", "3.11.2"}, {"executable", "/usr/bin/python3"}}},
          {"log_dir", {{"path", "/logs"}, {"size", 100 * k_gib}, {"free", 50 * k_gib}}},
          {"shm", {{"path", "/dev/shm"}, {"size", 16 * k_gib}, {"free", 16 * k_gib}}},
          {"open_files", {{"soft", 65536}, {"hard", 65536}}},
          {"memlock", {{"soft", nullptr}, {"hard", nullptr}}},
          {"variables", {{"NCCL_DEBUG", "WARN"}}},
          {"node", {{"kind", "cpu"}, {"devices", 0}}}};
}

// A gang of NODES nodes, one rank each, whose collectives ran.
json gang(int nodes) {
  json facts = {{"world_size", nodes},       {"timeout_s", 60},
                {"store", "10.0.0.1:29500"}, {"silent_ranks", json::array()},
                {"ranks", json::array()},    {"collectives", json::array()}};
  for (int node = 0; node < nodes; ++node) {
    facts["ranks"].push_back(leader(node, node, "host" + std::to_string(node)));
    facts["collectives"].push_back({{"backend", "gloo"},
                                    {"bytes", 4 << 20},
                                    {"clock_offset_s", 0.0001},
                                    {"gang", {{"seconds", 0.01}, {"bus_bytes_per_s", 1e9}}},
                                    {"pairs", json::array()}});
  }
  return facts;
}

void add_pair(json& facts, int a, int b, double rate) {
  json pair = {{"ranks", {a, b}}, {"seconds", 0.01}, {"bus_bytes_per_s", rate}};
  facts["collectives"][static_cast<std::size_t>(a)]["pairs"].push_back(pair);
  facts["collectives"][static_cast<std::size_t>(b)]["pairs"].push_back(pair);
}

std::vector<Check> rows_of(const std::vector<Check>& checks, const std::string& name) {
  std::vector<Check> rows;
  std::copy_if(checks.begin(), checks.end(), std::back_inserter(rows),
               [&](const Check& check) { return check.name == name; });
  return rows;
}

Check only_row(const std::vector<Check>& checks, const std::string& name) {
  std::vector<Check> rows = rows_of(checks, name);
  INFO("check " << name);
  REQUIRE(rows.size() == 1);
  return rows.front();
}

}  // namespace

TEST_CASE("healthy nodes pass every check, one row each for all of them", "[preflight]") {
  json facts = gang(3);
  add_pair(facts, 0, 1, 1e9);
  add_pair(facts, 1, 2, 1.1e9);
  add_pair(facts, 2, 0, 0.9e9);
  std::vector<Check> checks = judge(facts);
  CHECK_FALSE(any_failed(checks));
  for (const char* name :
       {"store", "torch", "devices", "log dir", "/dev/shm", "open files", "memlock", "versions",
        "variables", "clock", "all-reduce", "node pairs"}) {
    Check row = only_row(checks, name);
    INFO(name << ": " << row.detail);
    CHECK(row.verdict == Verdict::pass);
    CHECK(row.fix.empty());
  }
  CHECK(only_row(checks, "torch").where == "all 3 nodes");
  CHECK(only_row(checks, "node pairs").detail.find("0-1 1.00 GB/s") != std::string::npos);
  std::string table = checks_table(facts, checks);
  CHECK(table.find("preflight passed: 12 ok, 0 warnings, 0 failed") != std::string::npos);
  CHECK(checks_json(facts, checks)["passed"] == true);
}

TEST_CASE("a node that cannot import torch fails, named, with the interpreter to fix",
          "[preflight]") {
  json facts = gang(2);
  facts["ranks"][1]["torch"] = {{"error", "ModuleNotFoundError: No module named 'torch'"}};
  facts.erase("collectives");
  facts["collectives_skipped"] = "ranks [1] cannot import torch";
  std::vector<Check> checks = judge(facts);
  CHECK(any_failed(checks));
  Check torch = only_row(checks, "torch");
  CHECK(torch.verdict == Verdict::fail);
  CHECK(torch.where == "node 1 (host1)");
  CHECK(torch.fix.find("install torch for /usr/bin/python3") != std::string::npos);
  // Its missing version is the torch check's business, not a difference of versions.
  CHECK(only_row(checks, "versions").verdict == Verdict::pass);
  CHECK(only_row(checks, "all-reduce").verdict == Verdict::skipped);
  CHECK(checks_table(facts, checks).find("torch (cannot import)") != std::string::npos);
}

TEST_CASE("versions that differ are a diff: torch fails, a Python patch level warns",
          "[preflight]") {
  json facts = gang(3);
  facts["ranks"][2]["torch"]["version"] = "1.13.1";
  facts["ranks"][1]["python"]["version"] = "3.11.9";
  std::vector<Check> rows = rows_of(judge(facts), "versions");
  REQUIRE(rows.size() == 2);
  CHECK(rows[0].verdict == Verdict::fail);
  CHECK(rows[0].detail ==
        "torch 1.13.1 on node 2 (host2); 2.13.0 on node 0 (host0), node 1 (host1)");
  CHECK(rows[1].verdict == Verdict::warn);
  CHECK(rows[1].detail.find("Python 3.11.2 on node 0 (host0), node 2 (host2); 3.11.9 on node 1") !=
        std::string::npos);
}

TEST_CASE("variables that differ between nodes are a warning naming each value", "[preflight]") {
  json facts = gang(2);
  facts["ranks"][1]["variables"] = {{"NCCL_DEBUG", "INFO"}, {"NCCL_IB_DISABLE", "1"}};
  Check row = only_row(judge(facts), "variables");
  CHECK(row.verdict == Verdict::warn);
  CHECK(row.detail ==
        "NCCL_DEBUG: 'INFO' on node 1 (host1); 'WARN' on node 0 (host0) | NCCL_IB_DISABLE: '1' "
        "on node 1 (host1); unset on node 0 (host0)");
}

TEST_CASE("ranks that never answered fail the store check", "[preflight]") {
  json facts = gang(2);
  facts["ranks"][1] = nullptr;
  facts["silent_ranks"] = {1};
  Check row = only_row(judge(facts), "store");
  CHECK(row.verdict == Verdict::fail);
  CHECK(row.where == "ranks 1");
  CHECK(row.detail == "1 of 2 ranks sent nothing to the store at 10.0.0.1:29500 within 60 s");
}

TEST_CASE("limits: a full log directory fails, a small /dev/shm and few files warn",
          "[preflight]") {
  json facts = gang(2);
  facts["ranks"][0]["log_dir"]["free"] = 50.0 * 1024 * 1024;
  facts["ranks"][1]["shm"] = {{"path", "/dev/shm"}, {"size", 64.0 * 1024 * 1024}, {"free", 1e6}};
  facts["ranks"][1]["open_files"] = {{"soft", 1024}, {"hard", 4096}};
  std::vector<Check> checks = judge(facts);
  Check log_dir = only_row(checks, "log dir");
  CHECK(log_dir.verdict == Verdict::fail);
  CHECK(log_dir.where == "node 0 (host0)");
  CHECK(log_dir.fix.find("--log-dir") != std::string::npos);
  Check shm = only_row(checks, "/dev/shm");
  CHECK(shm.verdict == Verdict::warn);
  CHECK(shm.where == "node 1 (host1)");
  CHECK(shm.fix.find("--shm-size") != std::string::npos);
  Check files = only_row(checks, "open files");
  CHECK(files.verdict == Verdict::warn);
  CHECK(files.fix.find("ulimit -n 4096") != std::string::npos);
  // memlock matters with accelerators only.
  CHECK(only_row(checks, "memlock").verdict == Verdict::pass);
  facts["ranks"][1]["memlock"] = {{"soft", 65536}, {"hard", 65536}};
  facts["ranks"][1]["node"] = {{"kind", "cuda"}, {"devices", 8}};
  facts["ranks"][1]["torch"]["cuda_devices"] = 8;
  CHECK(only_row(judge(facts), "memlock").verdict == Verdict::warn);
}

TEST_CASE("a CUDA node whose torch sees no GPU fails the devices check", "[preflight]") {
  json facts = gang(1);
  facts["ranks"][0]["node"] = {{"kind", "cuda"}, {"devices", 2}, {"driver", "12.6"}};
  facts["ranks"][0]["masks"] = {{"CUDA_VISIBLE_DEVICES", "0,1"}};
  facts["ranks"][0]["torch"]["cuda"] = nullptr;
  Check row = only_row(judge(facts), "devices");
  CHECK(row.verdict == Verdict::fail);
  CHECK(row.detail.find("2 cuda device(s), driver 12.6; masks: CUDA_VISIBLE_DEVICES=0,1") !=
        std::string::npos);
  CHECK(row.fix.find("CUDA build of torch") != std::string::npos);
}

TEST_CASE("a node much slower than its peers in node pairs is named", "[preflight]") {
  json facts = gang(4);
  add_pair(facts, 0, 1, 1.0e9);
  add_pair(facts, 2, 3, 0.2e9);
  add_pair(facts, 1, 2, 0.25e9);
  add_pair(facts, 3, 0, 1.1e9);
  Check row = only_row(judge(facts), "node pairs");
  CHECK(row.verdict == Verdict::warn);
  CHECK(row.detail.find("node 2 (host2): 0.25 GB/s at best") != std::string::npos);
  CHECK(row.detail.find("node 3") == std::string::npos);
  CHECK(row.fix.find("much slower") != std::string::npos);

  // Three nodes, the third slow: both its pairs are slow, and the median node's best is not.
  json three = gang(3);
  add_pair(three, 0, 1, 1.0e9);
  add_pair(three, 1, 2, 0.1e9);
  add_pair(three, 2, 0, 0.1e9);
  Check of_three = only_row(judge(three), "node pairs");
  CHECK(of_three.verdict == Verdict::warn);
  CHECK(of_three.detail.find(
            "node 2 (host2): 0.10 GB/s at best (the median node's best 1.00 GB/s)") == 0);

  // With two nodes there is no majority to compare with: nobody is named.
  json two = gang(2);
  add_pair(two, 0, 1, 0.01e9);
  CHECK(only_row(judge(two), "node pairs").verdict == Verdict::pass);
}

TEST_CASE("a clock far from the head's warns; a failed collective fails", "[preflight]") {
  json facts = gang(3);
  facts["collectives"][2]["clock_offset_s"] = -2.5;
  Check clock = only_row(judge(facts), "clock");
  CHECK(clock.verdict == Verdict::warn);
  CHECK(clock.detail == "node 2: -2.500 s from the head node");

  facts.erase("collectives");
  facts["collectives_error"] = "RuntimeError: Connection refused";
  Check gang_row = only_row(judge(facts), "all-reduce");
  CHECK(gang_row.verdict == Verdict::fail);
  CHECK(gang_row.fix.find("docs/networking.md") != std::string::npos);
}

TEST_CASE("facts missing members are judged, not a crash", "[preflight]") {
  json facts = {{"ranks", {{{"rank", 0}, {"local_rank", 0}, {"node_rank", 0}}}}};
  std::vector<Check> checks;
  CHECK_NOTHROW(checks = judge(facts));
  CHECK_NOTHROW(checks_table(facts, checks));
}

TEST_CASE("facts refused for their seal fail the seals check, naming each key; sealed pass",
          "[preflight][secret]") {
  json facts = gang(2);
  CHECK(rows_of(judge(facts), "seals").empty());  // no secret, no row
  facts["sealed"] = true;
  Check sealed = only_row(judge(facts), "seals");
  CHECK(sealed.verdict == Verdict::pass);
  CHECK(sealed.where == "all 2 nodes");

  facts["ranks"][1] = nullptr;
  facts["refused"] = {{{"rank", 1},
                       {"key", "gangrun_preflight/facts/1"},
                       {"why", "gangrun_preflight/facts/1 carries no MAC: ..."}}};
  std::vector<Check> checks = judge(facts);
  Check refused = only_row(checks, "seals");
  CHECK(refused.verdict == Verdict::fail);
  CHECK(refused.where == "ranks 1");
  CHECK(refused.detail ==
        "refused what the store held for them: gangrun_preflight/facts/1 carries no MAC: ...");
  CHECK_THAT(refused.fix, Catch::Contains("the store at 10.0.0.1:29500"));
  CHECK(rows_of(checks, "store").empty());  // not "all 2 ranks reached the store"
  CHECK(any_failed(checks));
}

TEST_CASE("the table prints what came from the store with control characters escaped",
          "[preflight][secret]") {
  json facts = gang(2);
  facts["ranks"][1]["host"] = "\x1b]0;PWNED\x07";
  facts["ranks"][1]["torch"] = {{"error", "ImportError: \x1b[2J\x1b[H\nfake line"}};
  facts["ranks"][1]["python"]["version"] = "3.11\x1b[31m";
  std::vector<Check> checks = judge(facts);
  std::string table = checks_table(facts, checks);
  INFO(table);
  CHECK(table.find('\x1b') == std::string::npos);
  CHECK(table.find('\x07') == std::string::npos);
  CHECK_THAT(table, Catch::Contains("node 1 (\\x1b]0;PWNED\\x07): Python 3.11\\x1b[31m"));
  CHECK_THAT(table, Catch::Contains("\\x1b[2J\\x1b[H\\x0afake line"));
  CHECK(table.find("\nfake line") == std::string::npos);
  std::string document = checks_json(facts, checks).dump(2);
  CHECK(document.find('\x1b') == std::string::npos);
}
