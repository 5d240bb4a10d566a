// The launch plan: Options + gangrun's environment, validated and resolved
// into what is fixed for the whole run (program, options, devices, the local
// workers). Immutable once made; making it has no side effects (no process,
// no port, no directory). What each round decides (ranks, world size, the
// store's address, the restart count) is a RoundAssignment beside it.
#pragma once

#include "config/options.hpp"
#include "launch/node_devices.hpp"
#include "launch/program.hpp"
#include "util/env.hpp"
#include "util/error.hpp"

#include <optional>
#include <set>
#include <string>
#include <vector>

namespace gangrun::launch {

struct WorkerPlan {
  int local_rank = 0;
  std::vector<std::string> argv;  // after ${local_rank} substitution
  config::Streams to_file;        // streams written to log files
  config::Streams to_console;     // streams shown on the console
  // Its visibility mask (and what must go with it), e.g.
  // CUDA_VISIBLE_DEVICES=2; empty when it inherits gangrun's visibility.
  EnvMap device_env;
  // The CPUs it is pinned to (--bind_cores_to_rank, launch/core_binding.hpp);
  // empty: gangrun's own affinity.
  std::vector<int> cpus = {};
};

struct LaunchPlan {
  config::Options options;
  EnvMap host_env;  // gangrun's own environment, the base of every worker's
  std::string host;
  std::string run_id;

  // What the options ask for; each round's RoundAssignment has the facts.
  int nnodes = 1;  // the MAX of an elastic range
  int min_nnodes = 1;
  int node_rank = 0;
  // More than one node, or the c10d backend: the agents meet in a
  // rendezvous (lib/rendezvous) before each round, in the store that
  // master_addr:master_port names (c10d: the endpoint).
  bool multi_node = false;
  bool c10d = false;
  int local_world_size = 1;
  std::string master_addr;
  std::optional<int> master_port;  // nullopt: a free port is picked at launch

  std::optional<NodeDevices> devices;  // nullopt: the launch does not depend on devices

  ResolvedProgram program;
  bool prefix_output = false;          // prefix mode (pipes) rather than inherit
  std::optional<std::string> log_dir;  // --log_dir; each run makes DIR/<run_id>_<unique> in it
  std::set<int> teardown_signals;
  std::optional<std::string> parent_error_file;  // gangrun's own TORCHELASTIC_ERROR_FILE
  std::string prefix_template;                   // console line prefix, before expansion
  std::vector<WorkerPlan> workers;
  // Many nodes: authenticates the rendezvous (launch/job_secret.hpp). Kept
  // out of host_env, --dry-run and the report.
  std::optional<std::string> job_secret;
};

// What one round of the run decides for this node. One node makes its own
// (static_assignment); a rendezvous gives every node its own, round after
// round.
struct RoundAssignment {
  int restart_count = 0;     // failures restarted before this round
  int attempt = 0;           // this node's attempt directory (attempt_<n>): rounds run here before
  int group_rank = 0;        // this node's rank among the nodes
  int group_world_size = 1;  // nodes in the round
  int rank_offset = 0;       // the global rank of this node's local_rank 0
  int world_size = 1;        // workers in the round, on every node
  std::string master_addr;   // the store every worker meets through
  std::string master_port;

  int rank_of(const WorkerPlan& worker) const { return rank_offset + worker.local_rank; }
};

// The assignment of a static launch (--nnodes N --node_rank R): ranks node
// by node, as the options ask. master_port is the store's port, known once
// it listens.
RoundAssignment static_assignment(const LaunchPlan& plan, int restart_count,
                                  std::string master_port);

// Workers per node (from the process-count options, counting selected
// devices for gpu/xpu/auto) and each worker's device variables.
struct PlacedWorkers {
  int workers = 1;
  std::vector<EnvMap> device_envs;  // one per local worker
};
Expected<PlacedWorkers> place_workers(const config::Options& options,
                                      const std::optional<NodeDevices>& devices);

struct ProcessCapacity;  // plan_checks.hpp

// Validates and resolves. `devices` is this node's devices when
// launch_needs_devices(options) (node_devices.hpp), else nullopt. The worker
// count is checked against `capacity` (and the world size against int)
// before anything proportional to it is allocated. Errors are usage (2),
// not_found (127) or not_executable (126), each naming what was wrong.
Expected<LaunchPlan> make_plan(const config::Options& options, const EnvMap& host_env,
                               std::optional<NodeDevices> devices, const ProcessCapacity& capacity);
// The same, against this host's limits (read_process_capacity()).
Expected<LaunchPlan> make_plan(const config::Options& options, const EnvMap& host_env,
                               std::optional<NodeDevices> devices = std::nullopt);

// --virtual_local_rank: the CUDA_VISIBLE_DEVICES of the worker at local_rank,
// the inherited list's entry there (make_plan checks it has one), else the
// local rank itself, as torchrun gives it.
std::string virtual_local_device(const EnvMap& host_env, int local_rank);

// The variables gangrun sets for worker in the given round, with its files
// in run_dir (docs/environment.md, "What each worker gets"). Inherited values of
// NCCL_ASYNC_ERROR_HANDLING, TORCH_NCCL_ASYNC_ERROR_HANDLING and
// OMP_NUM_THREADS are kept; the worker's device_env is added.
EnvMap worker_variables(const LaunchPlan& plan, const WorkerPlan& worker,
                        const RoundAssignment& round, const std::string& run_dir);

// The worker's console line prefix in the given round, expanded.
std::string worker_prefix(const LaunchPlan& plan, const WorkerPlan& worker,
                          const RoundAssignment& round);

// Where a worker's files of an attempt live: RUN_DIR/attempt_<n>/<local_rank>.
std::string worker_dir(const std::string& run_dir, int attempt, int local_rank);

}  // namespace gangrun::launch
