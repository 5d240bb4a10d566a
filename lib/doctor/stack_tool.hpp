// The stack tool: finding py-spy, asking it for one process's stacks, and
// turning its failures into what the user should do. gangrun never reads
// another process's memory itself; the tool is an optional runtime
// dependency, and without it gangrun still says what /proc tells (proc_state).
#pragma once

#include "doctor/stack_groups.hpp"
#include "doctor/stacks.hpp"
#include "util/env.hpp"
#include "util/error.hpp"

#include <chrono>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace gangrun::doctor {

// Where py-spy is, in this order: `configured` (an option; it must be an
// executable file), next to the workers' interpreter (a virtual environment's
// bin/ holds both; the interpreter is the program itself when that is a
// python, launch/program.hpp), in $VIRTUAL_ENV/bin, then PATH. nullopt when
// none has it.
std::optional<std::string> find_stack_tool(const std::optional<std::string>& configured,
                                           const std::optional<std::string>& interpreter_dir,
                                           const EnvMap& env);

// What to tell a user who has no stack tool.
std::string missing_tool_hint();

// `py-spy dump --json --pid PID` (with --native: C and C++ frames too; with
// --nonblocking: read without pausing the process, for sampling, at the
// risk of a torn stack now and then).
std::vector<std::string> dump_command(const std::string& tool, long pid, bool native,
                                      bool nonblocking = false);

// A rank about to be read: its rank, host and pid, and whether /proc shows
// it stopped (RankStacks::stopped); nothing read yet.
RankStacks rank_to_read(int rank, std::string host, long pid,
                        const std::string& proc_root = "/proc");

// The command that reads rank (rank_to_read): dump_command, and without
// pausing a stopped rank whatever nonblocking says. py-spy's pausing read
// attaches with ptrace and waits for the process to stop for it: a process
// in a signal-stop already never reports that stop ("Failed to suspend
// process"), and one a debugger holds cannot be attached to at all. Reading
// its memory needs no attaching, and a stopped process cannot change the
// stack while it is read.
std::vector<std::string> dump_command_for(const std::string& tool, const RankStacks& rank,
                                          bool native, bool nonblocking = false);

// The reason, and the fix, for a dump that failed with `output` (the tool's
// stdout and stderr). ptrace_scope is the value of Yama's setting, or nullopt
// where the kernel has none.
std::string explain_failure(std::string_view output, std::optional<int> ptrace_scope);

// Yama's kernel.yama.ptrace_scope, read under proc_root ("/proc" in use).
std::optional<int> read_ptrace_scope(const std::string& proc_root = "/proc");

// "sleeping in futex_wait_queue", "running", "stopped in do_signal_stop":
// the process's state and wait channel from /proc, for when no stack can be
// read; nullopt when the process is gone.
std::optional<std::string> proc_state(long pid, const std::string& proc_root = "/proc");

// The threads in what `dump_command` printed on its stdout and stderr
// together, or why there are none (explain_failure).
Expected<std::vector<ThreadStack>> threads_from_dump(std::string_view output);

// "REASON; the process is sleeping in do_wait": why a rank has no stack, and
// what /proc says of it (only the reason when the process is gone).
std::string without_stack(std::string reason, long pid, const std::string& proc_root = "/proc");

// Runs command (dump_command_for: the tool and its arguments) and parses
// what it printed, within timeout; pid is the process it reads.
Expected<std::vector<ThreadStack>> capture_stacks(const std::vector<std::string>& command, long pid,
                                                  const EnvMap& env,
                                                  std::chrono::milliseconds timeout);

}  // namespace gangrun::doctor
