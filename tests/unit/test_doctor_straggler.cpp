// The straggler watch's arithmetic: which frames mean "waiting on the
// others", what /proc adds to them, and when a rank that keeps working (or
// is kept from working) while the others wait is named (and, on a balanced
// gang, that none is).
#include "doctor/straggler.hpp"
#include "temp_dir.hpp"

#include <catch2/catch.hpp>

#include <unistd.h>

using namespace gangrun::doctor;
using gangrun::test::TempDir;

namespace {

const std::vector<Frame> k_all_reduce = {
    {"all_reduce", "torch/distributed/distributed_c10d.py", 1541},
    {"train_step", "train.py", 9},
    {"<module>", "train.py", 20}};
const std::vector<Frame> k_backward = {{"_engine_run_backward", "torch/autograd/graph.py", 768},
                                       {"backward", "torch/autograd/__init__.py", 289},
                                       {"Tensor.backward", "torch/_tensor.py", 581},
                                       {"train_step", "train.py", 12}};
const std::vector<Frame> k_working = {{"load_batch", "train.py", 6}, {"train_step", "train.py", 8}};

RankStacks at(int rank, const std::vector<Frame>& frames) {
  RankStacks stacks{rank,        rank < 2 ? "node0" : "node1", 100L + rank, {}, std::nullopt,
                    std::nullopt};
  stacks.threads.push_back(ThreadStack{"MainThread", 100L + rank, false, frames});
  return stacks;
}

}  // namespace

TEST_CASE("a rank waits on the others in torch.distributed or a backward pass", "[doctor]") {
  CHECK(waiting_in(k_all_reduce) == "all_reduce");
  CHECK(waiting_in(k_backward) == "_engine_run_backward");
  CHECK_FALSE(waiting_in(k_working));
  CHECK_FALSE(waiting_in({}));
  // Importing torch.distributed runs its modules: that is work, not a wait.
  CHECK_FALSE(waiting_in({{"<module>", "torch/distributed/__init__.py", 1},
                          {"_call_with_frames_removed", "<frozen importlib._bootstrap>", 241},
                          {"_find_and_load", "<frozen importlib._bootstrap>", 1176}}));
}

TEST_CASE("the rank that works while the others wait is named after enough samples", "[doctor]") {
  StragglerTally tally;
  for (int sample = 0; sample < StragglerTally::k_min_samples; ++sample) {
    CHECK(tally.stragglers().empty());  // too few samples yet
    // Rank 2 is caught waiting one sample in five, the others four in five.
    bool others_wait = sample % 5 != 0;
    bool slow_waits = sample % 5 == 0;
    std::vector<RankStacks> reading;
    for (int rank = 0; rank < 4; ++rank) {
      bool waits = rank == 2 ? slow_waits : others_wait;
      reading.push_back(at(rank, waits ? k_all_reduce : k_working));
    }
    // A rank whose stack could not be read is not counted, nor one still importing.
    RankStacks unread{4, "node1", 104, {}, std::string("ended"), std::nullopt};
    reading.push_back(unread);
    reading.push_back(at(5, {{"<module>", "torch/__init__.py", 1},
                             {"_find_and_load", "<frozen importlib._bootstrap>", 1176}}));
    tally.add(reading);
  }
  CHECK(tally.stragglers() == std::vector<int>{2});
  CHECK(tally.describe(2) ==
        "rank 2 (node1) kept the others waiting: not waiting on them in 80% of 10 samples; the "
        "others waited in all_reduce in a median of 80%");
  nlohmann::json json = tally.to_json();
  CHECK(json["samples"] == 10);
  CHECK(json["stragglers"] == nlohmann::json::array({2}));
  CHECK(json["ranks"].size() == 4);  // rank 5 was only seen importing
}

TEST_CASE("a rank behind by chance over a few samples is not named until the samples say so",
          "[doctor]") {
  // A balanced rank that lost its CPU on a busy machine: caught waiting in 5 of 16 samples
  // while the others waited in 11 (outside 69%, a gap of 37 points, within four standard
  // errors); the same shares over 48 samples are a straggler.
  auto tally_of = [](int samples) {
    StragglerTally tally;
    for (int sample = 0; sample < samples; ++sample) {
      std::vector<RankStacks> reading;
      for (int rank = 0; rank < 4; ++rank) {
        bool waits = rank == 2 ? sample % 16 < 5 : sample % 16 < 11;
        reading.push_back(at(rank, waits ? k_backward : k_working));
      }
      tally.add(reading);
    }
    return tally;
  };
  CHECK(tally_of(16).stragglers().empty());
  CHECK(tally_of(48).stragglers() == std::vector<int>{2});
}

TEST_CASE("a balanced gang has no straggler", "[doctor]") {
  StragglerTally tally;
  for (int sample = 0; sample < 3 * StragglerTally::k_min_samples; ++sample) {
    std::vector<RankStacks> reading;
    // Every rank works half the time, each at its own moments.
    for (int rank = 0; rank < 4; ++rank) {
      reading.push_back(at(rank, (sample + rank) % 2 == 0 ? k_backward : k_working));
    }
    tally.add(reading);
  }
  CHECK(tally.stragglers().empty());
}

namespace {

// Four ranks in a backward pass in every sample, as DDP's are on a CPU: the
// frames never change, only what /proc says of them. Rank 2 (pid 102) is
// held to a share of a CPU: stopped in 3 of 5 samples, running in 1, asleep
// in 1; the others sleep in the gradients' all-reduce in 4 of 5 and compute
// in 1. Every rank gains 0.2 CPU-seconds a second; rank 2 waits for a CPU
// 0.1 s a second.
StragglerTally throttled(int samples, bool with_proc) {
  StragglerTally tally;
  for (int sample = 0; sample < samples; ++sample) {
    std::vector<RankStacks> reading;
    ProcReadings proc;
    proc.at_s = 1000.0 + sample;
    for (int rank = 0; rank < 4; ++rank) {
      reading.push_back(at(rank, k_backward));
      char state = rank != 2 ? (sample % 5 == 0 ? 'R' : 'S') : "TTTRS"[sample % 5];
      proc.by_pid[100L + rank] = ProcSample{state, 0.2 * sample, 0.1 * sample * (rank == 2)};
    }
    tally.add(reading, with_proc ? proc : ProcReadings{});
  }
  return tally;
}

}  // namespace

TEST_CASE("a throttled or stopped rank whose frames read like a wait is named by its /proc state",
          "[doctor]") {
  // Frames alone: every rank is always "waiting", so no one is named.
  CHECK(throttled(20, false).stragglers().empty());

  StragglerTally tally = throttled(20, true);
  CHECK(tally.stragglers() == std::vector<int>{2});
  CHECK(tally.describe(2) ==
        "rank 2 (node1) kept the others waiting: not waiting on them in 80% of 20 samples "
        "(stopped in 60%, running in 20%; 20% of a CPU); the others waited in "
        "_engine_run_backward in a median of 80%");
  nlohmann::json slow = tally.to_json()["ranks"][2];
  CHECK(slow["waiting_pct"] == 20);
  CHECK(slow["stopped_pct"] == 60);
  CHECK(slow["running_pct"] == 20);
  CHECK(slow["asleep_pct"] == 20);
  CHECK(slow["cpu_pct"] == 20);
  CHECK(slow["run_delay_pct"] == 10);
  nlohmann::json other = tally.to_json()["ranks"][0];
  CHECK(other["waiting_pct"] == 80);
  CHECK(other["stopped_pct"] == 0);
  CHECK(other["run_delay_pct"] == 0);
}

TEST_CASE("a stopped rank without a /proc reading is not waiting", "[doctor]") {
  // The stack reader's own look at /proc (RankStacks::stopped) is enough.
  StragglerTally tally;
  for (int sample = 0; sample < 20; ++sample) {
    std::vector<RankStacks> reading;
    for (int rank = 0; rank < 3; ++rank) reading.push_back(at(rank, k_all_reduce));
    if (sample % 4 != 0) reading[1].stopped = 'T';
    tally.add(reading);
  }
  CHECK(tally.stragglers() == std::vector<int>{1});
  CHECK(tally.to_json()["ranks"][1].count("stopped_pct") == 0);  // no /proc reading of its own
}

TEST_CASE("a balanced gang computing its backward passes has no straggler", "[doctor]") {
  // Every rank on a CPU in half the samples, asleep in the all-reduce in the other half, each
  // at its own moments.
  StragglerTally tally;
  for (int sample = 0; sample < 60; ++sample) {
    std::vector<RankStacks> reading;
    ProcReadings proc;
    proc.at_s = sample;
    for (int rank = 0; rank < 4; ++rank) {
      reading.push_back(at(rank, k_backward));
      proc.by_pid[100L + rank] = ProcSample{(sample + rank) % 2 == 0 ? 'R' : 'S', 0, std::nullopt};
    }
    tally.add(reading, proc);
  }
  CHECK(tally.stragglers().empty());
  CHECK(tally.to_json()["ranks"][0]["run_delay_pct"].is_null());  // no schedstat
}

TEST_CASE("proc_sample reads the state, the CPU time and the run delay", "[doctor]") {
  TempDir proc;
  // Fields 14 and 15 (utime, stime) are 250 and 50 ticks.
  proc.write("41/stat", "41 (py (x) y) R 1 41 41 0 -1 4194560 100 0 0 0 250 50 0 0 20 0 5 0\n");
  proc.write("41/schedstat", "3000000000 1500000000 42\n");
  proc.write("42/stat", "42 (python) T 1 42 42 0 -1 4194560 100 0 0 0 7 3 0 0 20 0 5 0\n");
  proc.write("43/stat", "43 (python) S 1 43\n");  // cut short
  const std::string root = proc.path().string();
  const double ticks = static_cast<double>(sysconf(_SC_CLK_TCK));

  auto running = proc_sample(41, root);
  REQUIRE(running);
  CHECK(running->state == 'R');
  CHECK(running->cpu_s == Approx(300 / ticks));
  CHECK(running->run_delay_s == Approx(1.5));
  auto stopped = proc_sample(42, root);
  REQUIRE(stopped);
  CHECK(stopped->state == 'T');
  CHECK(stopped->cpu_s == Approx(10 / ticks));
  CHECK_FALSE(stopped->run_delay_s);  // no schedstat
  CHECK_FALSE(proc_sample(43, root));
  CHECK_FALSE(proc_sample(44, root));  // gone
}
