// Starting gangrun on other nodes through a tool: srun (one process for
// every node) or ssh (one process per host). The tools are a gang
// (supervise/gang.hpp), supervised as the node agent's workers are: each
// under its shim, the same teardown, reaping and stray collection; what
// differs is only how each tool is asked to stop, and that signals to this
// gangrun become what the tools understand. The tools' exit statuses come
// back. Shared by srun_start, ssh_start and mpirun_start.
#pragma once

#include "config/options.hpp"
#include "supervise/exit_status.hpp"
#include "supervise/gang.hpp"
#include "supervise/spawner.hpp"
#include "util/env.hpp"
#include "util/error.hpp"

#include <boost/asio/io_context.hpp>

#include <functional>
#include <optional>
#include <string>
#include <vector>

namespace gangrun::remote {

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

struct ToolCommand {
  std::string name;               // for messages: "srun", "ssh to node-2"
  std::vector<std::string> argv;  // argv[0]: the tool's path
};

struct ToolsEnded {
  std::vector<supervise::ExitStatus> statuses;  // one per command, in order
  std::vector<std::size_t> end_order;           // command indices, first ended first
};

// The tools of one job as a gang on the caller's loop, with no loop of its
// own: start() once, then on_signal() for each signal gangrun receives.
// Every handler runs on io, which the caller turns; nothing blocks it.
class ToolGang {
 public:
  using DoneHandler = std::function<void(Expected<ToolsEnded>)>;

  // io and spawner outlive the ToolGang.
  ToolGang(boost::asio::io_context& io, supervise::Spawner& spawner, const ToolRun& how);

  // Starts every command with env and returns at once; on_done gets each
  // command's exit status and the order they ended in, from a handler, once
  // every tool and its shim are gone. A tool ending non-zero stops the
  // others when how.stop_rest_on_failure. Errors: a tool not started (the
  // others, if any, were stopped and waited for first).
  void start(const std::vector<ToolCommand>& commands, const EnvMap& env, DoneHandler on_done);

  // TERM, INT, HUP and QUIT stop the job: SIGTERM to each tool, or its stdin
  // closed (StopBy::closing_stdin); again while stopping, SIGTERM to the
  // tools themselves. USR1 and USR2 go to the tools when
  // how.pass_user_signals, else are ignored with a warning. SIGCHLD reaps
  // stray children of gangrun.
  void on_signal(int signal_number);

  // gangrun's own children that belong to the tools (their shims).
  std::set<pid_t> supervisor_pids() const { return gang_.supervisor_pids(); }

 private:
  void on_gang_done(const supervise::AttemptOutcome& outcome);

  supervise::Spawner& spawner_;
  ToolRun how_;
  logmux::Console console_;  // unused: the tools write to gangrun's stdout and stderr
  supervise::Gang gang_;
  DoneHandler on_done_;
};

// The signals a ToolGang answers (on_signal()).
std::vector<int> tool_signals();

// Runs every command at once with env on a loop of this call's own (the
// real spawner, gangrun's signals), until all have ended: ToolGang::start()
// and on_signal(). Call from the main thread.
Expected<ToolsEnded> supervise_tools(const std::vector<ToolCommand>& commands, const EnvMap& env,
                                     const ToolRun& how);

// The secret of the job this gangrun starts on other hosts: the user's
// (launch/job_secret.hpp), else a new random one, so that a job gangrun
// starts itself is always authenticated. Errors: the user's is unusable.
Expected<std::string> job_secret_for_hosts(const EnvMap& env);

// The run id (--rdzv_id, TORCHELASTIC_RUN_ID) that the command of every
// host gangrun starts over ssh or through mpirun carries, so that all of
// them share one that is this job's alone: nullopt when the user's command
// line gives one (it travels in the arguments); the user's from a config
// file or the environment, or the job's (PBS_JOBID, LSB_JOBID, Slurm's);
// else a fresh random one ("run-" and 16 hex digits), drawn at each call:
// call once per job. (srun's tasks need none: each derives the same one
// from the step it runs in, slurm::run_id.)
struct HostsRunId {
  std::string value;
  bool fresh = false;  // drawn here, not given
};
std::optional<HostsRunId> run_id_for_hosts(const config::Options& options);
// A dry run's last line when run_id was drawn: it differs from run to run.
std::string fresh_run_id_note(const std::optional<HostsRunId>& run_id);

// This gangrun's own executable (/proc/self/exe); "" when unreadable.
std::string path_of_self();
// path_of_self() for the commands a run starts: an error when unreadable.
Expected<std::string> self_for_run();
// path_of_self() for a dry run's text: "gangrun" when unreadable.
std::string self_for_dry_run();

// env for a tool that hands the job's secret to every copy by variable
// (srun --export=ALL, mpirun -x): GANGRUN_JOB_SECRET set to secret, no
// GANGRUN_JOB_SECRET_FILE (a path the other hosts need not have).
EnvMap with_job_secret(const EnvMap& env, const std::string& secret);

// Runs one tool that starts every node's copy itself (srun, mpirun) with the
// job's secret in its environment (with_job_secret) until it ends. The tool
// passes TERM on to every task, and USR1/USR2, the preemption notices of the
// scripts; a second TERM while it stops makes it kill them. Its exit code as
// a shell gives it.
Expected<int> run_one_tool(const std::string& name, const std::vector<std::string>& argv,
                           const EnvMap& env, const std::string& secret);

}  // namespace gangrun::remote
