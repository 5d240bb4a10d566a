// The seam between the gang's logic and the operating system: starting a
// worker, signalling it, ending what is left of its tree, and collecting
// stray children. The gang sees a worker only through WorkerProcess and the
// events it reports, so its decisions (root cause, teardown order and
// escalation, restarts, signals during spawn) can be tested against a fake
// (tests/unit/fake_spawner.hpp) without starting a process.
//
// ShimSpawner (shim_spawner.hpp) is the real one: every worker under its
// own shim (shim.hpp), created by spawn() (process.hpp).
#pragma once

#include "supervise/exit_status.hpp"
#include "supervise/process.hpp"
#include "util/error.hpp"

#include <sys/types.h>

#include <functional>
#include <memory>
#include <set>

namespace gangrun::supervise {

// What a started worker reports. Every callback runs on the io_context the
// spawner was made with, never inside a WorkerProcess or Spawner call.
struct WorkerEvents {
  // The worker's program is running as this pid.
  std::function<void(pid_t pid)> on_running;
  // The worker could not be started after all (exec or fork failed under
  // the supervisor); the error names the program. No on_exited follows.
  std::function<void(const Error& error)> on_start_failed;
  // The worker ended; peak_rss_kib from its wait status' rusage.
  std::function<void(ExitStatus status, long peak_rss_kib)> on_exited;
  // Its supervisor (the shim) is gone and reaped: nothing of the worker's
  // tree is left. When it went before on_exited or on_start_failed came,
  // someone killed it and the worker died with it: `status` is the
  // supervisor's own, and the worker is lost.
  std::function<void(ExitStatus status, long peak_rss_kib)> on_supervisor_gone;
};

// One worker as the gang handles it. When the last reference goes, its
// callbacks are detached; the caller lets go of it only after
// on_supervisor_gone.
class WorkerProcess {
 public:
  virtual ~WorkerProcess() = default;
  // Delivers signal_number to the worker's process group while the worker
  // has not been reaped (SIGKILL: to everything under its supervisor).
  virtual void signal(int signal_number) = 0;
  // The worker has ended or must end now: kill whatever is left of its
  // tree; on_supervisor_gone follows.
  virtual void end_tree() = 0;
  // The supervisor did not go after end_tree(): kill it outright.
  virtual void kill_supervisor() = 0;
  // gangrun's own child for this worker (the shim), for stray reaping.
  virtual pid_t supervisor_pid() const = 0;
};

class Spawner {
 public:
  virtual ~Spawner() = default;
  // Starts spec and returns without waiting for its exec; events follow.
  // An error (out of descriptors, processes or memory) names the program;
  // nothing is left running after one. Never throws.
  virtual Expected<std::shared_ptr<WorkerProcess>> start(const SpawnSpec& spec,
                                                         WorkerEvents events) = 0;
  // Reaps every child of gangrun that has exited and is not in keep (a
  // shim whose worker never started, an orphan of a killed shim); never
  // blocks.
  virtual void reap_strays(const std::set<pid_t>& keep) = 0;
  // Kills and reaps every child of gangrun that is left when a gang has
  // ended (descendants of a killed shim came back to gangrun, the
  // subreaper above the shims). Returns how many were killed.
  virtual int kill_strays() = 0;
};

}  // namespace gangrun::supervise
