// The launch options as plain data: what the user asked for, after layering
// (command line > GANGRUN_* > PET_* > --config file > Slurm > defaults) and after
// per-option validation. No CLI11 type appears here; launch/ turns Options
// plus the environment into an immutable LaunchPlan.
#pragma once

#include "config/accelerate/accelerate_settings.hpp"
#include "config/deepspeed/deepspeed_settings.hpp"
#include "config/hosts/hosts_settings.hpp"
#include "config/rendezvous_backend.hpp"
#include "schedulers/job.hpp"

#include <map>
#include <optional>
#include <set>
#include <string>
#include <string_view>
#include <vector>

namespace gangrun::config {

// Where an option's value came from, highest precedence last: accelerate's
// YAML config (--config_file, or accelerate's default file) sits below
// gangrun's own JSON file (--config). Both read "config file"; the value's
// origin text names the file.
enum class Source {
  default_value,
  slurm,
  scheduler,  // PBS, LSF, Kubeflow, SkyPilot, an MPI launcher (schedulers/job.hpp)
  accelerate_config,
  json_config,
  pet_env,
  gangrun_env,
  command_line
};
const char* to_string(Source source);
// From either config file.
inline bool from_a_config_file(Source source) {
  return source == Source::accelerate_config || source == Source::json_config;
}
// Given by the user (a config file, the environment or the command line):
// neither a default nor read from a scheduler's variables.
inline bool given_by_user(Source source) { return source > Source::scheduler; }

// --nproc_per_node N|auto|gpu|xpu|cpu
struct ProcCount {
  enum class Kind { number, automatic, gpu, xpu, cpu };
  Kind kind = Kind::number;
  int number = 1;  // meaningful when kind == number; always >= 1
  bool operator==(const ProcCount&) const = default;
};

enum class OutputMode { automatic, prefix, inherit };

// --on-hang: what the hang watch does after it reported a hang.
enum class OnHang { report, stop, restart };

// --numa_binding: torchrun's modes of pinning each worker to the CPUs near
// its accelerator (placement/numa_binding.hpp has the rules).
enum class NumaBinding { node, socket, exclusive, core_complex };

// --accelerator: which kind of device the launch places workers on. auto
// takes the first kind with devices (CUDA, Intel XPU, AMD ROCm), else CPU.
// hpu, npu and neuron are not enumerated: their inherited visibility
// variable is the device list.
enum class Accelerator { automatic, cuda, xpu, rocm, cpu, hpu, npu, neuron };
const char* to_string(Accelerator accelerator);

// --visible-devices and --mask-format (docs/devices.md, "Accelerators").
enum class VisibleDevices { shared, per_rank };
enum class MaskFormat { index, uuid };
enum class ColorMode { automatic, always, never };

// Which of a worker's streams a redirect or tee applies to (torchrun's 0..3).
struct Streams {
  bool out = false;
  bool err = false;
  bool operator==(const Streams&) const = default;
};

// torchrun's "-r 3" or "-r 0:1,1:2": one value for all local ranks, or per local rank.
struct StreamsByLocalRank {
  Streams all;                            // used for local ranks not listed below
  std::map<int, Streams> per_local_rank;  // set by the "lr:v,..." form
  Streams for_local_rank(int local_rank) const {
    auto it = per_local_rank.find(local_rank);
    return it == per_local_rank.end() ? all : it->second;
  }
  bool operator==(const StreamsByLocalRank&) const = default;
};

// HOST[:PORT] of --rdzv_endpoint.
struct Endpoint {
  std::string host;
  int port = 29400;
  bool operator==(const Endpoint&) const = default;
};

// --rdzv_conf: torchrun's keys, in seconds. Defaults are torchrun's except
// the keep-alive, which gangrun runs much tighter (its probes are TCP's own,
// answered by the peer's kernel, so a busy node does not miss them).
struct RendezvousConf {
  double join_timeout = 600;       // the first round, a reconnect, replacements after a loss
  double last_call_timeout = 30;   // after MIN nodes joined, how long more may still join
  double close_timeout = 30;       // the store's host waits this long for every agent's answer
  double read_timeout = 60;        // one store call
  std::optional<bool> is_host;     // unset: the agent that can listen on the endpoint hosts
  double keep_alive_interval = 1;  // torchrun: 5
  int keep_alive_max_attempt = 3;  // a peer silent for interval x attempts is lost
  bool operator==(const RendezvousConf&) const = default;
};

struct Options {
  // ---- process counts: three spellings, three meanings (torchrun, accelerate, deepspeed)
  std::optional<ProcCount> nproc_per_node;  // workers per node (torchrun)
  std::optional<int> num_processes;         // total over all nodes (accelerate), >= 1
  std::optional<int> num_gpus;              // per node + first N devices (deepspeed), >= 1

  // ---- nodes and rendezvous
  int nnodes = 1;                          // "N", or the MAX of an elastic "MIN:MAX" (c10d only)
  int min_nnodes = 1;                      // the MIN of "MIN:MAX"; equal to nnodes for "N"
  int node_rank = 0;                       // 0 <= node_rank < nnodes; static rendezvous only
  std::optional<std::string> master_addr;  // unset: 127.0.0.1
  std::optional<int> master_port;          // 1..65535; unset: a free port on one node, else 29500
  bool standalone = false;
  RendezvousBackend rdzv_backend = k_default_rendezvous_backend;
  std::optional<Endpoint> rdzv_endpoint;  // --rdzv_endpoint HOST[:PORT]; c10d's port 29400
  RendezvousConf rdzv_conf;               // --rdzv_conf k=v,...
  std::optional<std::string> local_addr;  // --local_addr: the address this node advertises
  std::string rdzv_id = "none";           // TORCHELASTIC_RUN_ID; --standalone makes a random one
  bool virtual_local_rank = false;        // LOCAL_RANK=0, one device each (torchrun 2.x)
  int max_restarts = 0;                   // >= 0
  double monitor_interval = 0.1;          // accepted for compatibility; detection is event-driven
  std::string role = "default";           // ROLE_NAME
  // The store the agent hosts (store/protocol.hpp's Limits); unset: its defaults.
  std::optional<std::size_t> max_connections;              // >= 1
  std::optional<std::size_t> max_connections_per_address;  // silent ones; 0: no cap
  std::optional<std::size_t> max_store_bytes;              // >= 1
  std::optional<std::size_t> max_store_bytes_per_address;  // 0: no quota

  // ---- Slurm and remote starts
  // --launcher: auto starts gangrun on every node through srun in an
  // allocation of several nodes outside a step; slurm asks for that; local
  // runs here only and ignores Slurm.
  // ssh: the hosts of a hostfile; openmpi: those hosts through mpirun.
  enum class Launcher { automatic, local, slurm, ssh, openmpi };
  Launcher launcher = Launcher::automatic;
  std::vector<std::string> launcher_args;  // --launcher_args "...": extra srun options
  bool worker_per_task = false;  // in a step with several tasks per node, each task is one worker
  // The job gangrun runs in, of any system (Slurm's with Job::slurm), unless --launcher local.
  std::optional<schedulers::Job> job;

  // ---- devices (docs/devices.md, "Accelerators")
  Accelerator accelerator = Accelerator::automatic;
  std::optional<std::vector<int>> gpu_ids;  // --gpu_ids 0,2; nullopt: not given, or "all"
  std::optional<std::string> include;       // --include NODE_SPEC (deepspeed)
  std::optional<std::string> exclude;       // --exclude NODE_SPEC (deepspeed)
  VisibleDevices visible_devices = VisibleDevices::shared;
  int devices_per_proc = 1;  // >= 1; per-rank mode only
  MaskFormat mask_format = MaskFormat::index;

  // ---- program
  bool module = false;                        // -m: PYTHON -u -m MODULE ARGS
  bool no_python = false;                     // execute PROGRAM directly
  std::optional<std::string> python;          // --python; else PYTHON_EXEC; else python3 on PATH
  std::vector<std::string> program_and_args;  // PROGRAM (or MODULE) then its arguments

  // ---- output
  std::optional<std::string> log_dir;
  StreamsByLocalRank redirects;                     // -r
  StreamsByLocalRank tee;                           // -t
  std::optional<std::set<int>> local_ranks_filter;  // console shows only these local ranks
  std::optional<std::string> log_prefix;  // template; else TORCHELASTIC_LOG_LINE_PREFIX_TEMPLATE
  OutputMode output = OutputMode::automatic;

  // ---- supervision
  double term_timeout = 30.0;  // seconds from SIGTERM to SIGKILL, >= 0
  // Seconds the other workers may go on after the first failure, so that
  // the rank they waited for can be named (supervise/gang.hpp), >= 0.
  double failure_window = 1.0;
  std::vector<int> signals_to_handle;  // signal numbers; default TERM, INT, HUP, QUIT
  // The gang doctor (lib/doctor): seconds with no output line from any rank
  // before the hang is reported (nullopt or 0: never), what follows, the
  // stack tool, and whether a failure reads the survivors' stacks.
  std::optional<double> hang_timeout;
  OnHang on_hang = OnHang::stop;
  // Seconds after a round's start when ranks not yet at the store are
  // named, if others are (nullopt: never).
  std::optional<double> arrival_timeout = 300.0;
  std::optional<std::string> stack_tool;
  bool no_stacks_at_failure = false;
  std::optional<double> straggler_watch;  // seconds between samples; nullopt: off
  bool flight_recorder = false;           // NCCL's flight recorder, dumped on a hang
  // --metrics-addr: where this node's agent serves /metrics and /healthz.
  std::optional<Endpoint> metrics_addr;
  // gangrun preflight (lib/preflight): --preflight runs it before a launch;
  // seconds it waits for the ranks' answers and its collectives.
  bool preflight = false;
  double preflight_timeout = 60;
  // --numa_binding: pin each worker to CPUs near its accelerator; nullopt: not asked.
  std::optional<NumaBinding> numa_binding;

  // ---- each tool's own flags
  AccelerateSettings accelerate;  // accelerate launch
  DeepspeedSettings deepspeed;    // deepspeed
  HostsSettings hosts;            // hostfiles, ssh

  // ---- reporting and misc
  bool dry_run = false;
  bool json = false;
  std::optional<std::string> report;            // --report FILE
  std::optional<std::string> json_config_file;  // --config FILE (already applied)
  int verbosity = 0;                            // -q: -1, default 0, each -v adds 1
  ColorMode color = ColorMode::automatic;

  // Every long option that has a value, by its snake_case name, with the
  // text it was given as and where it came from ("gangrun --dry-run -v" prints it).
  struct Origin {
    std::string text;
    Source source = Source::default_value;
    // How it was given, for messages that name it: the option as the user
    // spelled it ("--main_process_port", "--master-port"), the variable, or
    // the file and key (LayeredValue::where); empty when gangrun derived it.
    std::string where = {};
    bool operator==(const Origin&) const = default;
  };
  std::map<std::string, Origin> origins;
  // The option's origin when the user gave it (see given_by_user), else null.
  [[nodiscard]] const Origin* user_origin(std::string_view name) const;

  bool operator==(const Options&) const = default;
};

}  // namespace gangrun::config
