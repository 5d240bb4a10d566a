#include "config/option_table.hpp"

#include "config/job_values.hpp"
#include "config/metrics_address.hpp"
#include "config/option_apply.hpp"
#include "config/option_values.hpp"
#include "store/default_port.hpp"
#include "util/strings.hpp"

#include <algorithm>
#include <cstdio>
#include <cstdlib>

namespace gangrun::config {

namespace {

using G = OptionGroup;
using K = OptionKind;

// --nnodes as the backend reads it: only c10d takes a MIN:MAX range. The
// backend's row is applied before every other (build_options.cpp).
Expected<void> apply_nnodes(std::string_view text, Options& o) {
  NodeRange nodes{.min = o.min_nnodes, .max = o.nnodes};
  if (o.rdzv_backend == RendezvousBackend::c10d) {
    GANGRUN_TRY_ASSIGN(range, parse_node_range(text));
    nodes = *range;
  } else {
    GANGRUN_TRY_ASSIGN(count, parse_nnodes(text));
    nodes = NodeRange{*count, *count};
  }
  o.min_nnodes = nodes.min;
  o.nnodes = nodes.max;
  return {};
}

// -q: verbosity -1. Its row comes after -v's; build_options.cpp lets a -v
// from a higher layer win back.
Expected<void> apply_quiet(std::string_view text, Options& o) {
  GANGRUN_TRY_ASSIGN(quiet, parse_bool(text));
  if (*quiet) o.verbosity = -1;
  return {};
}

// torchrun's --start_method: one of its three, all run as spawn.
Expected<std::string> start_method_choice(std::string_view text) {
  for (std::string_view method : {"spawn", "fork", "forkserver"}) {
    if (text == method) return std::string(text);
  }
  return fail_usage("'" + std::string(text) + "' is not one of spawn, fork, forkserver");
}

std::vector<std::string_view> backend_names() {
  std::vector<std::string_view> names;
  for (const RendezvousBackendName& row : k_rendezvous_backends) names.push_back(row.name);
  return names;
}

std::vector<OptionSpec> make_table() {
  // Texts that name the default port; they outlive the table that views them.
  static const std::string master_port_help =
      "port of the store, 1..65535. Default (or 0): a free port on a single node, else " +
      std::to_string(store::k_default_port);
  return {
      // ---- process counts: three spellings, three meanings (torchrun, accelerate, deepspeed)
      {.name = "nproc_per_node",
       .group = G::process_counts,
       .metavar = "N|auto|gpu|xpu|cpu",
       .suggestions = {"auto", "gpu", "xpu", "cpu"},
       .help = "workers per node (torchrun). gpu/xpu: one per selected device; cpu: one per "
               "usable CPU; auto: devices if any, else CPUs. Default 1",
       .apply = into<&Options::nproc_per_node, parse_proc_count>},
      {.name = "num_processes",
       .short_name = 'n',
       .group = G::process_counts,
       .metavar = "T",
       .help = "total workers over all nodes (accelerate); each node runs T / nnodes, which "
               "must divide evenly",
       .apply = into<&Options::num_processes, parse_positive_int>},
      {.name = "num_gpus",
       .aliases = {"num_accelerators"},
       .group = G::process_counts,
       .metavar = "N",
       .help = "workers per node (deepspeed), using the first N visible devices",
       .apply = into<&Options::num_gpus, parse_positive_int>},

      // ---- devices (docs/devices.md, "Accelerators")
      {.name = "accelerator",
       .group = G::devices,
       .metavar = "KIND",
       .default_text = "auto",
       .choices = {"auto", "cuda", "xpu", "rocm", "cpu", "hpu", "npu", "neuron"},
       .help = "kind of device to place workers on; auto: the first of cuda, xpu, rocm with "
               "devices, else cpu. hpu/npu/neuron split the inherited HABANA_VISIBLE_MODULES, "
               "ASCEND_RT_VISIBLE_DEVICES or NEURON_RT_VISIBLE_CORES",
       .apply = into<&Options::accelerator, parse_accelerator>},
      {.name = "gpu_ids",
       .group = G::devices,
       .metavar = "LIST|all",
       .help = "devices to use, as the workers number them (accelerate), e.g. 0,2",
       .apply = into<&Options::gpu_ids, parse_gpu_ids>},
      {.name = "include",
       .short_name = 'i',
       .group = G::devices,
       .metavar = "NODE_SPEC",
       .help = "devices to use (deepspeed), e.g. localhost:0,2; this node answers to localhost "
               "and its host name",
       .apply = into<&Options::include, non_empty_text>},
      {.name = "exclude",
       .short_name = 'e',
       .group = G::devices,
       .metavar = "NODE_SPEC",
       .help = "devices not to use (deepspeed), e.g. localhost:1",
       .apply = into<&Options::exclude, non_empty_text>},
      {.name = "visible_devices",
       .group = G::devices,
       .metavar = "MODE",
       .default_text = "shared",
       .choices = {"shared", "per-rank"},
       .help = "shared: every worker sees the selected devices and uses LOCAL_RANK (torchrun); "
               "per-rank: each worker sees only its own --devices-per-proc devices",
       .shown = Spelling::dash,
       .apply = into<&Options::visible_devices, parse_visible_devices>},
      {.name = "devices_per_proc",
       .group = G::devices,
       .metavar = "K",
       .default_text = "1",
       .help = "devices each worker gets with --visible-devices per-rank",
       .shown = Spelling::dash,
       .apply = into<&Options::devices_per_proc, parse_positive_int>},
      {.name = "mask_format",
       .group = G::devices,
       .metavar = "FORMAT",
       .default_text = "index",
       .choices = {"index", "uuid"},
       .help = "how masks name devices: index (the tokens of the inherited variable, or driver "
               "indices) or uuid (CUDA and ROCm only)",
       .shown = Spelling::dash,
       .apply = into<&Options::mask_format, parse_mask_format>},

      // ---- nodes
      {.name = "nnodes",
       .aliases = {"num_machines", "num_nodes"},
       .group = G::nodes,
       .metavar = "N|MIN:MAX",
       .default_text = "1",
       .help = "number of nodes N, or MIN:MAX for an elastic job (c10d)",
       .apply = apply_nnodes},
      {.name = "node_rank",
       .aliases = {"machine_rank"},
       .group = G::nodes,
       .metavar = "R",
       .default_text = "0",
       .help = "rank of this node, 0 <= R < nnodes; static backend only (c10d assigns node "
               "ranks and ignores it)",
       .apply = into<&Options::node_rank, parse_non_negative_int>},
      {.name = "master_addr",
       .aliases = {"main_process_ip"},
       .group = G::nodes,
       .metavar = "HOST",
       .help = "address of the node that hosts the store (node rank 0). Default 127.0.0.1",
       .apply = into<&Options::master_addr, non_empty_text>},
      {.name = "master_port",
       .aliases = {"main_process_port"},
       .group = G::nodes,
       .metavar = "PORT",
       .help = master_port_help,
       .apply = into<&Options::master_port, parse_port>},
      {.name = "standalone",
       .group = G::nodes,
       .kind = K::flag,
       .help = "single node: a free port and a random run id",
       .apply = into<&Options::standalone, parse_bool>},
      {.name = "rdzv_backend",
       .group = G::nodes,
       .metavar = "BACKEND",
       .default_text = backend_name(k_default_rendezvous_backend),
       .choices = backend_names(),
       .help = "how nodes meet: static (each node gives --node_rank; the store is at "
               "--master_addr/--master_port or --rdzv_endpoint); c10d (nodes join at "
               "--rdzv_endpoint and are given their ranks; --nnodes may be a MIN:MAX range)",
       .apply = into<&Options::rdzv_backend, parse_rdzv_backend>},
      {.name = "rdzv_endpoint",
       .group = G::nodes,
       .metavar = "HOST[:PORT]",
       .help = "where the nodes meet (c10d), the same on every node; IPv6 as [ADDR]:PORT. "
               "Default port 29400. With the static backend: the master address and port, "
               "where --master_addr/--master_port do not give them",
       .apply = into<&Options::rdzv_endpoint, parse_rdzv_endpoint>},
      {.name = "rdzv_conf",
       .group = G::nodes,
       .metavar = "KEY=VALUE,...",
       .help = "settings of the c10d rendezvous: join_timeout (or timeout; seconds, default 600), "
               "last_call_timeout (30), close_timeout (30), read_timeout (60), is_host "
               "(true/false; default: the node that can listen on the endpoint), "
               "keep_alive_interval (1), keep_alive_max_attempt (3)",
       .apply = into<&Options::rdzv_conf, parse_rdzv_conf>},
      {.name = "local_addr",
       .group = G::nodes,
       .metavar = "ADDR",
       .help = "address other nodes reach this node at (c10d). Default: this host's name",
       .apply = into<&Options::local_addr, non_empty_text>},
      {.name = "rdzv_id",
       .group = G::nodes,
       .metavar = "ID",
       .default_text = "none",
       .help = "job id, the same on every node (TORCHELASTIC_RUN_ID)",
       .apply = into<&Options::rdzv_id, non_empty_text>},
      {.name = "virtual_local_rank",
       .group = G::nodes,
       .kind = K::flag,
       .help = "torchrun's virtual local rank: every worker gets LOCAL_RANK=0 and "
               "CUDA_VISIBLE_DEVICES naming only its own device (the inherited list's entry at "
               "its local rank, else the local rank)",
       .apply = into<&Options::virtual_local_rank, parse_bool>},
      {.name = "max_restarts",
       .group = G::nodes,
       .metavar = "N",
       .default_text = "0",
       .help = "times the whole gang is restarted after a worker fails",
       .apply = into<&Options::max_restarts, parse_max_restarts>},
      {.name = "max_connections",
       .group = G::nodes,
       .metavar = "N",
       // No default_text: a default given here would be applied as if typed, and the store
       // sizes its own to the job (agent/agent_store.hpp: default_max_connections).
       .help = "most client connections the store this node hosts keeps open (default 16384, "
               "or twice what the job may open, four a node and two a rank, when that is more); "
               "past it a newcomer replaces the newest connection of the address holding the "
               "most (never an agent's)",
       .shown = Spelling::dash,
       .apply = into<&Options::max_connections, parse_store_limit>},
      {.name = "max_connections_per_address",
       .group = G::nodes,
       .metavar = "N",
       .default_text = "2048",
       .help = "most silent connections (none of their requests served yet) from one address to "
               "the store this node hosts; past it a newcomer replaces the one silent the "
               "longest; 0: no limit",
       .shown = Spelling::dash,
       .apply = into<&Options::max_connections_per_address, parse_store_limit_or_zero>},
      {.name = "max_store_bytes",
       .group = G::nodes,
       .metavar = "N",
       .default_text = "1073741824",
       .help = "most bytes of keys and values the workers may keep in the store this node hosts "
               "(the agents' own keys have a reserve beyond it); a write past it closes its "
               "connection",
       .shown = Spelling::dash,
       .apply = into<&Options::max_store_bytes, parse_store_limit>},
      {.name = "max_store_bytes_per_address",
       .group = G::nodes,
       .metavar = "N",
       .default_text = "268435456",
       .help = "most bytes of keys and values that the clients of one address may keep in the "
               "store this node hosts; a write past it closes its connection; 0: no limit",
       .shown = Spelling::dash,
       .apply = into<&Options::max_store_bytes_per_address, parse_store_limit_or_zero>},
      {.name = "monitor_interval",
       .group = G::nodes,
       .metavar = "SECONDS",
       .default_text = "0.1",
       .help = "accepted for torchrun compatibility; failures are seen as they happen",
       .apply = into<&Options::monitor_interval, parse_non_negative_seconds>},
      {.name = "role",
       .group = G::nodes,
       .metavar = "NAME",
       .default_text = "default",
       .help = "role of the workers (ROLE_NAME)",
       .apply = into<&Options::role, non_empty_text>},
      {.name = "launcher",
       .group = G::nodes,
       .metavar = "NAME",
       .default_text = "auto",
       .choices = {"auto", "local", "slurm", "ssh", "pdsh", "openmpi"},
       .help = "how gangrun reaches the other nodes. auto: with -H/--hostfile naming other "
               "hosts, ssh; in a Slurm allocation of several nodes, outside an srun step, slurm; "
               "else local. slurm: start gangrun on every node with srun; ssh (or pdsh, "
               "deepspeed's name): start gangrun on every host of the hostfile with ssh "
               "(--launcher_args then holds ssh options); openmpi: start gangrun on every host of "
               "the hostfile through Open MPI's mpirun, one task per host (--launcher_args then "
               "holds mpirun options); local: run on this node only and read nothing from Slurm",
       .apply = into<&Options::launcher, parse_launcher>},
      {.name = "launcher_args",
       .group = G::nodes,
       .metavar = "ARGS",
       .help = "more options for srun, ssh or mpirun when gangrun starts itself on every node, "
               "e.g. '--cpu-bind=cores --mem=0'",
       .apply = into<&Options::launcher_args, parse_launcher_args>},
      {.name = "worker_per_task",
       .group = G::nodes,
       .kind = K::flag,
       .help = "in an srun step with several tasks per node, make each task one worker "
               "(RANK from SLURM_PROCID, LOCAL_RANK from SLURM_LOCALID) instead of refusing",
       .shown = Spelling::dash,
       .apply = into<&Options::worker_per_task, parse_bool>},

      // ---- program
      {.name = "start_method",
       .group = G::program,
       .metavar = "METHOD",
       .choices = {"spawn", "fork", "forkserver"},
       .help = "accepted for torchrun compatibility: every worker is a new process that "
               "execs its program, as with spawn",
       .apply = accept_only<start_method_choice>},
      {.name = "run_path",
       .group = G::program,
       .kind = K::flag,
       .help = "accepted for torchrun compatibility: the script runs as PYTHON -u SCRIPT, "
               "where torchrun would run it with runpy in its worker process",
       .apply = accept_only<parse_bool>},
      {.name = "module",
       .short_name = 'm',
       .group = G::program,
       .kind = K::flag,
       .help = "PROGRAM is a Python module: run PYTHON -u -m PROGRAM ARGS",
       .apply = into<&Options::module, parse_bool>},
      {.name = "no_python",
       .group = G::program,
       .kind = K::flag,
       .help = "execute PROGRAM directly, never through Python",
       .apply = into<&Options::no_python, parse_bool>},
      {.name = "python",
       .group = G::program,
       .metavar = "PATH",
       .value_hint = ValueHint::command,
       .help = "Python interpreter. Default: $PYTHON_EXEC, else python3 on PATH",
       .apply = into<&Options::python, non_empty_text>},

      // ---- output
      {.name = "log_dir",
       .group = G::output,
       .metavar = "DIR",
       .value_hint = ValueHint::directory,
       .help = "write each worker's stdout, stderr and error file under DIR",
       .apply = into<&Options::log_dir, non_empty_text>},
      {.name = "redirects",
       .short_name = 'r',
       .group = G::output,
       .metavar = "0-3|LR:V,...",
       .default_text = "0",
       .suggestions = {"0", "1", "2", "3"},
       .help = "send worker streams to the log files instead of the console: 0 none, 1 stdout, "
               "2 stderr, 3 both; or per local rank, e.g. 0:3,1:2",
       .apply = into<&Options::redirects, parse_streams>},
      {.name = "tee",
       .short_name = 't',
       .group = G::output,
       .metavar = "0-3|LR:V,...",
       .default_text = "0",
       .suggestions = {"0", "1", "2", "3"},
       .help = "copy worker streams to the log files as well as the console (values as -r)",
       .apply = into<&Options::tee, parse_streams>},
      {.name = "local_ranks_filter",
       .group = G::output,
       .metavar = "LIST",
       .help = "show only these local ranks on the console, e.g. 0,3",
       .apply = into<&Options::local_ranks_filter, parse_local_ranks>},
      {.name = "duplicate_stdout_filters",
       .group = G::output,
       .metavar = "WORDS",
       .help = "torchrun's copy of matching stdout lines to a file: not supported",
       .refused = "gangrun does not copy filtered lines to a separate file; use --tee 1 "
                  "(or --log_dir) and search the per-worker log files"},
      {.name = "duplicate_stderr_filters",
       .group = G::output,
       .metavar = "WORDS",
       .help = "torchrun's copy of matching stderr lines to a file: not supported",
       .refused = "gangrun does not copy filtered lines to a separate file; use --tee 2 "
                  "(or --log_dir) and search the per-worker log files"},
      {.name = "logs_specs",
       .group = G::output,
       .metavar = "NAME",
       .help = "torchrun's Python plugin for log locations: not supported",
       .refused = "it names a Python entry point, which a native launcher cannot load; "
                  "use --log_dir, -r and -t"},
      {.name = "event_log_handler",
       .group = G::output,
       .metavar = "NAME",
       .help = "accepted for torchrun compatibility; gangrun's events are its log lines and "
               "--report",
       .apply = accept_only<any_text>},
      {.name = "log_prefix",
       .group = G::output,
       .metavar = "TEMPLATE",
       .help = "console line prefix; knows ${rank}, ${local_rank}, ${role_name}, ${node_rank}, "
               "${host}. Default: $TORCHELASTIC_LOG_LINE_PREFIX_TEMPLATE, else '[rank${rank}]: '",
       .shown = Spelling::dash,
       .apply = into<&Options::log_prefix, any_text>},
      {.name = "output",
       .group = G::output,
       .metavar = "MODE",
       .default_text = "auto",
       .choices = {"auto", "prefix", "inherit"},
       .help = "prefix: workers' lines behind a prefix; inherit: workers write to the terminal "
               "directly; auto: prefix for several workers, inherit for one",
       .apply = into<&Options::output, parse_output_mode>},

      // ---- supervision
      {.name = "term_timeout",
       .aliases = {"shutdown_timeout"},
       .group = G::supervision,
       .metavar = "SECONDS",
       .default_text = "30",
       .help = "grace from SIGTERM to SIGKILL when workers are stopped",
       .shown = Spelling::dash,
       .apply = into<&Options::term_timeout, parse_non_negative_seconds>},
      {.name = "failure_window",
       .group = G::supervision,
       .metavar = "SECONDS",
       .default_text = "1",
       .help = "after the first worker fails, how long the others may go on and fail by "
               "themselves before they are stopped, so that the rank they waited for (one still "
               "running when the rest timed out) is named as the root cause; 0: stop them at once",
       .shown = Spelling::dash,
       .apply = into<&Options::failure_window, parse_non_negative_seconds>},
      {.name = "hang_timeout",
       .group = G::supervision,
       .metavar = "DURATION",
       .help = "when no rank has printed a line for this long (seconds, or 90s, 5m, 1h), read "
               "every rank's stack, report the odd ones out, then do what --on-hang says; 0: off "
               "(the default)",
       .shown = Spelling::dash,
       .apply = into<&Options::hang_timeout, parse_watch_duration>},
      {.name = "on_hang",
       .group = G::supervision,
       .metavar = "ACTION",
       .default_text = "stop",
       .choices = {"report", "stop", "restart"},
       .help = "after a hang was reported: report (go on watching), stop (exit 5), restart (counts "
               "against --max_restarts)",
       .shown = Spelling::dash,
       .apply = into<&Options::on_hang, parse_on_hang>},
      {.name = "arrival_timeout",
       .group = G::supervision,
       .metavar = "DURATION",
       .default_text = "300",
       .help = "when some ranks have connected to the store this long after a round began and "
               "others have not, name the ones the others wait for; 0: off",
       .shown = Spelling::dash,
       .apply = into<&Options::arrival_timeout, parse_watch_duration>},
      {.name = "start_timeout",
       .group = G::supervision,
       .metavar = "DURATION",
       .default_text = "600",
       .help = "with --hang-timeout (or when given), when a round is still starting this long "
               "after it began (a rank has neither printed a line nor connected to the store: "
               "importing, loading), read the ranks' stacks, say which are still starting, then "
               "do what --on-hang says; --hang-timeout counts only after the start; 0: no limit",
       .shown = Spelling::dash,
       .apply = into<&Options::start_timeout, parse_watch_duration>},
      {.name = "stack_tool",
       .group = G::supervision,
       .metavar = "PATH",
       .value_hint = ValueHint::command,
       .help = "py-spy, which reads the workers' stacks; default: beside the workers' "
               "interpreter, else on PATH",
       .shown = Spelling::dash,
       .apply = into<&Options::stack_tool, any_text>},
      {.name = "straggler_watch",
       .group = G::supervision,
       .kind = K::flag,
       .help = "read every rank's stack every 5 s (--straggler-watch=SECONDS: that often), without "
               "pausing it, and name a rank that works while the others wait for it in a "
               "collective",
       .shown = Spelling::dash,
       .apply = into<&Options::straggler_watch, parse_straggler_watch>},
      {.name = "flight_recorder",
       .group = G::supervision,
       .kind = K::flag,
       .help = "switch on NCCL's flight recorder (PyTorch 2.2+), dumping into the attempt's "
               "directory; on a hang gangrun asks every rank for a dump before it stops them",
       .shown = Spelling::dash,
       .apply = into<&Options::flight_recorder, parse_bool>},
      {.name = "no_stacks_at_failure",
       .group = G::supervision,
       .kind = K::flag,
       .help = "do not read the other ranks' stacks when a rank fails",
       .shown = Spelling::dash,
       .apply = into<&Options::no_stacks_at_failure, parse_bool>},
      {.name = "numa_binding",
       .group = G::supervision,
       .metavar = "MODE",
       .choices = {"node", "socket", "exclusive", "core-complex"},
       .help = "pin each worker to CPUs near its accelerator, as torchrun does: node (its NUMA "
               "node), socket (every NUMA node of that socket), exclusive (the node's physical "
               "cores shared out among its accelerators), core-complex (one L3 cache domain each)",
       .apply = into<&Options::numa_binding, parse_numa_binding>},
      {.name = "signals_to_handle",
       .group = G::supervision,
       .metavar = "LIST",
       .default_text = "SIGTERM,SIGINT,SIGHUP,SIGQUIT",
       .help = "signals that are forwarded to the workers and stop the gang",
       .apply = into<&Options::signals_to_handle, parse_signals>},

      // ---- reporting
      {.name = "preflight",
       .group = G::reporting,
       .kind = K::flag,
       .help = "run gangrun preflight's checks on this node first and start the job only when "
               "none failed; on a job of many nodes each node checks itself and joins only if "
               "it passed (an elastic job goes on without it)",
       .shown = Spelling::dash,
       .apply = into<&Options::preflight, parse_bool>},
      {.name = "preflight_timeout",
       .group = G::reporting,
       .metavar = "DURATION",
       .default_text = "60",
       .help = "how long gangrun preflight waits for every rank's answer and for the "
               "all-reduce (seconds, or 90s, 5m); also its nodes' join timeout unless "
               "--rdzv_conf sets one",
       .shown = Spelling::dash,
       .apply = into<&Options::preflight_timeout, parse_preflight_timeout>},
      {.name = "dry_run",
       .group = G::reporting,
       .kind = K::flag,
       .help = "print the launch plan and start nothing (with -v: where each value came from)",
       .shown = Spelling::dash,
       .apply = into<&Options::dry_run, parse_bool>},
      {.name = "json",
       .group = G::reporting,
       .kind = K::flag,
       .help = "print machine-readable JSON instead of text",
       .apply = into<&Options::json, parse_bool>},
      {.name = "metrics_addr",
       .group = G::reporting,
       .metavar = "HOST:PORT",
       .help = "serve Prometheus metrics at /metrics and a liveness check at /healthz on this "
               "address; :PORT or PORT alone binds 127.0.0.1, port 0 picks a free one (logged, and "
               "written in the job's registry file)",
       .shown = Spelling::dash,
       .apply = into<&Options::metrics_addr, parse_metrics_address>},
      {.name = "report",
       .group = G::reporting,
       .metavar = "FILE",
       .value_hint = ValueHint::file,
       .help = "write the whole run as JSON to FILE",
       .apply = into<&Options::report, non_empty_text>},

      // ---- general
      {.name = "config",
       .group = G::general,
       .metavar = "FILE",
       .value_hint = ValueHint::file,
       .help = "JSON object of option values (keys are long option names); the command line "
               "and environment override it. Default: $GANGRUN_CONFIG, else $PET_CONFIG",
       .apply = into<&Options::json_config_file, non_empty_text>},
      {.name = "verbose",
       .short_name = 'v',
       .group = G::general,
       .kind = K::counter,
       .default_text = "0",
       .help = "say more; repeat for more detail",
       .apply = into<&Options::verbosity, parse_count>},
      {.name = "quiet",
       .short_name = 'q',
       .group = G::general,
       .kind = K::flag,
       .help = "print only errors",
       .apply = apply_quiet},
      {.name = "color",
       .group = G::general,
       .metavar = "WHEN",
       .default_text = "auto",
       .choices = {"auto", "always", "never"},
       .help = "color gangrun's own messages; when not given, a non-empty $NO_COLOR means never",
       .apply = into<&Options::color, parse_color_mode>},
      {.name = "version",
       .group = G::general,
       .kind = K::flag,
       .help = "print the version and exit",
       .command_line_only = true},
      {.name = "help",
       .short_name = 'h',
       .group = G::general,
       .kind = K::flag,
       .help = "print this help and exit",
       .command_line_only = true},
  };
}

// The core table with each tool's own options placed before the general ones.
std::vector<OptionSpec> make_full_table() {
  std::vector<OptionSpec> table = make_table();
  auto general = std::find_if(table.begin(), table.end(), [](const OptionSpec& spec) {
    return spec.group == OptionGroup::general;
  });
  std::vector<OptionSpec> tools;
  for (auto specs : {accelerate_option_specs, deepspeed_option_specs, hosts_option_specs}) {
    for (OptionSpec& spec : specs()) tools.push_back(std::move(spec));
  }
  table.insert(general, std::make_move_iterator(tools.begin()),
               std::make_move_iterator(tools.end()));
  return table;
}

}  // namespace

const char* to_string(OptionGroup group) {
  switch (group) {
    case OptionGroup::process_counts:
      return "Process counts (three spellings, three meanings)";
    case OptionGroup::devices:
      return "Devices";
    case OptionGroup::nodes:
      return "Nodes and restarts";
    case OptionGroup::program:
      return "Program";
    case OptionGroup::output:
      return "Output";
    case OptionGroup::supervision:
      return "Supervision";
    case OptionGroup::reporting:
      return "Reporting";
    case OptionGroup::accelerate:
      return "accelerate launch";
    case OptionGroup::deepspeed:
      return "deepspeed";
    case OptionGroup::hosts:
      return "Hosts";
    case OptionGroup::general:
      return "General";
  }
  return "Other";
}

const std::vector<OptionSpec>& option_table() {
  static const std::vector<OptionSpec> table = make_full_table();
  return table;
}

std::string dash_case(std::string_view snake_name) {
  std::string out(snake_name);
  std::replace(out.begin(), out.end(), '_', '-');
  return out;
}

std::string snake_case(std::string_view name) {
  std::string out(name);
  std::replace(out.begin(), out.end(), '-', '_');
  return out;
}

std::vector<std::string> long_spellings(const OptionSpec& spec) {
  std::vector<std::string> out;
  auto add_both = [&out](std::string_view snake_name) {
    out.emplace_back(snake_name);
    std::string dashed = dash_case(snake_name);
    if (dashed != snake_name) out.push_back(std::move(dashed));
  };
  add_both(spec.name);
  for (std::string_view alias : spec.aliases) add_both(alias);
  return out;
}

std::string display_name(const OptionSpec& spec) {
  return "--" + (spec.shown == Spelling::dash ? dash_case(spec.name) : std::string(spec.name));
}

const OptionSpec* find_option(std::string_view long_name) {
  const std::string snake_name = snake_case(long_name);
  for (const OptionSpec& spec : option_table()) {
    if (spec.name == snake_name) return &spec;
    for (std::string_view alias : spec.aliases) {
      if (alias == snake_name) return &spec;
    }
  }
  return nullptr;
}

std::string closest_spelling(std::string_view typed) {
  std::string_view bare = typed.substr(0, typed.find('='));
  while (bare.starts_with('-')) bare.remove_prefix(1);
  std::string best;
  std::size_t best_distance = bare.size() < 6 ? 1 : 2;  // short words: only one edit away
  for (const OptionSpec& spec : option_table()) {
    for (const std::string& spelling : long_spellings(spec)) {
      std::size_t d = strings::edit_distance(bare, spelling);
      if (d <= best_distance && (best.empty() || d < best_distance)) {
        best = "--" + spelling;
        best_distance = d;
      }
    }
  }
  return best;
}

const OptionSpec* find_option_by_name(std::string_view snake_name) {
  for (const OptionSpec& spec : option_table()) {
    if (spec.name == snake_name) return &spec;
  }
  return nullptr;
}

const OptionSpec& option_row(std::string_view name) {
  const OptionSpec* spec = find_option_by_name(name);
  if (spec == nullptr) {
    // Only an opt:: name reaches here, and test_config_option_rows.cpp checks
    // that each has its row: this is a build that skipped its tests.
    std::fprintf(stderr, "gangrun: internal error: option %.*s has no row\n",
                 static_cast<int>(name.size()), name.data());
    std::abort();
  }
  return *spec;
}

const OptionSpec* find_option_by_short_name(char letter) {
  for (const OptionSpec& spec : option_table()) {
    if (spec.short_name == letter) return &spec;
  }
  return nullptr;
}

}  // namespace gangrun::config
