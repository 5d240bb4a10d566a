// Asking the job's Python interpreter which launcher package it cannot
// find, after a worker exited 1 with no output gangrun captured
// (attempt_record.hpp says when). The interpreter runs as a child of the
// agent's spawner, watched on the agent's loop: on the store's host that
// loop also serves the store and the coordinator every other node talks
// to, so the probe never blocks it.
#pragma once

#include "supervise/spawner.hpp"
#include "util/env.hpp"

#include <boost/asio/io_context.hpp>
#include <boost/asio/steady_timer.hpp>

#include <chrono>
#include <functional>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <vector>

namespace gangrun::agent {

class InterpreterProbe {
 public:
  using DoneHandler = std::function<void(std::optional<std::string> unimportable)>;

  // io and spawner outlive the probe. Letting go of the probe while a child
  // runs ends that child (its shim kills it).
  InterpreterProbe(boost::asio::io_context& io, supervise::Spawner& spawner,
                   std::chrono::milliseconds per_package = std::chrono::seconds(10));

  // Asks python, one package after another, whether it finds each
  // (importlib.util.find_spec, which imports nothing), and returns at once.
  // done gets the first package it does not find, or nullopt when it finds
  // them all or the probe failed (a child that could not start, or still ran
  // after per_package): from a handler, never inside start, once the last
  // child and its shim are gone. Only when no probe is running.
  void start(const std::string& python, const EnvMap& env, std::vector<std::string> packages,
             DoneHandler done);

  bool running() const { return static_cast<bool>(done_); }

  // gangrun's own child for the probe (its shim) while one runs, which
  // stray reaping must leave alone.
  std::set<pid_t> supervisor_pids() const;

 private:
  void ask(std::size_t index);
  void on_child_gone(std::size_t index);
  void finish(std::optional<std::string> unimportable);

  boost::asio::io_context& io_;
  supervise::Spawner& spawner_;
  std::chrono::milliseconds per_package_;
  boost::asio::steady_timer deadline_;
  std::string python_;
  EnvMap env_;
  std::vector<std::string> packages_;
  DoneHandler done_;
  std::shared_ptr<supervise::WorkerProcess> child_;
  std::optional<supervise::ExitStatus> status_;  // of the child asked last
};

}  // namespace gangrun::agent
