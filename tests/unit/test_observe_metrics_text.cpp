// /metrics' text: label values escaped as the exposition format wants (a
// host name with a quote or a line feed cannot end a sample early), every
// family with HELP and TYPE, per-rank series labelled by rank, the store's
// series only where the store is.
#include "observe/metrics_text.hpp"

#include <catch2/catch.hpp>

using namespace gangrun::observe;

namespace {

NodeStatus two_ranks() {
  NodeStatus status;
  status.run_id = "job-1";
  status.node = "n0";
  status.agent_state = "running";
  status.local_world_size = 2;
  for (int rank : {0, 1}) {
    RankStatus worker;
    worker.rank = rank;
    worker.local_rank = rank;
    worker.state = rank == 1 ? RankState::stopped : RankState::running;
    worker.seconds_since_progress = 1.5;
    worker.rss_kib = 2;
    status.ranks.push_back(worker);
  }
  return status;
}

}  // namespace

TEST_CASE("label values escape backslashes, quotes and line feeds", "[observe]") {
  CHECK(escaped_label_value(R"(a"b)") == R"(a\"b)");
  CHECK(escaped_label_value("a\\b") == "a\\\\b");
  CHECK(escaped_label_value("a\nb") == "a\\nb");
  CHECK(escaped_label_value("a\tb\rc") == "a b c");
  CHECK(escaped_label_value("gpu-node-3.example") == "gpu-node-3.example");
}

TEST_CASE("a host name with a quote and a line feed stays inside its label", "[observe]") {
  NodeStatus status = two_ranks();
  status.node = "evil\"}\n0 fake_series 1";
  std::string text = metrics_text(status);
  CHECK(text.find("node=\"evil\\\"}\\n0 fake_series 1\"") != std::string::npos);
  for (std::size_t start = 0, end; start < text.size(); start = end + 1) {
    end = text.find('\n', start);
    std::string line = text.substr(start, end - start);
    INFO(line);
    CHECK((line.starts_with("# HELP gangrun_") || line.starts_with("# TYPE gangrun_") ||
           line.starts_with("gangrun_")));
  }
}

TEST_CASE("every family has HELP and TYPE, and per-rank series name the rank", "[observe]") {
  std::string text = metrics_text(two_ranks());
  CHECK(text.find("# TYPE gangrun_workers gauge\n") != std::string::npos);
  CHECK(text.find("gangrun_workers{run_id=\"job-1\",node=\"n0\",state=\"running\"} 1\n") !=
        std::string::npos);
  CHECK(text.find("gangrun_workers{run_id=\"job-1\",node=\"n0\",state=\"stopped\"} 1\n") !=
        std::string::npos);
  CHECK(text.find("# TYPE gangrun_restarts_total counter\n") != std::string::npos);
  CHECK(text.find("gangrun_rank_seconds_since_progress{run_id=\"job-1\",node=\"n0\",rank=\"1\","
                  "local_rank=\"1\"} 1.5\n") != std::string::npos);
  CHECK(text.find("gangrun_rank_resident_memory_bytes{run_id=\"job-1\",node=\"n0\",rank=\"0\","
                  "local_rank=\"0\"} 2048\n") != std::string::npos);
  CHECK(text.find("gangrun_rank_stopped{run_id=\"job-1\",node=\"n0\",rank=\"1\",local_rank=\"1\"} "
                  "1\n") != std::string::npos);
}

TEST_CASE("the store's series appear only on the agent that hosts the store", "[observe]") {
  NodeStatus status = two_ranks();
  CHECK(metrics_text(status).find("gangrun_store_") == std::string::npos);
  status.store = StoreStatus{};
  status.store->requests = 42;
  CHECK(metrics_text(status).find(
            "gangrun_store_requests_total{run_id=\"job-1\",node=\"n0\"} 42\n") !=
        std::string::npos);
}

TEST_CASE("steps a second are sampled only for the ranks whose output counts them", "[observe]") {
  NodeStatus status = two_ranks();
  status.ranks[1].steps_per_second = 2.5;
  std::string text = metrics_text(status);
  CHECK(text.find("# TYPE gangrun_rank_steps_per_second gauge\n") != std::string::npos);
  CHECK(text.find("gangrun_rank_steps_per_second{run_id=\"job-1\",node=\"n0\",rank=\"1\","
                  "local_rank=\"1\"} 2.5\n") != std::string::npos);
  CHECK(text.find("gangrun_rank_steps_per_second{run_id=\"job-1\",node=\"n0\",rank=\"0\"") ==
        std::string::npos);
}
