// Starting gangrun on other nodes through a tool: srun (one process for
// every node) or ssh (one process per host). The tools run under shims as
// workers do; signals to this gangrun become what each tool understands;
// the tools' exit statuses come back. Shared by srun_start and ssh_start.
#pragma once

#include "supervise/exit_status.hpp"
#include "util/env.hpp"
#include "util/error.hpp"

#include <string>
#include <vector>

namespace gangrun::agent {

// How the job on the other nodes is told to stop.
enum class StopBy {
  // SIGTERM to the tool, which passes it on (srun).
  signal_term,
  // The tool's stdin is a pipe this gangrun holds and never writes; closing
  // it ends the remote command's stdin, which the remote side answers by
  // stopping. This gangrun dying, even by SIGKILL, closes it too (ssh, which
  // passes no signal without a terminal).
  closing_stdin,
};

struct ToolRun {
  StopBy stop_by = StopBy::signal_term;
  // StopBy::closing_stdin: written to each tool's stdin, with a newline,
  // before anything else: a secret the remote side reads with `read`, which
  // the command line (seen by every user in ps) must not carry.
  std::string first_stdin_line;
  bool pass_user_signals = false;     // USR1/USR2 to the tools as they are
  bool stop_rest_on_failure = false;  // a tool ending non-zero stops the others
};

struct ToolsEnded {
  std::vector<supervise::ExitStatus> statuses;  // one per command, in order
  std::vector<std::size_t> end_order;           // command indices, first ended first
};

// Runs every command (argv[0]: the tool's path) at once with env, until
// all have ended. TERM, INT, HUP and QUIT stop the job (a second one while
// stopping by stdin sends SIGTERM to the tools themselves). Returns each
// command's exit status and the order they ended in. Errors: a tool not
// started (the others, if any, are stopped and waited for first). Call from
// the main thread.
Expected<ToolsEnded> run_tools(const std::vector<std::vector<std::string>>& commands,
                               const EnvMap& env, const ToolRun& how);

// The secret of the job this gangrun starts on other hosts: the user's
// (launch/job_secret.hpp), else a new random one, so that a job gangrun
// starts itself is always authenticated. Errors: the user's is unusable.
Expected<std::string> job_secret_for_hosts(const EnvMap& env);

// This gangrun's own executable (/proc/self/exe); "" when unreadable.
std::string path_of_self();

}  // namespace gangrun::agent
