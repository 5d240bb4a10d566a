#include "supervise/shim_spawner.hpp"

#include "supervise/orphans.hpp"
#include "supervise/shim.hpp"

#include <boost/asio/posix/stream_descriptor.hpp>

#include <sys/resource.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <csignal>
#include <exception>

namespace gangrun::supervise {
namespace asio = boost::asio;

namespace {

// One worker under its shim. Signals go into the control pipe; the report
// pipe and the shim's exit (its pidfd, or the exit pipe) are watched on the loop. Every handler
// holds a weak reference, so letting go of the object detaches them.
class ShimWorker final : public WorkerProcess, public std::enable_shared_from_this<ShimWorker> {
 public:
  ShimWorker(asio::io_context& io, Child child, SpawnSpec spec, WorkerEvents events)
      : spec_(std::move(spec)),
        events_(std::move(events)),
        shim_pid_(child.shim_pid),
        shim_exit_is_pidfd_(child.shim_exit_is_pidfd),
        control_(std::move(child.control)),
        // Owned by the stream descriptors from here on; if the second one
        // throws, the first closes its descriptor and `child` the other.
        shim_exit_(io, child.shim_exit.release()),
        report_(io, child.report.release()) {}

  void watch() {
    wait_for_report();
    wait_for_shim_exit();
  }

  void signal(int signal_number) override {
    if (!control_.valid()) return;
    const auto request = static_cast<unsigned char>(signal_number);
    // A full pipe would mean 64 KiB of requests the shim has not read yet;
    // dropping one more changes nothing.
    (void)!::write(control_.get(), &request, 1);
  }

  void end_tree() override { control_.reset(); }

  void kill_supervisor() override {
    if (!shim_running_) return;
    // Without a pidfd the pid is as safe: gangrun has not reaped the shim, so its pid cannot
    // have been given to another process.
    if (shim_exit_is_pidfd_) {
      ::syscall(SYS_pidfd_send_signal, shim_exit_.native_handle(), SIGKILL, nullptr, 0);
    } else {
      ::kill(shim_pid_, SIGKILL);
    }
  }

  pid_t supervisor_pid() const override { return shim_pid_; }

 private:
  void wait_for_report() {
    report_.async_wait(asio::posix::stream_descriptor::wait_read,
                       [weak = weak_from_this()](const boost::system::error_code& error) {
                         auto self = weak.lock();
                         if (!self || error) return;
                         if (self->read_records()) self->wait_for_report();
                       });
  }

  void wait_for_shim_exit() {
    shim_exit_.async_wait(asio::posix::stream_descriptor::wait_read,
                          [weak = weak_from_this()](const boost::system::error_code& error) {
                            auto self = weak.lock();
                            if (self && !error) self->on_shim_exit();
                          });
  }

  // Handles every record the pipe holds now; false once it reached EOF (the
  // shim is gone: on_shim_exit has the rest).
  bool read_records() {
    while (report_.is_open()) {
      ssize_t got = ::read(report_.native_handle(), &record_, sizeof record_);
      if (got < 0 && errno == EINTR) continue;
      if (got < 0 && errno == EAGAIN) return true;
      if (got != static_cast<ssize_t>(sizeof record_)) {
        boost::system::error_code ignored;
        report_.close(ignored);
        return false;
      }
      on_record();
    }
    return false;
  }

  void on_record() {
    switch (record_.kind) {
      case ShimRecord::started:
        events_.on_running(record_.value);
        return;
      case ShimRecord::exited:
        events_.on_exited(ExitStatus::from_wait_status(record_.value),
                          static_cast<long>(record_.peak_rss_kib));
        return;
      default:  // exec_failed, fork_failed
        events_.on_start_failed(start_failure(spec_, record_));
        return;
    }
  }

  void on_shim_exit() {
    int wait_status = 0;
    rusage usage{};
    // The loop may wake a handler without the descriptor being ready: a spurious wake-up.
    // The pidfd is level-triggered, so wait4 says whether the shim is gone. The exit pipe
    // says so by its end of file, which comes as the exiting shim closes its descriptors,
    // just before it can be reaped: wait for that moment, and only then.
    if (!shim_exit_is_pidfd_ && !exit_pipe_ended()) {
      wait_for_shim_exit();
      return;
    }
    pid_t reaped = ::wait4(shim_pid_, &wait_status, shim_exit_is_pidfd_ ? WNOHANG : 0, &usage);
    while (reaped < 0 && errno == EINTR) reaped = ::wait4(shim_pid_, &wait_status, 0, &usage);
    if (reaped == 0) {
      wait_for_shim_exit();
      return;
    }
    shim_running_ = false;
    boost::system::error_code ignored;
    shim_exit_.close(ignored);
    // What the shim wrote before it exited may not have been read yet.
    auto keep_alive = shared_from_this();
    read_records();
    events_.on_supervisor_gone(ExitStatus::from_wait_status(wait_status), usage.ru_maxrss);
  }

  // The exit pipe is non-blocking, and the shim never writes to it.
  bool exit_pipe_ended() {
    char ignored = 0;
    ssize_t got = ::read(shim_exit_.native_handle(), &ignored, 1);
    while (got < 0 && errno == EINTR) got = ::read(shim_exit_.native_handle(), &ignored, 1);
    return got == 0;
  }

  SpawnSpec spec_;  // for naming the program in a start failure
  WorkerEvents events_;
  pid_t shim_pid_;
  bool shim_exit_is_pidfd_;
  UniqueFd control_;
  asio::posix::stream_descriptor shim_exit_;
  asio::posix::stream_descriptor report_;
  ShimRecord record_;
  bool shim_running_ = true;
};

}  // namespace

Expected<std::shared_ptr<WorkerProcess>> ShimSpawner::start(const SpawnSpec& spec,
                                                            WorkerEvents events) {
  auto child = spawn(spec);
  if (!child) return pass_up(std::move(child));
  try {
    // If Asio throws here (a failed epoll registration: out of memory or
    // watches), the descriptors close with `child`, the shim sees its
    // control pipe close and exits, and the stray reaper collects it.
    auto worker = std::make_shared<ShimWorker>(io_, std::move(*child), spec, std::move(events));
    worker->watch();
    return std::shared_ptr<WorkerProcess>(std::move(worker));
  } catch (const std::exception& error) {
    return fail(ErrorCode::internal, "cannot start " + spec.executable + ": " + error.what());
  }
}

void ShimSpawner::reap_strays(const std::set<pid_t>& keep) { reap_exited_orphans(keep); }

int ShimSpawner::kill_strays() { return kill_orphans({}); }

}  // namespace gangrun::supervise
