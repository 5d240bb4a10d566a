// The ways gangrun starts itself on other nodes, each one RemoteStart: srun
// in a Slurm allocation (srun_start.hpp), ssh to every host of a hostfile
// (ssh_start.hpp), Open MPI's mpirun, one task per host (mpirun_start.hpp).
// Each builds the gangrun command lines the other nodes run and supervises
// the tools that carry them as one gang (tool_start.hpp). One table holds
// them, in the order a launch asks them; a new way is one more row, and the
// commands that launch never name a way.
#pragma once

#include "config/options.hpp"
#include "util/env.hpp"
#include "util/error.hpp"

#include <optional>
#include <ostream>
#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace gangrun::remote {

// One way, as the launch asks it: every question takes gangrun's options and
// its arguments as given (argv without argv[0]), from which each way builds
// the command lines of the other nodes.
struct RemoteStart {
  // The tool, for messages and tests: "srun", "ssh", "mpirun".
  std::string_view name;
  // Whether the options ask for this way. A usage error when they ask for it
  // where it cannot work, or where another way could place the nodes too.
  Expected<bool> (*applies)(const config::Options& options);
  // What --dry-run prints: the tool's command lines a run would start.
  // Errors: those found before any tool starts (a .deepspeed_env file that
  // cannot be read).
  Expected<std::string> (*dry_run)(const config::Options& options,
                                   const std::vector<std::string>& arguments, const EnvMap& env);
  // Runs the tool's command lines until every node's copy has ended, passing
  // gangrun's signals on; the job's exit code. Call from the main thread.
  Expected<int> (*run)(const config::Options& options, const std::vector<std::string>& arguments,
                       const EnvMap& env);
  // Whether `gangrun preflight` starts itself this way too; where it does
  // not (mpirun), preflight checks this node alone.
  bool runs_preflight = false;
};

// Every way, in the order a launch asks them: the first that applies is the
// one, and a usage error from an earlier one is the error.
std::span<const RemoteStart> remote_starts();

// The first way that applies to options; nullptr when none does (gangrun
// runs this node's agent itself).
Expected<const RemoteStart*> remote_start_for(const config::Options& options);

// The launch's one call: runs the way that applies, after checking here what
// every node would fail on (the program the workers run: the nodes share the
// working directory and the script, so a misspelled script is one error here,
// not one from each node after it started). Under --dry-run its text goes to
// out instead. nullopt when no way applies; else the job's exit code.
Expected<std::optional<int>> start_remotely(const config::Options& options,
                                            const std::vector<std::string>& arguments,
                                            const EnvMap& env, std::ostream& out);

// One of gangrun's own options as a word of the command lines built for the
// other nodes, or of a message: "--" and its name, an opt:: constant
// (config/option_names.hpp), so that a renamed option cannot leave a stale
// spelling here.
std::string self_option(std::string_view name);

}  // namespace gangrun::remote
