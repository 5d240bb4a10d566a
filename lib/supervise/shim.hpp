// The per-worker shim: a small process between gangrun and each worker that
// makes the worker's whole tree die with the job, even when gangrun itself is
// killed with SIGKILL and has no cgroup to kill.
//
//   gangrun ──control pipe──▶ shim (subreaper, own session) ──fork/exec──▶ worker
//           ◀──report pipe───
//
// Why a process of its own: a worker's descendants can detach (setsid, a
// double fork that re-parents a daemon to the nearest subreaper). A death
// signal reaches only direct children, and gangrun's own subreaper role ends
// with gangrun. The shim is a subreaper that outlives gangrun just long
// enough to kill everything under it: when the control pipe reaches EOF
// (gangrun closed it, or gangrun died) it SIGKILLs the worker's group and
// every descendant re-parented to it, round after round, reaps them, and
// exits.
//
// Why signals go through the shim: the shim is the worker's parent and reaps
// it in its own single-threaded loop, so while it has not reaped the worker,
// the worker's pid and process group cannot be reused. gangrun never sends a
// signal to a pid it does not own; it writes the signal number into the
// control pipe, and the shim delivers it with killpg only before it has
// reaped the worker.
//
// The shim is created by spawn() (process.cpp) by forking gangrun without
// exec, so everything it runs must be async-signal-safe: raw system calls,
// no allocation, no locks, no C++ exceptions.
#pragma once

#include <sys/types.h>

#include <cstdint>

namespace gangrun::supervise {

// One fixed-size record on the report pipe (shim to gangrun). Records are
// smaller than PIPE_BUF, so each write arrives whole.
struct ShimRecord {
  enum Kind : std::int32_t {
    started = 1,      // value: the worker's pid; the first record after a successful exec
    fork_failed = 2,  // value: errno of the shim's clone(); the shim then exits
    exec_failed = 3,  // value: errno of the worker's execve(); the shim then exits
    exited = 4,       // value: the worker's wait status; peak_rss_kib from wait4
  };
  std::int32_t kind = 0;
  std::int32_t value = 0;
  std::int64_t peak_rss_kib = 0;
};

// Control bytes (gangrun to shim): each byte is a signal number to deliver
// to the worker's process group while the worker has not been reaped, in
// the order written. Which signals follow which (a teardown's SIGCONT after
// its stop signal) is the gang's to decide (gang.cpp), not the shim's.
// SIGKILL also kills every other descendant under the shim at once. EOF
// means: kill everything under the shim, reap it, and exit 0.

// The shim's loop. control_fd and report_fd must be the only descriptors
// besides 0-2 (which should be /dev/null); SIGCHLD must be blocked, and
// sigchld_fd a non-blocking signalfd for it. Never returns.
[[noreturn]] void run_shim(pid_t worker, int control_fd, int report_fd, int sigchld_fd);

}  // namespace gangrun::supervise
