#include "agent/tool_start.hpp"

#include "launch/job_secret.hpp"
#include "logmux/write_all.hpp"
#include "rendezvous/signing.hpp"
#include "supervise/shim_spawner.hpp"
#include "util/exit_codes.hpp"
#include "util/fd.hpp"
#include "util/signals.hpp"

#include <boost/asio/io_context.hpp>
#include <boost/asio/signal_set.hpp>
#include <spdlog/spdlog.h>

#include <fcntl.h>
#include <unistd.h>

#include <array>
#include <csignal>
#include <memory>
#include <optional>
#include <set>

namespace gangrun::agent {

namespace asio = boost::asio;

namespace {

struct Tool {
  std::shared_ptr<supervise::WorkerProcess> process;
  UniqueFd stdin_writer;  // StopBy::closing_stdin: closed to stop
  std::optional<supervise::ExitStatus> status;
  bool gone = false;
};

}  // namespace

std::string path_of_self() {
  std::array<char, 4096> buffer{};
  ssize_t length = ::readlink("/proc/self/exe", buffer.data(), buffer.size() - 1);
  if (length <= 0) return {};
  return std::string(buffer.data(), static_cast<std::size_t>(length));
}

Expected<ToolsEnded> run_tools(const std::vector<std::vector<std::string>>& commands,
                               const EnvMap& env, const ToolRun& how) {
  std::signal(SIGPIPE, SIG_IGN);
  asio::io_context io;
  asio::signal_set caught(io, SIGTERM, SIGINT, SIGHUP);
  caught.add(SIGQUIT);
  caught.add(SIGUSR1);
  caught.add(SIGUSR2);
  caught.add(SIGCHLD);
  supervise::ShimSpawner spawner(io);

  std::vector<Tool> tools(commands.size());
  ToolsEnded ended;
  std::optional<Error> start_error;
  std::size_t started = 0;
  std::size_t gone = 0;
  bool stopping = false;

  auto stop_all = [&] {
    for (Tool& tool : tools) {
      if (!tool.process || tool.gone) continue;
      if (how.stop_by == StopBy::closing_stdin && !stopping) {
        tool.stdin_writer.reset();
      } else {
        tool.process->signal(SIGTERM);
      }
    }
    stopping = true;
  };
  auto finish_one = [&] {
    if (++gone == started) io.stop();
  };

  for (std::size_t i = 0; i < commands.size() && !start_error; ++i) {
    Tool& tool = tools[i];
    UniqueFd stdin_reader;
    if (how.stop_by == StopBy::closing_stdin) {
      std::array<int, 2> ends{};
      if (::pipe2(ends.data(), O_CLOEXEC) != 0) {
        start_error = Error(ErrorCode::internal, "cannot make a pipe for " + commands[i][0]);
        break;
      }
      stdin_reader = UniqueFd(ends[0]);
      tool.stdin_writer = UniqueFd(ends[1]);
      // An empty pipe holds far more than one line: this never blocks.
      if (!how.first_stdin_line.empty() &&
          logmux::write_all(tool.stdin_writer.get(), how.first_stdin_line + "\n") != 0) {
        start_error = Error(ErrorCode::internal, "cannot write to the stdin of " + commands[i][0]);
        break;
      }
    }
    supervise::WorkerEvents events{
        .on_running = [](pid_t) {},
        .on_start_failed =
            [&, i](const Error& error) {
              if (!start_error) start_error = error;
              tools[i].process->end_tree();
              stop_all();
            },
        // The tool is gone: whatever is left of its tree goes too, then the shim.
        .on_exited =
            [&, i](supervise::ExitStatus status, long) {
              tools[i].status = status;
              ended.end_order.push_back(i);
              tools[i].process->end_tree();
              if (how.stop_rest_on_failure && status.shell_code() != 0 && !stopping) stop_all();
            },
        .on_supervisor_gone =
            [&, i](supervise::ExitStatus status, long) {
              Tool& done = tools[i];
              if (!done.status && !start_error) {
                done.status = status;
                ended.end_order.push_back(i);
              }
              done.gone = true;
              done.stdin_writer.reset();
              finish_one();
            },
    };
    // Field by field: the spec grows fields a tool has no use for.
    supervise::SpawnSpec spec;
    spec.executable = commands[i][0];
    spec.argv = commands[i];
    spec.env = env;
    if (stdin_reader.valid()) spec.stdin_fd = stdin_reader.get();
    auto process = spawner.start(spec, std::move(events));
    if (!process) {
      start_error = process.error();
      break;
    }
    tool.process = *process;
    ++started;
  }
  if (start_error) stop_all();

  std::function<void()> arm = [&] {
    caught.async_wait([&](const boost::system::error_code& error, int signal_number) {
      if (error) return;
      if (signal_number == SIGCHLD) {
        std::set<pid_t> keep;
        for (const Tool& tool : tools) {
          if (tool.process) keep.insert(tool.process->supervisor_pid());
        }
        spawner.reap_strays(keep);
      } else if (signal_number == SIGUSR1 || signal_number == SIGUSR2) {
        if (how.pass_user_signals) {
          spdlog::info("passing {} on to every node", signals::name(signal_number));
          for (Tool& tool : tools) {
            if (tool.process && !tool.gone) tool.process->signal(signal_number);
          }
        } else {
          spdlog::warn("{} cannot be passed on to the other hosts; ignored",
                       signals::name(signal_number));
        }
      } else {
        spdlog::info("{}: stopping the job on every node", signals::name(signal_number));
        stop_all();
      }
      arm();
    });
  };
  arm();
  if (started > 0) io.run();
  if (start_error) return tl::unexpected(*start_error);
  for (const Tool& tool : tools) {
    ended.statuses.push_back(
        tool.status.value_or(supervise::ExitStatus{.code = exit_codes::k_system_failure}));
  }
  return ended;
}

Expected<std::string> job_secret_for_hosts(const EnvMap& env) {
  GANGRUN_TRY_ASSIGN(secret, launch::read_job_secret(env));
  if (*secret) return (*secret)->value;
  return rendezvous::new_job_secret();
}

}  // namespace gangrun::agent
