#include "agent/srun_start.hpp"

#include "launch/program.hpp"
#include "supervise/shim_spawner.hpp"
#include "util/exit_codes.hpp"
#include "util/signals.hpp"
#include "util/strings.hpp"

#include <boost/asio/io_context.hpp>
#include <boost/asio/signal_set.hpp>
#include <spdlog/spdlog.h>

#include <unistd.h>

#include <array>
#include <csignal>
#include <optional>

namespace gangrun::agent {

namespace asio = boost::asio;
using config::Options;
using config::Source;

namespace {

// Options with which the user places this node, which the batch form
// leaves to Slurm.
constexpr std::array<const char*, 4> k_placing_options = {"node_rank", "master_addr",
                                                          "rdzv_endpoint", "standalone"};

// The option's origin when the user gave it (above Slurm's layer); a flag
// counts only when on.
std::optional<std::string> given_by_user(const Options& options, const std::string& name) {
  auto it = options.origins.find(name);
  if (it == options.origins.end() || it->second.source <= Source::slurm) return std::nullopt;
  if (name == "standalone" && !options.standalone) return std::nullopt;
  return "--" + name + " (" + config::to_string(it->second.source) + ")";
}

std::string path_of_self() {
  std::array<char, 4096> buffer{};
  ssize_t length = ::readlink("/proc/self/exe", buffer.data(), buffer.size() - 1);
  if (length <= 0) return {};
  return std::string(buffer.data(), static_cast<std::size_t>(length));
}

}  // namespace

Expected<bool> starts_through_srun(const Options& options) {
  if (!options.slurm_job || options.launcher == Options::Launcher::local) return false;
  const slurm::Job& job = *options.slurm_job;
  std::optional<std::string> placed;
  for (const char* name : k_placing_options) {
    if ((placed = given_by_user(options, name))) break;
  }
  if (options.launcher == Options::Launcher::slurm) {
    if (job.place == slurm::Place::step) {
      return fail_usage(
          "--launcher slurm starts gangrun on every node through srun, but this gangrun already "
          "runs in an srun step (SLURM_STEP_ID=" +
          job.step_id->value +
          "); drop --launcher slurm (inside a step gangrun reads the step's nodes itself)");
    }
    if (placed) {
      return fail_usage("--launcher slurm places every node through srun, so " + *placed +
                        " has no place here; drop it, or use --launcher local to place this node "
                        "yourself");
    }
    return true;
  }
  return job.place == slurm::Place::allocation && job.num_nodes.value > 1 && !placed;
}

std::vector<std::string> srun_command(const Options& options, const std::string& srun,
                                      const std::string& self,
                                      const std::vector<std::string>& arguments) {
  const std::string nodes = std::to_string(options.nnodes);
  std::vector<std::string> command = {
      srun,
      "--nodes=" + nodes,
      "--ntasks=" + nodes,
      "--ntasks-per-node=1",
      // The job's variables (SLURM_NTASKS, SLURM_CPUS_PER_TASK, ...) are
      // srun's inputs too; the options above win over them, and these give
      // the agent every CPU and GPU the job has on its node.
      "--whole",
      "--cpu-bind=none",
      "--kill-on-bad-exit=0",
      "--export=ALL",
  };
  command.insert(command.end(), options.launcher_args.begin(), options.launcher_args.end());
  command.push_back(self);
  command.insert(command.end(), arguments.begin(), arguments.end());
  return command;
}

std::string srun_dry_run_text(const std::vector<std::string>& command) {
  std::vector<std::string> quoted;
  quoted.reserve(command.size());
  for (const std::string& word : command) quoted.push_back(strings::shell_quote(word));
  return "gangrun dry run: in this Slurm allocation gangrun would start itself on every node, "
         "one srun task per node:\n  " +
         strings::join(quoted, " ") +
         "\n(Run as it is inside the allocation, that command prints each node's own dry "
         "run.)\n";
}

Expected<int> run_through_srun(const Options& options, const std::vector<std::string>& arguments,
                               const EnvMap& env) {
  GANGRUN_TRY_ASSIGN(srun, launch::find_executable("srun", env, "Slurm's srun"));
  std::string self = path_of_self();
  if (self.empty()) return fail(ErrorCode::internal, "cannot read /proc/self/exe");
  std::vector<std::string> command = srun_command(options, *srun, self, arguments);
  spdlog::info("starting gangrun on {} nodes of Slurm job {}: {}", options.nnodes,
               options.slurm_job->job_id.value, strings::join(command, " "));

  std::signal(SIGPIPE, SIG_IGN);
  asio::io_context io;
  asio::signal_set caught(io, SIGTERM, SIGINT, SIGHUP);
  caught.add(SIGQUIT);
  caught.add(SIGUSR1);
  caught.add(SIGUSR2);
  caught.add(SIGCHLD);
  supervise::ShimSpawner spawner(io);

  std::optional<supervise::ExitStatus> srun_status;
  std::optional<Error> start_error;
  Expected<std::shared_ptr<supervise::WorkerProcess>> srun_process =
      fail(ErrorCode::internal, "srun not started yet");
  supervise::WorkerEvents events{
      .on_running = [](pid_t) {},
      .on_start_failed =
          [&](const Error& error) {
            start_error = error;
            (*srun_process)->end_tree();
          },
      // srun is gone: whatever is left of its tree goes too, then the shim.
      .on_exited =
          [&](supervise::ExitStatus status, long) {
            srun_status = status;
            (*srun_process)->end_tree();
          },
      .on_supervisor_gone =
          [&](supervise::ExitStatus status, long) {
            if (!srun_status && !start_error) srun_status = status;
            io.stop();
          },
  };
  supervise::SpawnSpec spec{.executable = *srun, .argv = command, .env = env};
  srun_process = spawner.start(spec, std::move(events));
  if (!srun_process) return tl::unexpected(srun_process.error());

  std::function<void()> arm = [&] {
    caught.async_wait([&](const boost::system::error_code& error, int signal_number) {
      if (error) return;
      if (signal_number == SIGCHLD) {
        spawner.reap_strays({(*srun_process)->supervisor_pid()});
      } else if (signal_number == SIGUSR1 || signal_number == SIGUSR2) {
        spdlog::info("passing {} on to every node", signals::name(signal_number));
        (*srun_process)->signal(signal_number);
      } else {
        spdlog::info("{}: stopping the job on every node", signals::name(signal_number));
        (*srun_process)->signal(SIGTERM);
      }
      arm();
    });
  };
  arm();
  io.run();
  if (start_error) return tl::unexpected(*start_error);
  return srun_status ? srun_status->shell_code() : exit_codes::k_system_failure;
}

}  // namespace gangrun::agent
