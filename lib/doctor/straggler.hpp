// The straggler watch's arithmetic (--straggler-watch): every rank's stack
// is sampled at a low rate, and /proc read just before it. A sample counts a
// rank as waiting on the others when its main thread is in torch.distributed
// or a backward pass (where DistributedDataParallel waits for the
// gradients' all-reduce) and asleep there (state S). In a gang held up by
// one slow rank the others wait most of the time and the slow one almost
// never, whatever slows it: its own work (a data loader), a CPU it does not
// get (state R while it queues), a throttle or a debugger that stops it
// (state T), a disk (state D). Frames alone cannot tell: a rank held to 15%
// of a CPU computes its backward pass, which reads like a wait. That rank is
// named:
//
//   rank 1 (node0) kept the others waiting: not waiting on them in 93% of 40
//   samples (stopped in 57%, running in 30%; 16% of a CPU); the others waited
//   in _engine_run_backward in a median of 65%
#pragma once

#include "doctor/proc_stat.hpp"
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

// What /proc said of the ranks' processes just before one sample of their
// stacks (proc_stat.hpp: proc_sample), and when.
struct ProcReadings {
  double at_s = 0;  // seconds on a steady clock
  std::map<long, ProcSample> by_pid;
};

class StragglerTally {
 public:
  // A rank is named once it has this many samples (a rank's samples while it
  // imports are not counted)...
  static constexpr int k_min_samples = 10;
  // ...spent at least this share of them not waiting, while the other
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
  // counted. A rank without a /proc reading in proc (it ended in between) is
  // judged by its stack, and the stopped state the stack reader saw, alone.
  void add(const std::vector<RankStacks>& sample, const ProcReadings& proc = {});

  // Ranks that stand out now, ascending.
  std::vector<int> stragglers() const;
  // As in the example above; the parenthesis only where /proc was read.
  std::string describe(int rank) const;
  // {"samples": N, "ranks": [{"rank", "host", "samples", "waiting_pct",
  //  "waited_in", and where /proc was read: "running_pct", "asleep_pct",
  //  "stopped_pct" (of the samples: its main thread's state), "cpu_pct" (CPU
  //  time of all its threads over the time sampled, 100 a whole CPU) and
  //  "run_delay_pct" (its main thread runnable without a CPU)}],
  //  "stragglers": [ranks]}
  nlohmann::json to_json() const;
  bool empty() const { return ranks_.empty(); }

 private:
  struct Timed {
    double at_s = 0;
    ProcSample proc;
  };
  struct Tally {
    std::string host;
    int samples = 0;
    int waiting = 0;
    std::map<std::string, int> waited_in;  // the waiting function, by how often
    // Of the samples with a /proc reading, how many found the main thread in each state.
    int read_in_proc = 0;
    int running = 0;
    int asleep = 0;
    int stopped = 0;
    std::optional<Timed> first_read, last_read;
  };
  static double waiting_share(const Tally& tally);
  static double state_share(const Tally& tally, int count);
  // CPU time (or run delay) gained between the first and the last reading, per second.
  static std::optional<double> per_second(const Tally& tally, bool run_delay);
  // The median waiting share of every rank but `rank`, and where most of them waited.
  double others_waiting(int rank) const;
  std::string most_waited_in(int except_rank) const;

  int samples_ = 0;
  std::map<int, Tally> ranks_;
};

}  // namespace gangrun::doctor
