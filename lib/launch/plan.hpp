// The launch plan: Options + gangrun's environment, validated and resolved
// into what is fixed for the whole run (program, devices, the local workers,
// the settings the agent runs by). It holds resolved values only, never the
// Options it was made from: each fact has one field, named for what it
// holds. Immutable once made; making it has no side effects (no process, no
// port, no directory). What each round decides (ranks, world size, the
// store's address, the restart count) is a RoundAssignment beside it.
#pragma once

#include "config/options.hpp"
#include "launch/dialects/dialects.hpp"
#include "launch/node_devices.hpp"
#include "launch/program.hpp"
#include "util/env.hpp"
#include "util/error.hpp"

#include <map>
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
  // The CPUs it is pinned to (--bind_cores_to_rank,
  // launch/dialects/deepspeed_cores.hpp, or --numa_binding,
  // launch/numa_cpus.hpp); empty: gangrun's own affinity.
  std::vector<int> cpus = {};
};

// --worker-per-task under srun or an MPI launcher: the task's place among
// the tasks on its machine, as the job system numbers them (SLURM_LOCALID
// and SLURM_STEP_TASKS_PER_NODE, OMPI_COMM_WORLD_LOCAL_RANK/_SIZE,
// MPI_LOCALRANKID/MPI_LOCALNRANKS).
struct SchedulerTask {
  int local_id = 0;
  int tasks_on_node = 1;
};

// Limits of the store the agent hosts (--max-connections and its
// neighbours); nullopt: the store's own default (store/protocol.hpp's Limits).
struct StoreLimits {
  std::optional<std::size_t> max_connections;
  std::optional<std::size_t> max_connections_per_address;
  std::optional<std::size_t> max_total_bytes;
  std::optional<std::size_t> max_bytes_per_address;
};

// The gang doctor's settings (doctor/watch/hang_watch.hpp, doctor/watch/stack_probe.hpp).
struct DoctorPlan {
  std::optional<double> hang_timeout_s;  // --hang-timeout; nullopt: no hang watch
  config::OnHang on_hang = config::OnHang::stop;
  std::optional<double> arrival_timeout_s = 300.0;  // --arrival-timeout; nullopt: off
  // --stack-tool, checked to be an executable; nullopt: looked for beside
  // the workers' interpreter, then on PATH (doctor::find_stack_tool).
  std::optional<std::string> stack_tool;
  bool stacks_at_failure = true;               // --no-stacks-at-failure turns it off
  std::optional<double> straggler_interval_s;  // --straggler-watch; nullopt: off
  bool flight_recorder = false;                // --flight-recorder
};

struct LaunchPlan {
  EnvMap host_env;  // gangrun's own environment, the base of every worker's
  std::string host;
  std::string run_id;
  std::string role = "default";  // --role: every worker's ROLE_NAME
  // The tools whose conventions the workers follow, and what their own
  // flags asked (launch/dialects/dialects.hpp).
  Dialects dialects;

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
  // Where master_addr came from, for messages: "--master_addr",
  // "--rdzv_endpoint", or the Slurm head node it was derived from.
  std::string master_addr_origin = "--master_addr";
  // The same for master_port, named as the user gave it ("--main_process_port",
  // "--master-port", "GANGRUN_MASTER_PORT"), or "--rdzv_endpoint".
  std::string master_port_origin = "--master_port";
  std::optional<std::string> local_addr;  // --local_addr: the address this node advertises
  config::RendezvousConf rendezvous;      // --rdzv_conf, torchrun's keys in seconds
  StoreLimits store_limits;               // of the store this node hosts, if it hosts one

  // How the agent runs the gang.
  int max_restarts = 0;
  double failure_window_s = 1.0;           // --failure_window
  double term_timeout_s = 30.0;            // --term_timeout: from SIGTERM to SIGKILL
  std::optional<std::string> report_path;  // --report FILE
  // --metrics-addr: this node's /metrics and /healthz (observe/metrics_server.hpp).
  std::optional<config::Endpoint> metrics_address;
  DoctorPlan doctor;
  // Where each option's value came from, for --dry-run and the report.
  std::map<std::string, config::Options::Origin> option_origins;

  std::optional<NodeDevices> devices;  // nullopt: the launch does not depend on devices
  bool per_rank_visibility = false;    // --visible-devices per-rank (else shared)
  bool virtual_local_rank = false;     // --virtual_local_rank: each worker's device is its 0
  // --numa_binding: the workers' cpus are near their accelerators.
  std::optional<config::NumaBinding> numa_binding;

  // The job gangrun runs in, of any system (nullopt: none, or --launcher
  // local), and --worker-per-task's task when its system gives the local rank.
  std::optional<schedulers::Job> job;
  bool worker_per_task = false;
  std::optional<SchedulerTask> scheduler_task;

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

// The worker's console line prefix in the given round, expanded.
std::string worker_prefix(const LaunchPlan& plan, const WorkerPlan& worker,
                          const RoundAssignment& round);

}  // namespace gangrun::launch
