// Process creation: the one place that decides, for every child, its argv,
// its explicit environment, its stdio, its session and its death signal.
// The only user of Boost.Process.
#pragma once

#include "util/env.hpp"
#include "util/error.hpp"
#include "util/fd.hpp"

#include <sys/types.h>

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
};

// A worker started under its shim (supervise/shim.hpp).
struct Child {
  pid_t pid = -1;       // the worker; its parent is the shim, which reaps it
  pid_t shim_pid = -1;  // gangrun's own child
  UniqueFd shim_pidfd;  // readable once the shim has exited; not yet reaped
  UniqueFd control;     // non-blocking write end: signal numbers; closing it ends the subtree
  UniqueFd report;      // non-blocking read end: one ShimRecord (exited) when the worker ends
};

// Starts spec under a shim. The shim leads a session of its own, is a
// subreaper, ignores every signal, and forks the worker, which leads
// another new session (so terminal signals reach only gangrun, and a signal
// to the worker's group reaches its tree), gets PR_SET_PDEATHSIG SIGKILL
// against the shim, default signal dispositions and an empty signal mask.
// Every other descriptor is closed in both.
//
// spawn() returns once the worker's exec succeeded. Errors name the program
// and the system error: the exec failure (ENOENT -> not_found,
// EACCES/ENOEXEC -> not_executable), or a failed pipe, fork or pidfd_open
// (internal: out of descriptors or processes). Nothing is left running after
// an error: a shim whose worker did not start sees its control pipe close,
// exits, and is reaped by whoever reaps gangrun's stray children. The caller
// reaps the shim (wait4) after closing `control`. Never throws.
Expected<Child> spawn(const SpawnSpec& spec);

// Marks this process as a child subreaper, so orphaned descendants of the
// workers are re-parented to gangrun and can be found and killed.
Expected<void> become_subreaper();

}  // namespace gangrun::supervise
