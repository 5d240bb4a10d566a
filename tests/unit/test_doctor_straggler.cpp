// The straggler watch's arithmetic: which frames mean "waiting on the
// others", and when a rank that keeps working while the others wait is named
// (and, on a balanced gang, that none is).
#include "doctor/straggler.hpp"

#include <catch2/catch.hpp>

using namespace gangrun::doctor;

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
        "rank 2 (node1) outside a collective in 80% of 10 samples; the others waited in "
        "all_reduce in a median of 80%");
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
