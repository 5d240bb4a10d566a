#include "agent/interpreter_probe.hpp"

#include "util/fd.hpp"

#include <boost/asio/post.hpp>

#include <fcntl.h>

namespace gangrun::agent {
namespace asio = boost::asio;

namespace {

// Exit 3 when the interpreter finds no module of the name given.
constexpr const char* k_find_spec_probe =
    "import importlib.util, sys\nsys.exit(0 if importlib.util.find_spec(sys.argv[1]) else 3)";
constexpr int k_not_found = 3;

}  // namespace

InterpreterProbe::InterpreterProbe(asio::io_context& io, supervise::Spawner& spawner,
                                   std::chrono::milliseconds per_package)
    : io_(io), spawner_(spawner), per_package_(per_package), deadline_(io) {}

void InterpreterProbe::start(const std::string& python, const EnvMap& env,
                             std::vector<std::string> packages, DoneHandler done) {
  python_ = python;
  env_ = env;
  packages_ = std::move(packages);
  done_ = std::move(done);
  asio::post(io_, [this] { ask(0); });
}

void InterpreterProbe::ask(std::size_t index) {
  if (index == packages_.size()) return finish(std::nullopt);
  // The probe prints nothing worth keeping on stdout; its stderr (a broken
  // interpreter's complaint) is gangrun's.
  UniqueFd null_out(::open("/dev/null", O_WRONLY | O_CLOEXEC));
  supervise::SpawnSpec spec{.executable = python_,
                            .argv = {python_, "-c", k_find_spec_probe, packages_[index]},
                            .env = env_,
                            .stdin_fd = -1,
                            .stdout_fd = null_out.get(),
                            .stderr_fd = -1,
                            .cpus = {}};
  status_.reset();
  supervise::WorkerEvents events{
      .on_running = [](pid_t) {},
      .on_start_failed = [this](const Error&) { child_->end_tree(); },
      .on_exited =
          [this](supervise::ExitStatus status, long) {
            status_ = status;
            child_->end_tree();
          },
      .on_supervisor_gone = [this, index](supervise::ExitStatus, long) { on_child_gone(index); },
  };
  auto started = spawner_.start(spec, std::move(events));
  if (!started) return finish(std::nullopt);
  child_ = std::move(*started);
  deadline_.expires_after(per_package_);
  deadline_.async_wait([this](const boost::system::error_code& error) {
    // Still running: the shim kills it, and on_child_gone finds no status.
    if (!error && child_) child_->end_tree();
  });
}

void InterpreterProbe::on_child_gone(std::size_t index) {
  deadline_.cancel();
  // The events came from this child's handlers; it is let go of after them.
  asio::post(io_, [this, index, child = std::move(child_)] {
    if (!status_ || status_->kind != supervise::ExitStatus::Kind::exited) {
      return finish(std::nullopt);
    }
    if (status_->code == k_not_found) return finish(packages_[index]);
    if (status_->code != 0) return finish(std::nullopt);
    ask(index + 1);
  });
}

void InterpreterProbe::finish(std::optional<std::string> unimportable) {
  DoneHandler done = std::move(done_);
  done_ = nullptr;
  done(std::move(unimportable));
}

std::set<pid_t> InterpreterProbe::supervisor_pids() const {
  if (!child_) return {};
  return {child_->supervisor_pid()};
}

}  // namespace gangrun::agent
