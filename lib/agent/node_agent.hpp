// The node agent: owns a run on this node from the first worker to the
// report. It owns the event loop, gangrun's signals, the store the workers
// meet through (for the whole run), and the restart policy; the gang
// (supervise/gang.hpp) is one of its components.
//
// Its states:
//
//   starting ──▶ running ──▶ (round ended) ──▶ restarting ──▶ running ...
//                   │                              │
//                   └─ teardown signal ─▶ stopping └─▶ done
//
//   starting    the store listens, the run directory exists; no worker yet.
//   running     a round's gang is up; a worker failure tears it down.
//   stopping    a teardown signal arrived; the gang is being torn down.
//   restarting  a round failed and restarts are left: the next round gets a
//               fresh key space in the store (connections stay up), fresh
//               attempt directories and a new assignment.
//   done        the last round ended (success, a signal, or no restart
//               left); the loop stops and run() reports.
#pragma once

#include "launch/plan.hpp"
#include "supervise/spawner.hpp"

#include <boost/asio/io_context.hpp>

#include <functional>
#include <memory>
#include <optional>

namespace gangrun::agent {

enum class AgentState { starting, running, stopping, restarting, done };

// "starting", "running", ...: for log lines.
const char* to_string(AgentState state);

struct RunResult {
  int exit_code = 0;                 // util/exit_codes.hpp
  std::optional<int> die_by_signal;  // gangrun was stopped by this signal: re-raise it
};

// Runs plan on this node: every round of its gang, restarting while
// restarts are left, then the failure summary and the report. Must be
// called from the main thread (the workers' death signal is tied to the
// thread that forks their shims). Never throws for run-time failures of
// the job; those are in the result.
RunResult run(const launch::LaunchPlan& plan);

// Makes the Spawner the agent's gang starts workers with, on the agent's
// loop. run(plan) uses the real one (supervise/shim_spawner.hpp); unit
// tests give a fake.
using SpawnerFactory =
    std::function<std::unique_ptr<supervise::Spawner>(boost::asio::io_context& io)>;
RunResult run(const launch::LaunchPlan& plan, const SpawnerFactory& make_spawner);

}  // namespace gangrun::agent
