// The straggler watch's arithmetic (--straggler-watch): every rank's stack
// is sampled at a low rate, and each sample says whether the rank's main
// thread was waiting on the others (in torch.distributed, or in a backward
// pass, where DistributedDataParallel waits for the gradients' all-reduce)
// or doing its own work. In a gang held up by one slow rank, the others
// wait most of the time and the slow one almost never: that rank is named.
//
//   rank 5 (node1) outside a collective in 92% of 60 samples; the others
//   waited in all_reduce in a median of 85%
#pragma once

#include "doctor/stack_groups.hpp"

#include <nlohmann/json.hpp>

#include <map>
#include <optional>
#include <string>
#include <vector>

namespace gangrun::doctor {

// The innermost frame of main_frames (innermost first) where the thread
// waits on other ranks, by its function's name; nullopt when it does not.
std::optional<std::string> waiting_in(const std::vector<Frame>& main_frames);

// The thread is in Python's import machinery (a rank starting up, which
// neither waits nor trains yet).
bool is_importing(const std::vector<Frame>& main_frames);

class StragglerTally {
 public:
  // A rank is named once it has this many samples (a rank's samples while it
  // imports are not counted)...
  static constexpr int k_min_samples = 10;
  // ...spent at least this share of them outside any wait, while the other
  // ranks' median share waiting is at least k_others_waiting and k_gap above
  // its own...
  static constexpr double k_outside = 0.6;
  static constexpr double k_others_waiting = 0.35;
  static constexpr double k_gap = 0.3;
  // ...and above it by k_standard_errors of the rank's share, had it waited
  // as often as the others: a balanced rank that lost the CPU for a few
  // samples on a busy machine is chance, not a straggler, until the samples
  // say otherwise (with the others waiting 65% of the time, a gap of 48
  // points at 16 samples; from about 40 samples on, k_gap decides).
  static constexpr double k_standard_errors = 4.0;

  // One reading of every rank; ranks whose stack could not be read are not
  // counted.
  void add(const std::vector<RankStacks>& sample);

  // Ranks that stand out now, ascending.
  std::vector<int> stragglers() const;
  // "rank 5 (node1) outside a collective in 92% of 60 samples; the others
  // waited in all_reduce in a median of 85%"
  std::string describe(int rank) const;
  // {"samples": N, "ranks": [{"rank", "host", "samples", "waiting_pct",
  //  "waited_in"}], "stragglers": [ranks]}
  nlohmann::json to_json() const;
  bool empty() const { return ranks_.empty(); }

 private:
  struct Tally {
    std::string host;
    int samples = 0;
    int waiting = 0;
    std::map<std::string, int> waited_in;  // the waiting function, by how often
  };
  static double waiting_share(const Tally& tally);
  // The median waiting share of every rank but `rank`, and where most of them waited.
  double others_waiting(int rank) const;
  std::string most_waited_in(int except_rank) const;

  int samples_ = 0;
  std::map<int, Tally> ranks_;
};

}  // namespace gangrun::doctor
