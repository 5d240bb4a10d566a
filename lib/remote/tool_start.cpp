#include "remote/tool_start.hpp"

#include "config/option_names.hpp"
#include "launch/job_secret.hpp"
#include "remote/remote_start.hpp"
#include "rendezvous/signing.hpp"
#include "supervise/shim_spawner.hpp"
#include "util/exit_codes.hpp"
#include "util/signals.hpp"

#include <boost/asio/signal_set.hpp>
#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include <unistd.h>

#include <array>
#include <csignal>
#include <cstdint>
#include <optional>
#include <random>

namespace gangrun::remote {

namespace asio = boost::asio;

namespace {

// The tools stop the job on the other nodes and must be left to finish
// that: no SIGKILL after a time; a second stop is SIGTERM to the tools.
supervise::GangSettings tool_gang_settings(const ToolRun& how) {
  supervise::GangSettings settings;
  settings.term_timeout = std::nullopt;
  settings.second_stop_signal = SIGTERM;
  settings.failure_window =
      how.stop_rest_on_failure ? std::chrono::milliseconds(0) : supervise::k_until_all_ended;
  return settings;
}

}  // namespace

std::string path_of_self() {
  std::array<char, 4096> buffer{};
  ssize_t length = ::readlink("/proc/self/exe", buffer.data(), buffer.size() - 1);
  if (length <= 0) return {};
  return std::string(buffer.data(), static_cast<std::size_t>(length));
}

Expected<std::string> self_for_run() {
  std::string self = path_of_self();
  if (self.empty()) return fail(ErrorCode::internal, "cannot read /proc/self/exe");
  return self;
}

std::string self_for_dry_run() {
  std::string self = path_of_self();
  return self.empty() ? "gangrun" : self;
}

EnvMap with_job_secret(const EnvMap& env, const std::string& secret) {
  EnvMap tool_env = env;
  tool_env.erase(std::string(launch::k_job_secret_file_variable));
  tool_env[std::string(launch::k_job_secret_variable)] = secret;
  return tool_env;
}

Expected<int> run_one_tool(const std::string& name, const std::vector<std::string>& argv,
                           const EnvMap& env, const std::string& secret) {
  GANGRUN_TRY_ASSIGN(statuses, supervise_tools({ToolCommand{.name = name, .argv = argv}},
                                               with_job_secret(env, secret),
                                               ToolRun{.stop_by = StopBy::signal_term,
                                                       .first_stdin_line = "",
                                                       .pass_user_signals = true}));
  return statuses->statuses.front().shell_code();
}

ToolGang::ToolGang(asio::io_context& io, supervise::Spawner& spawner, const ToolRun& how)
    : spawner_(spawner), how_(how), gang_(io, console_, spawner, tool_gang_settings(how)) {}

void ToolGang::start(const std::vector<ToolCommand>& commands, const EnvMap& env,
                     DoneHandler on_done) {
  on_done_ = std::move(on_done);
  std::vector<supervise::WorkerLaunch> launches(commands.size());
  for (std::size_t i = 0; i < commands.size(); ++i) {
    supervise::WorkerLaunch& launch = launches[i];
    launch.rank = static_cast<int>(i);
    launch.local_rank = static_cast<int>(i);
    launch.name = commands[i].name;
    launch.spawn.executable = commands[i].argv.front();
    launch.spawn.argv = commands[i].argv;
    launch.spawn.env = env;
    if (how_.stop_by == StopBy::closing_stdin) launch.stdin_first_line = how_.first_stdin_line;
  }
  gang_.start(std::move(launches),
              [this](const supervise::AttemptOutcome& outcome) { on_gang_done(outcome); });
}

void ToolGang::on_gang_done(const supervise::AttemptOutcome& outcome) {
  DoneHandler done = std::move(on_done_);
  for (const supervise::WorkerOutcome& tool : outcome.workers) {
    if (tool.spawn_error) return done(tl::unexpected(*tool.spawn_error));
  }
  ToolsEnded ended;
  for (const supervise::WorkerOutcome& tool : outcome.workers) {
    ended.statuses.push_back(
        tool.started ? tool.status : supervise::ExitStatus{.code = exit_codes::k_system_failure});
  }
  ended.end_order = outcome.end_order;
  done(std::move(ended));
}

void ToolGang::on_signal(int signal_number) {
  if (signal_number == SIGCHLD) {
    // Shims are reaped by their own handlers; anything else that ended is a
    // stray (a shim whose tool could not start).
    spawner_.reap_strays(gang_.supervisor_pids());
  } else if (signal_number == SIGUSR1 || signal_number == SIGUSR2) {
    if (how_.pass_user_signals) {
      spdlog::info("passing {} on to every node", signals::name(signal_number));
      gang_.forward(signal_number);
    } else {
      spdlog::warn("{} cannot be passed on to the other hosts; ignored",
                   signals::name(signal_number));
    }
  } else {
    spdlog::info("{}: stopping the job on every node", signals::name(signal_number));
    gang_.stop(SIGTERM);
  }
}

std::vector<int> tool_signals() {
  return {SIGTERM, SIGINT, SIGHUP, SIGQUIT, SIGUSR1, SIGUSR2, SIGCHLD};
}

Expected<ToolsEnded> supervise_tools(const std::vector<ToolCommand>& commands, const EnvMap& env,
                                     const ToolRun& how) {
  std::signal(SIGPIPE, SIG_IGN);
  asio::io_context io;
  asio::signal_set caught(io);
  for (int signal_number : tool_signals()) caught.add(signal_number);
  supervise::ShimSpawner spawner(io);
  ToolGang tools(io, spawner, how);
  std::optional<Expected<ToolsEnded>> ended;
  tools.start(commands, env, [&](Expected<ToolsEnded> result) {
    ended = std::move(result);
    io.stop();
  });
  std::function<void()> arm = [&] {
    caught.async_wait([&](const boost::system::error_code& error, int signal_number) {
      if (error) return;
      tools.on_signal(signal_number);
      arm();
    });
  };
  arm();
  io.run();
  if (!ended) return fail(ErrorCode::internal, "the tools' loop ended before the tools did");
  return std::move(*ended);
}

std::optional<HostsRunId> run_id_for_hosts(const config::Options& options) {
  auto origin = options.origins.find(std::string(config::opt::rdzv_id));
  if (origin != options.origins.end()) {
    const config::Source source = origin->second.source;
    if (source == config::Source::command_line) return std::nullopt;
    // A config file or a variable of this host need not reach the others;
    // nor does a job's (PBS_JOBID, a Slurm step's) where they run outside it.
    if (source != config::Source::default_value) {
      return HostsRunId{.value = options.rdzv_id, .fresh = false};
    }
  }
  // torchrun's default, "none", would be every such job's: two on the same
  // hosts would share run directories and a store's rounds.
  std::random_device random;
  std::uint64_t bits = (static_cast<std::uint64_t>(random()) << 32U) | random();
  return HostsRunId{.value = fmt::format("run-{:016x}", bits), .fresh = true};
}

std::string fresh_run_id_note(const std::optional<HostsRunId>& run_id) {
  if (!run_id || !run_id->fresh) return "";
  return "(The run id " + run_id->value +
         " was drawn for this dry run; each run draws its own, the same on every host. Give " +
         self_option(config::opt::rdzv_id) + " ID to choose it.)\n";
}

Expected<std::string> job_secret_for_hosts(const EnvMap& env) {
  GANGRUN_TRY_ASSIGN(secret, launch::read_job_secret(env));
  if (*secret) return (*secret)->value;
  return rendezvous::new_job_secret();
}

}  // namespace gangrun::remote
