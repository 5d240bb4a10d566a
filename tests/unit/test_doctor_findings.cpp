// The gang doctor's typed findings, as the report writes them: the keys and
// the shape every reader of the JSON report relies on.
#include "doctor/store_peers.hpp"
#include "report/run_report.hpp"

#include <catch2/catch.hpp>

using namespace gangrun::report;

namespace {

nlohmann::json attempt_json(const DoctorFindings& found) {
  RunRecord run;
  run.run_id = "none";
  run.host = "node1";
  AttemptRecord attempt;
  attempt.doctor = found;
  run.attempts = {attempt};
  return to_json(run)["attempts"].at(0);
}

}  // namespace

TEST_CASE("an attempt without findings has none of the doctor's keys", "[doctor][report]") {
  nlohmann::json attempt = attempt_json({});
  for (const char* key : {"hang", "start_timeout", "stacks_at_failure", "timer_expired",
                          "late_to_store", "straggler_watch", "flight_recorder_dumps"}) {
    CHECK_FALSE(attempt.contains(key));
  }
}

TEST_CASE("every finding of the doctor keeps its report key and shape", "[doctor][report]") {
  nlohmann::json stacks = {{"groups", nlohmann::json::array()}};
  DoctorFindings found;
  found.hang = HangFinding{.timeout_s = 3,
                           .silent_for_s = 3.25,
                           .action = "stop",
                           .not_at_store = std::nullopt,
                           .stopped = {1},
                           .stacks = stacks,
                           .flight_recorder_dumps = std::vector<std::string>{}};
  found.start_timeout = StartTimeoutFinding{
      .timeout_s = 600, .action = "stop", .starting = {2, 3}, .importing = {2}, .stacks = stacks};
  found.stacks_at_failure = stacks;
  found.timer_expired = TimerExpiredFinding{
      .rank = 1, .pid = 4242, .scope_id = "step", .signal = 9, .stacks = std::nullopt};
  found.late_to_store =
      LateToStoreFinding{.after_s = 2.5, .host = "node1", .store = "node1:29500", .ranks = {3}};
  found.straggler_watch = nlohmann::json{{"samples", 4}};
  found.flight_recorder_dumps = {"/x/nccl_trace_rank_0"};
  nlohmann::json attempt = attempt_json(found);
  CHECK(attempt["hang"] == nlohmann::json{{"timeout_s", 3.0},
                                          {"silent_for_s", 3.25},
                                          {"reported_at", "1970-01-01T00:00:00.000Z"},
                                          {"action", "stop"},
                                          {"not_at_store", nullptr},
                                          {"stopped", {1}},
                                          {"stacks", stacks},
                                          {"flight_recorder_dumps", nlohmann::json::array()}});
  // A start that lasted too long is its own key, never a hang's.
  CHECK(attempt["start_timeout"] == nlohmann::json{{"timeout_s", 600.0},
                                                   {"action", "stop"},
                                                   {"starting", {2, 3}},
                                                   {"importing", {2}},
                                                   {"stacks", stacks}});
  CHECK(attempt["stacks_at_failure"] == stacks);
  CHECK(attempt["timer_expired"] ==
        nlohmann::json{{"rank", 1}, {"pid", 4242}, {"scope_id", "step"}, {"signal", 9}});
  CHECK(attempt["late_to_store"] == nlohmann::json{{"after_s", 2.5},
                                                   {"host", "node1"},
                                                   {"store", "node1:29500"},
                                                   {"ranks", nlohmann::json::array({3})}});
  CHECK(attempt["straggler_watch"] == nlohmann::json{{"samples", 4}});
  CHECK(attempt["flight_recorder_dumps"] == nlohmann::json{"/x/nccl_trace_rank_0"});

  // Known ranks missing from the store are a list; a hang without dumps asked has no key.
  found.hang->not_at_store = std::vector<int>{0, 2};
  found.hang->flight_recorder_dumps.reset();
  found.timer_expired->stacks = stacks;
  attempt = attempt_json(found);
  CHECK(attempt["hang"]["not_at_store"] == nlohmann::json{0, 2});
  CHECK_FALSE(attempt["hang"].contains("flight_recorder_dumps"));
  CHECK(attempt["timer_expired"]["stacks"] == stacks);
}

TEST_CASE("the ranks not at the store are named by how many of them are missing",
          "[doctor][store]") {
  using gangrun::doctor::not_at_store_line;
  CHECK(not_at_store_line({}, 4, "h:1") == "");
  CHECK(not_at_store_line({0, 1}, 2, "h:1") ==
        "no rank has connected to the store at h:1 yet: none has reached init_process_group");
  CHECK_THAT(not_at_store_line({3}, 4, "h:1"),
             Catch::Matchers::Contains("has not connected to the store at h:1: the others wait "
                                       "for it in init_process_group"));
}

TEST_CASE("without a store port whether ranks reached the store is not known", "[doctor][store]") {
  using gangrun::doctor::store_arrivals;
  CHECK_FALSE(store_arrivals({}, "", true).missing);
  CHECK_FALSE(store_arrivals({}, "host:none", true).missing);
  CHECK_FALSE(store_arrivals({}, "host:0", true).missing);
}
