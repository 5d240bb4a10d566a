#include "util/open_file_limit.hpp"

namespace gangrun::open_file_limit {

namespace {

// Written once, on the main thread before any child is started; read by
// children between fork and exec.
rlimit g_users_limit{};
bool g_raised = false;

}  // namespace

void use_hard_limit() {
  rlimit limit{};
  if (::getrlimit(RLIMIT_NOFILE, &limit) != 0 || limit.rlim_cur >= limit.rlim_max) return;
  rlimit users = limit;
  limit.rlim_cur = limit.rlim_max;
  if (::setrlimit(RLIMIT_NOFILE, &limit) != 0) return;
  if (!g_raised) g_users_limit = users;
  g_raised = true;
}

const rlimit* users_limit() { return g_raised ? &g_users_limit : nullptr; }

}  // namespace gangrun::open_file_limit
