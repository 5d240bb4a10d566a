// Process creation: the one place that decides, for every child, its argv,
// its explicit environment, its stdio, its session and its death signal.
// The only user of Boost.Process.
#pragma once

#include "supervise/exit_status.hpp"
#include "supervise/shim.hpp"
#include "util/env.hpp"
#include "util/error.hpp"
#include "util/fd.hpp"

#include <sys/types.h>

#include <chrono>
#include <optional>
#include <string>
#include <vector>

namespace gangrun::supervise {

struct SpawnSpec {
  std::string executable;         // a path; resolved before anything starts, no PATH search here
  std::vector<std::string> argv;  // argv[0] included
  EnvMap env;                     // the child's whole environment
  // Descriptors placed on the child's 0, 1 and 2; -1 leaves gangrun's own.
  int stdin_fd = -1;
  int stdout_fd = -1;
  int stderr_fd = -1;
  // The CPUs the child is pinned to (sched_setaffinity before its exec);
  // empty: gangrun's own affinity. A CPU it may not use fails the start
  // like a failed exec (EINVAL), naming the program.
  std::vector<int> cpus = {};
};

// A worker being started under its shim (supervise/shim.hpp).
struct Child {
  pid_t shim_pid = -1;  // gangrun's own child
  // Readable once the shim has exited (not yet reaped): its pidfd, or where the kernel has no
  // pidfd_open (before Linux 5.3) the non-blocking read end of a pipe only the shim holds, whose
  // end of file comes as the shim exits, a moment before it can be reaped.
  UniqueFd shim_exit;
  bool shim_exit_is_pidfd = true;
  UniqueFd control;  // non-blocking write end: signal numbers; closing it ends the subtree
  // Non-blocking read end of ShimRecords: started (the worker's pid) or
  // exec_failed/fork_failed, then exited. EOF without `exited`: the shim died.
  UniqueFd report;
};

// Starts spec under a shim and returns without waiting for the worker's
// exec: the shim's first record tells how that went (start_failure() turns
// a failure into the error to report). The shim leads a session of its own,
// is a subreaper, ignores every signal, and starts the worker, which leads
// another new session (so terminal signals reach only gangrun, and a signal
// to the worker's group reaches its tree), gets PR_SET_PDEATHSIG SIGKILL
// against the shim, default signal dispositions, an empty signal mask and
// no descriptor but its stdio, and the open-file limit gangrun was started
// with (util/open_file_limit.hpp).
//
// Errors (internal: out of descriptors, processes or memory) name the
// program and the system error. Nothing is left running after an error; a
// shim whose worker did not start exits when its control pipe closes and is
// reaped by whoever reaps gangrun's stray children. The caller reaps the
// shim (wait4) after closing `control`. Never throws.
Expected<Child> spawn(const SpawnSpec& spec);

// The error for a shim's exec_failed or fork_failed record: the exec
// failure names the program (and a missing #! interpreter), ENOENT is
// not_found, EACCES/ENOEXEC not_executable, anything else internal.
Error start_failure(const SpawnSpec& spec, const ShimRecord& record);

// Marks this process as a child subreaper, so orphaned descendants of the
// workers are re-parented to gangrun and can be found and killed.
Expected<void> become_subreaper();

// run_to_completion's stderr_fd for a child whose stderr goes into its
// captured output too (a tool that reports its errors there).
inline constexpr int k_stderr_to_output = -2;

// What a short-lived child left behind (run_to_completion).
struct CapturedRun {
  std::string output;                // every byte it wrote to its stdout
  std::optional<ExitStatus> status;  // nullopt: still running at the deadline, so killed
};

// Starts spec like spawn() does, under a shim, with the child's stdout a
// pipe (spec.stdout_fd is ignored; stderr too when spec.stderr_fd is
// k_stderr_to_output), and blocks until the child has exited
// and its stdout has reached EOF, or until timeout has passed. Either way
// it then ends whatever is left under the shim (the child's whole tree, by
// SIGKILL) and reaps the shim with waitpid on its pid alone, so it neither
// reaps nor waits for any other child of gangrun. Safe with other threads
// running: nothing runs in a forked copy of gangrun but spawn()'s
// async-signal-safe shim. A child still running at the deadline gives a
// CapturedRun whose status is nullopt, with what it wrote so far.
//
// Errors: those of spawn(), the child's exec failure (start_failure()), a
// failed read of its stdout or a shim that died, all ErrorCode::internal
// except an exec failure's own code. Never throws.
Expected<CapturedRun> run_to_completion(const SpawnSpec& spec, std::chrono::milliseconds timeout);

}  // namespace gangrun::supervise
