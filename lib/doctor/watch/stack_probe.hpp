// Reading every local rank's stack at once, for the gang doctor: the hang
// watch before it stops anything, and a failure before the survivors are
// stopped. One stack tool (py-spy) per rank, all in parallel, each a child
// of the agent's spawner watched on the agent's loop, like the interpreter
// probe: on the store's host that loop also serves the store, so reading
// stacks never blocks it. A rank stopped from outside is read without
// pausing it (stack_tool.hpp: dump_command_for) and named as stopped. What a
// rank's dump could not say is filled in from /proc (its state and wait
// channel) and the reason.
#pragma once

#include "doctor/stack_groups.hpp"
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

namespace gangrun::doctor {

// A rank whose stack is to be read.
struct StackTarget {
  int rank = 0;
  pid_t pid = -1;
};

class StackProbe {
 public:
  using DoneHandler = std::function<void(std::vector<doctor::RankStacks> ranks)>;

  // io and spawner outlive the probe. Letting go of it while a tool runs
  // ends that tool (its shim kills it).
  StackProbe(boost::asio::io_context& io, supervise::Spawner& spawner);
  ~StackProbe();
  StackProbe(const StackProbe&) = delete;
  StackProbe& operator=(const StackProbe&) = delete;

  // Reads every target's stack with tool (nullopt: no tool was found, and
  // each rank says so, with what /proc knows), and returns at once. done
  // gets one entry per target, in targets' order, from a handler (never
  // inside start), once every tool has ended or been ended after `limit`.
  // Only when no probe is running.
  // nonblocking reads without pausing the ranks (sampling).
  void start(const std::optional<std::string>& tool, const std::string& host,
             const std::vector<StackTarget>& targets, const EnvMap& env,
             std::chrono::milliseconds limit, DoneHandler done, bool nonblocking = false);

  bool running() const { return static_cast<bool>(done_); }

  // gangrun's own children for the tools still running (their shims),
  // which stray reaping must leave alone.
  std::set<pid_t> supervisor_pids() const;

 private:
  struct Reading;
  void read_one(std::size_t index, const std::string& tool, const EnvMap& env, bool nonblocking);
  void on_tool_gone(std::size_t index);
  void finish();

  boost::asio::io_context& io_;
  supervise::Spawner& spawner_;
  boost::asio::steady_timer deadline_;
  std::vector<std::unique_ptr<Reading>> readings_;
  std::vector<doctor::RankStacks> ranks_;
  std::size_t left_ = 0;
  DoneHandler done_;
};

}  // namespace gangrun::doctor
