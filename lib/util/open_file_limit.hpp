// gangrun's open-file limit: the one place that raises it, and that keeps
// the user's own limit for the children gangrun starts.
#pragma once

#include <sys/resource.h>

namespace gangrun::open_file_limit {

// Raises this process's soft open-file limit to its hard limit: the node
// agent holds five descriptors per worker, and a store one per client (on
// many nodes, every worker of the job), where the soft limit is often 1024
// while the hard one allows far more. The first raise keeps the soft limit
// gangrun was started with, which children get back (users_limit()); a
// later call finds nothing to raise. For the main thread, before the first
// spawn.
void use_hard_limit();

// The soft limit gangrun was started with, once use_hard_limit() raised it;
// nullptr while it is the user's own. Async-signal-safe: a child restores
// it between fork and exec (supervise/process.cpp).
const rlimit* users_limit();

}  // namespace gangrun::open_file_limit
