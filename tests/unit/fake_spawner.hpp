// A Spawner that starts no process: each "worker" is a record the test
// drives (it exits when told, obeys or ignores stop signals), and every
// request the gang makes is written to one journal in order, so tests can
// check the gang's decisions (root cause, teardown order and escalation,
// restarts, signals during spawn). Events reach the gang through the
// io_context, as the real spawner's do.
#pragma once

#include "supervise/spawner.hpp"
#include "util/fd.hpp"
#include "util/pipe.hpp"
#include "util/signals.hpp"

#include <boost/asio/io_context.hpp>
#include <boost/asio/post.hpp>

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <csignal>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

namespace gangrun::testing {

class FakeSpawner final : public supervise::Spawner {
 public:
  struct Worker {
    supervise::SpawnSpec spec;
    supervise::WorkerEvents events;
    pid_t pid = 0;
    bool alive = true;              // on_exited not sent yet
    bool supervisor_alive = true;   // on_supervisor_gone not sent yet
    bool ignores_stop = false;      // only SIGKILL ends it
    bool stuck_supervisor = false;  // end_tree() is not enough: only kill_supervisor() ends it
    std::vector<int> signals;       // every signal the gang asked for, in order
    UniqueFd stdin_copy;            // spec.stdin_fd as it was given, when one was
    std::string stdin_text;         // read from it so far
  };

  explicit FakeSpawner(boost::asio::io_context& io) : io_(io) {}

  // ---- how the fake behaves (set before the gang starts) ------------------------

  // start() of the worker with this launch index (counted across attempts)
  // fails in gangrun itself, as pipe2 or fork would.
  std::optional<std::size_t> fail_start_at;
  // The worker with this launch index reports that its exec failed.
  std::optional<std::size_t> exec_fails_at;
  // Called after each successful start() with the launch index: lets a test
  // act in the middle of a spawn (a stop signal, an exit).
  std::function<void(std::size_t index)> after_start;
  // Workers started from now on ignore SIGTERM (only SIGKILL ends them).
  bool workers_ignore_stop = false;
  // Supervisors started from now on do not go after end_tree().
  bool supervisors_stuck = false;

  // ---- what the test makes happen ------------------------------------------------

  // The worker ends by itself with status.
  void exit(std::size_t index, supervise::ExitStatus status) {
    Worker& worker = *workers_.at(index);
    if (!worker.alive) return;  // gone already: the exit never happens
    worker.alive = false;
    journal.push_back("exit " + std::to_string(index));
    post([events = worker.events, status] { events.on_exited(status, 0); });
  }

  // Someone killed the worker's supervisor; the worker died with it.
  void lose_supervisor(std::size_t index) {
    Worker& worker = *workers_.at(index);
    worker.alive = false;
    supervisor_gone(worker, supervise::ExitStatus::killed_by(SIGKILL));
  }

  // ---- what the test inspects ---------------------------------------------------

  std::vector<std::string> journal;  // "start 0", "signal 1 SIGTERM", "end_tree 1", ...
  int strays_killed = 0;             // kill_strays() calls

  // Workers started successfully (a failed start() counts as none).
  std::size_t started() const {
    std::size_t count = 0;
    for (const auto& worker : workers_) count += worker ? 1 : 0;
    return count;
  }
  const Worker& worker(std::size_t index) const { return *workers_.at(index); }
  // The same, kept alive past the spawner (whose owner may be gone).
  std::shared_ptr<const Worker> shared_worker(std::size_t index) const {
    return workers_.at(index);
  }

  // What the gang wrote to the worker's stdin so far, and whether it closed
  // its end; nullopt when the worker got no stdin descriptor.
  struct StdinSeen {
    std::string text;
    bool closed = false;
  };
  std::optional<StdinSeen> stdin_of(std::size_t index) {
    Worker& worker = *workers_.at(index);
    if (!worker.stdin_copy.valid()) return std::nullopt;
    for (;;) {
      char buffer[256];
      ssize_t got = ::read(worker.stdin_copy.get(), buffer, sizeof buffer);
      if (got > 0) {
        worker.stdin_text.append(buffer, static_cast<std::size_t>(got));
        continue;
      }
      if (got < 0 && errno == EINTR) continue;
      return StdinSeen{worker.stdin_text, got == 0};
    }
  }

  // ---- Spawner --------------------------------------------------------------------

  Expected<std::shared_ptr<supervise::WorkerProcess>> start(
      const supervise::SpawnSpec& spec, supervise::WorkerEvents events) override {
    std::size_t index = workers_.size();
    if (fail_start_at == index) {
      workers_.push_back(nullptr);
      journal.push_back("start_failed " + std::to_string(index));
      return fail(ErrorCode::internal,
                  "cannot start " + spec.executable + ": pipe2 failed: Too many open files");
    }
    auto worker = std::make_shared<Worker>();
    worker->spec = spec;
    worker->events = std::move(events);
    worker->pid = 1000 + static_cast<pid_t>(index);
    worker->ignores_stop = workers_ignore_stop;
    worker->stuck_supervisor = supervisors_stuck;
    if (spec.stdin_fd >= 0) {
      // The caller closes its descriptor once start() returns; the copy
      // shares the pipe, read without blocking.
      worker->stdin_copy = UniqueFd(::fcntl(spec.stdin_fd, F_DUPFD_CLOEXEC, 3));
      (void)set_non_blocking(worker->stdin_copy.get());
    }
    workers_.push_back(worker);
    journal.push_back("start " + std::to_string(index));
    if (exec_fails_at == index) {
      worker->alive = false;
      post([worker, program = spec.executable] {
        worker->events.on_start_failed(
            Error(ErrorCode::not_found, "cannot run " + program + ": No such file or directory"));
      });
    } else {
      post([worker] { worker->events.on_running(worker->pid); });
    }
    if (after_start) after_start(index);
    return std::make_shared<Process>(*this, worker, index);
  }

  void reap_strays(const std::set<pid_t>&) override {}

  int kill_strays() override {
    ++strays_killed;
    journal.emplace_back("kill_strays");
    return 0;
  }

 private:
  class Process final : public supervise::WorkerProcess {
   public:
    Process(FakeSpawner& owner, std::shared_ptr<Worker> worker, std::size_t index)
        : owner_(owner), worker_(std::move(worker)), index_(index) {}

    void signal(int signal_number) override {
      owner_.journal.push_back("signal " + std::to_string(index_) + " " +
                               signals::name(signal_number));
      worker_->signals.push_back(signal_number);
      bool ends = signal_number == SIGKILL ||
                  (!worker_->ignores_stop && (signal_number == SIGTERM || signal_number == SIGINT ||
                                              signal_number == SIGHUP || signal_number == SIGQUIT));
      if (!ends || !worker_->alive) return;
      worker_->alive = false;
      owner_.post([worker = worker_, signal_number] {
        worker->events.on_exited(supervise::ExitStatus::killed_by(signal_number), 0);
      });
    }

    void end_tree() override {
      owner_.journal.push_back("end_tree " + std::to_string(index_));
      if (!worker_->stuck_supervisor) owner_.supervisor_gone(*worker_, {});
    }

    void kill_supervisor() override {
      owner_.journal.push_back("kill_supervisor " + std::to_string(index_));
      owner_.supervisor_gone(*worker_, supervise::ExitStatus::killed_by(SIGKILL));
    }

    pid_t supervisor_pid() const override { return worker_->pid + 10000; }

   private:
    FakeSpawner& owner_;
    std::shared_ptr<Worker> worker_;
    std::size_t index_;
  };

  template <typename F>
  void post(F f) {
    boost::asio::post(io_, std::move(f));
  }

  void supervisor_gone(Worker& worker, supervise::ExitStatus status) {
    if (!worker.supervisor_alive) return;
    worker.supervisor_alive = false;
    post([events = worker.events, status] { events.on_supervisor_gone(status, 0); });
  }

  boost::asio::io_context& io_;
  std::vector<std::shared_ptr<Worker>> workers_;  // by launch index; null: start() failed
};

}  // namespace gangrun::testing
