// One watch of the gang doctor (gang_doctor.hpp): a thing it looks at in
// every round, such as the ranks late to the store or the straggler
// sampling. The doctor holds a list of them and tells each when a round
// starts, when a worker fails and when the round ends, and gathers what
// each found into the round's record (report::DoctorFindings).
#pragma once

#include "doctor/watch/stack_probe.hpp"
#include "launch/plan.hpp"
#include "report/run_record.hpp"
#include "supervise/gang.hpp"
#include "util/env.hpp"

#include <sys/types.h>

#include <chrono>
#include <cstdint>
#include <optional>
#include <set>
#include <string>
#include <vector>

namespace gangrun::doctor {

// A round, as every watch hears of it.
struct RoundStart {
  std::string store;  // "host:port" the workers meet at; empty when unknown
  std::chrono::steady_clock::time_point at;
};

// What the watches say of the ranks while a round runs, for the node's
// snapshot (observe/node_status.hpp: /metrics, gangrun top).
struct LiveMarks {
  bool hang_reported = false;          // this round
  std::set<int> slow_ranks;            // named stragglers, this round
  std::uint64_t hangs = 0;             // reported, every round
  std::uint64_t stragglers_named = 0;  // every round
};

class Watch {
 public:
  virtual ~Watch() = default;

  // What the watch adds to every worker's environment in the round whose
  // directory is attempt_path; before round_started.
  virtual EnvMap worker_env(const std::string& /*attempt_path*/) { return {}; }
  virtual void round_started(const RoundStart& round) = 0;
  // A worker failed by itself: the round is ending.
  virtual void worker_failed() {}
  // This node's ranks are done: no timer of the watch fires any more.
  virtual void round_ended() = 0;
  // A stack reading of the watch's is still under way: the round's findings
  // wait for it (it ends within its limit, then the watch calls the doctor
  // back as it was told when made).
  virtual bool reading() const { return false; }
  // Puts what it found this round into the round's findings; after round_ended.
  virtual void add_findings(report::DoctorFindings& findings) const = 0;
  // gangrun's own children it runs (stack tools' shims), which stray
  // reaping must leave alone.
  virtual std::set<pid_t> supervisor_pids() const { return {}; }
  // Adds its marks, at any time.
  virtual void add_marks(LiveMarks& /*marks*/) const {}
};

// The stack tool that every watch reading stacks shares: found once when
// the doctor is made (nullopt: none), and how to install one is said once
// per run, by whichever watch needs it first.
struct SharedStackTool {
  std::optional<std::string> path;
  bool told_missing = false;
};

// An option's seconds as the agent's clock counts them.
std::chrono::steady_clock::duration steady(double seconds);
// "3 s", "2.5 s", "0.012 s": the value as a user would write it.
std::string seconds_text(double seconds);
// gangrun chose the interpreter or read it from the script's #! line, or
// the program is one (gangrun python train.py).
bool runs_python(const launch::LaunchPlan& plan);
// The gang's live workers, as ranks whose stacks may be read.
std::vector<StackTarget> live_targets(const supervise::Gang& gang);

}  // namespace gangrun::doctor
