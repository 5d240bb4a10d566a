// Descendants that outlived their worker. gangrun is a child subreaper, so a
// worker's grandchild whose parent died (a daemon that setsid()s away, a
// leaked data-loader process) becomes gangrun's own child.
#pragma once

#include <sys/types.h>

#include <set>
#include <vector>

namespace gangrun::supervise {

// gangrun's current children, read from /proc/self/task/*/children. Empty
// when the kernel does not provide that file.
std::vector<pid_t> list_children();

// Reaps every child not in keep that has already exited; never blocks.
// Returns how many were reaped.
int reap_exited_orphans(const std::set<pid_t>& keep);

// SIGKILLs every child not in keep (and its process group), reaps it, and
// repeats for the grandchildren that this re-parents, until none is left or
// max_rounds is reached. Returns how many processes were killed.
int kill_orphans(const std::set<pid_t>& keep, int max_rounds = 64);

}  // namespace gangrun::supervise
