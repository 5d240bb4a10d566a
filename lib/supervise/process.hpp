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

struct Child {
  pid_t pid = -1;
  UniqueFd pidfd;  // readable once the child has exited; not yet reaped
};

// Starts spec as a child in a new session (so killpg(pid) reaches its whole
// tree and terminal signals reach only gangrun), with PR_SET_PDEATHSIG
// SIGKILL (and a check that gangrun did not die before that took effect),
// default signal dispositions and an empty signal mask. Every other
// descriptor is closed in the child.
//
// Must be called from the thread that lives as long as gangrun (the death
// signal fires when the forking *thread* exits). Errors: the exec failure
// (ENOENT -> not_found, EACCES/ENOEXEC -> not_executable), or a failed
// fork/pidfd_open (internal). The caller reaps the child (wait4).
Expected<Child> spawn(const SpawnSpec& spec);

// Marks this process as a child subreaper, so orphaned descendants of the
// workers are re-parented to gangrun and can be found and killed.
Expected<void> become_subreaper();

}  // namespace gangrun::supervise
