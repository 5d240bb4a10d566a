#include "doctor/stack_tool.hpp"

#include "doctor/proc_stat.hpp"
#include "launch/program.hpp"
#include "supervise/process.hpp"

#include <fstream>
#include <sstream>

namespace gangrun::doctor {

namespace {

constexpr const char* k_tool_name = "py-spy";

std::optional<std::string> read_first_line(const std::string& path) {
  std::ifstream in(path);
  std::string line;
  if (!in || !std::getline(in, line)) return std::nullopt;
  return line;
}

bool mentions(std::string_view text, std::string_view what) {
  return text.find(what) != std::string_view::npos;
}

}  // namespace

std::optional<std::string> find_stack_tool(const std::optional<std::string>& configured,
                                           const std::optional<std::string>& interpreter_dir,
                                           const EnvMap& env) {
  if (configured) {
    auto found = launch::find_executable(*configured, env, "stack tool");
    return found ? std::optional<std::string>(*found) : std::nullopt;
  }
  if (interpreter_dir) {
    auto beside = launch::find_executable(*interpreter_dir + "/" + k_tool_name, env, "stack tool");
    if (beside) return *beside;
  }
  // An activated environment whose python the workers reach another way
  // (a link to the system's, a wrapper script) still holds its own tools.
  if (auto venv = env_lookup(env, "VIRTUAL_ENV"); venv && !venv->empty()) {
    auto in_venv = launch::find_executable(*venv + "/bin/" + k_tool_name, env, "stack tool");
    if (in_venv) return *in_venv;
  }
  auto on_path = launch::find_executable(k_tool_name, env, "stack tool");
  return on_path ? std::optional<std::string>(*on_path) : std::nullopt;
}

std::string missing_tool_hint() {
  return "py-spy, which reads a Python process's stacks, was not found (next to the workers' "
         "interpreter, in $VIRTUAL_ENV/bin or on PATH); install it with `pip install py-spy` in "
         "the job's environment";
}

std::vector<std::string> dump_command(const std::string& tool, long pid, bool native,
                                      bool nonblocking) {
  std::vector<std::string> command = {tool, "dump", "--json", "--pid", std::to_string(pid)};
  if (native) command.emplace_back("--native");
  if (nonblocking) command.emplace_back("--nonblocking");
  return command;
}

RankStacks rank_to_read(int rank, std::string host, long pid, const std::string& proc_root) {
  RankStacks read;
  read.rank = rank;
  read.host = std::move(host);
  read.pid = pid;
  read.stopped = stopped_state(pid, proc_root);
  return read;
}

std::vector<std::string> dump_command_for(const std::string& tool, const RankStacks& rank,
                                          bool native, bool nonblocking) {
  return dump_command(tool, rank.pid, native, nonblocking || rank.stopped.has_value());
}

std::string explain_failure(std::string_view output, std::optional<int> ptrace_scope) {
  // No pid in the reasons: ranks that fail alike are grouped as one.
  if (mentions(output, "No such process") || mentions(output, "Failed to find process") ||
      mentions(output, "Failed to get process executable name")) {
    return "it has ended";
  }
  if (mentions(output, "Permission denied") || mentions(output, "Operation not permitted")) {
    if (ptrace_scope && *ptrace_scope >= 2) {
      return "not allowed to read it: kernel.yama.ptrace_scope is " +
             std::to_string(*ptrace_scope) +
             ", which lets only root (scope 2) or no one (scope 3) attach to a process; ask for "
             "`sysctl kernel.yama.ptrace_scope=1` (or 0), or run the capture as root";
    }
    if (ptrace_scope == 1) {
      return "not allowed to read it: kernel.yama.ptrace_scope is 1, which lets only a "
             "process's ancestors attach to it (gangrun's own hang watch may: the workers name "
             "gangrun their tracer); from another terminal run it with sudo, or ask for "
             "`sysctl kernel.yama.ptrace_scope=0`";
    }
    return "not allowed to read it: the stack tool needs ptrace permission over the worker (the "
           "same user, and in a container CAP_SYS_PTRACE: docker run --cap-add SYS_PTRACE)";
  }
  std::string first_line(output.substr(0, output.find('\n')));
  if (mentions(output, "python") || mentions(output, "Python")) {
    return "not a Python process the stack tool can read (" + first_line + ")";
  }
  return "the stack tool failed" + (first_line.empty() ? "" : ": " + first_line);
}

std::optional<int> read_ptrace_scope(const std::string& proc_root) {
  auto line = read_first_line(proc_root + "/sys/kernel/yama/ptrace_scope");
  if (!line) return std::nullopt;
  try {
    return std::stoi(*line);
  } catch (const std::exception&) {
    return std::nullopt;
  }
}

std::optional<std::string> proc_state(long pid, const std::string& proc_root) {
  const std::string dir = proc_root + "/" + std::to_string(pid);
  std::vector<std::string> fields = proc_stat_fields(pid, proc_root);
  if (fields.empty() || fields[0].empty()) return std::nullopt;
  char state = fields[0][0];
  std::string text;
  switch (state) {
    case 'R':
      return "running";
    case 'S':
      text = "sleeping";
      break;
    case 'D':
      text = "in uninterruptible wait (D)";
      break;
    case 'T':
    case 't':
      text = "stopped";
      break;
    case 'Z':
      return "a zombie (exited, not yet reaped)";
    default:
      return std::string("in state ") + state;
  }
  auto wchan = read_first_line(dir + "/wchan");
  if (wchan && !wchan->empty() && *wchan != "0") text += " in " + *wchan;
  return text;
}

std::string without_stack(std::string reason, long pid, const std::string& proc_root) {
  if (auto state = proc_state(pid, proc_root)) return reason + "; the process is " + *state;
  return reason;
}

Expected<std::vector<ThreadStack>> capture_stacks(const std::vector<std::string>& command, long pid,
                                                  const EnvMap& env,
                                                  std::chrono::milliseconds timeout) {
  supervise::SpawnSpec spec;
  spec.executable = command.at(0);
  spec.argv = command;
  spec.env = env;
  spec.stderr_fd = supervise::k_stderr_to_output;  // its errors say why it failed
  GANGRUN_TRY_ASSIGN(run, supervise::run_to_completion(spec, timeout));
  if (!run->status) {
    return fail(ErrorCode::io, "the stack tool did not finish reading pid " + std::to_string(pid) +
                                   " within " + std::to_string(timeout.count()) + " ms");
  }
  return threads_from_dump(run->output);
}

Expected<std::vector<ThreadStack>> threads_from_dump(std::string_view output) {
  // Its stderr shares the output: a warning may come before the JSON list,
  // which starts a line of its own.
  std::size_t line_before = output.starts_with('[') ? std::string_view::npos : output.find("\n[");
  auto threads = parse_py_spy_json(
      line_before == std::string_view::npos ? output : output.substr(line_before + 1));
  if (!threads) return fail(ErrorCode::io, explain_failure(output, read_ptrace_scope()));
  return threads;
}

}  // namespace gangrun::doctor
