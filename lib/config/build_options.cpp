#include "config/build_options.hpp"

#include "config/accelerate/accelerate_values.hpp"
#include "config/deepspeed/deepspeed_values.hpp"
#include "config/hosts/hosts_values.hpp"
#include "config/job_values.hpp"
#include "config/option_values.hpp"
#include "config/problems.hpp"
#include "schedulers/mpi_job.hpp"
#include "util/strings.hpp"

#include <algorithm>
#include <optional>

namespace gangrun::config {

namespace {

// Each row's apply, in table order but --rdzv_backend first (it decides how
// --nnodes reads). Every value that does not type is a problem of its own.
void apply_rows(const LayeredValues& values, Options& o, Problems& problems) {
  auto apply = [&](const OptionSpec& spec) {
    if (spec.apply == nullptr) return;
    auto value = values.find(spec.name);
    if (value == values.end()) return;
    Expected<void> applied = spec.apply(value->second.text, o);
    if (!applied) {
      problems.add(Error(ErrorCode::usage, value->second.where + ": " + applied.error().message()));
    }
  };
  const OptionSpec& first = option_row(opt::rdzv_backend);
  apply(first);
  for (const OptionSpec& spec : option_table()) {
    if (&spec != &first) apply(spec);
  }
}

// -q beats -v given in the same or a lower layer; -v on the command line
// beats GANGRUN_QUIET=1. The rows applied both, -q last.
void settle_quiet_and_verbose(const LayeredValues& values, Options& o) {
  const LayeredValue& quiet = value_of(values, opt::quiet);      // a flag: false by default
  const LayeredValue& verbose = value_of(values, opt::verbose);  // default 0
  if (o.verbosity == -1 && verbose.source > quiet.source) {
    o.verbosity = parse_count(verbose.text).value_or(0);
  }
}

// Another launcher's option that gangrun cannot honour, given in any layer.
void check_refused(const LayeredValues& values, Problems& problems) {
  for (const OptionSpec& spec : option_table()) {
    if (spec.refused.empty()) continue;
    const LayeredValue* value = given_value(values, spec.name);
    if (value == nullptr) continue;
    problems.add(
        Error(ErrorCode::usage, value->where + " is not supported: " + std::string(spec.refused)));
  }
}

// One process-count spelling reduced to workers per node, for comparison.
struct PerNode {
  const LayeredValue* value;
  int count;
  std::string meaning;  // "4 workers per node (8 in total over 2 nodes)"
};

Expected<void> check_process_counts(const Options& o, const LayeredValues& values) {
  std::vector<PerNode> counts;
  if (o.nproc_per_node && o.nproc_per_node->kind == ProcCount::Kind::number) {
    int n = o.nproc_per_node->number;
    // No layer gave it where a hostfile's slots or accelerate's one process
    // per machine set it; then the others are what was given.
    auto given = values.find(opt::nproc_per_node);
    if (given != values.end()) {
      counts.push_back({&given->second, n, std::to_string(n) + " workers per node"});
    }
  }
  if (o.num_processes) {
    const LayeredValue* total = &value_of(values, opt::num_processes);
    const LayeredValue* nodes = &value_of(values, opt::nnodes);
    if (o.min_nnodes < o.nnodes) {
      return fail_usage(total->where +
                        ": a total process count cannot be split over an elastic node range (" +
                        nodes->given + "); give workers per node with --nproc_per_node");
    }
    const std::string over = std::to_string(o.nnodes) + (o.nnodes == 1 ? " node" : " nodes");
    if (*o.num_processes % o.nnodes != 0) {
      return fail_usage(total->where + ": " + std::to_string(*o.num_processes) +
                        (*o.num_processes == 1 ? " process" : " processes") +
                        " in total cannot be split evenly over " + over + " (" + nodes->given +
                        "); give a multiple of " + std::to_string(o.nnodes));
    }
    int per_node = *o.num_processes / o.nnodes;
    counts.push_back({total, per_node,
                      std::to_string(per_node) + " workers per node (" +
                          std::to_string(*o.num_processes) + " in total over " + over + ")"});
  }
  if (o.num_gpus) {
    counts.push_back({&value_of(values, opt::num_gpus), *o.num_gpus,
                      std::to_string(*o.num_gpus) + " workers per node"});
  }
  for (std::size_t i = 1; i < counts.size(); ++i) {
    if (counts[i].count != counts[0].count) {
      return fail_usage(counts[0].value->given + " and " + counts[i].value->given +
                        " disagree: the first means " + counts[0].meaning + ", the second " +
                        counts[i].meaning + "; give only one of them");
    }
  }
  return {};
}

Expected<void> check_nodes(const Options& o, const LayeredValues& values) {
  // c10d hands out node ranks itself; torchrun ignores --node_rank there.
  // --standalone launches as static (apply_rendezvous), so it is checked.
  const bool ranks_given = o.rdzv_backend == RendezvousBackend::static_ranks || o.standalone;
  if (ranks_given && o.node_rank >= o.nnodes) {
    return fail_usage(value_of(values, opt::node_rank).where + ": " + std::to_string(o.node_rank) +
                      " is not a node rank for " + value_of(values, opt::nnodes).given +
                      " (expected 0.." + std::to_string(o.nnodes - 1) + ")");
  }
  if (o.standalone && o.nnodes > 1) {
    return fail_usage(value_of(values, opt::standalone).where + " runs on a single node, but " +
                      value_of(values, opt::nnodes).given + " asks for " +
                      std::to_string(o.nnodes) + "; drop one of them");
  }
  return {};
}

// An MPI task on several hosts whose head neither its variables nor the
// user name (schedulers/mpi_job.hpp says what to do).
Expected<void> check_scheduler_head(const Options& o, const LayeredValues& values) {
  if (!o.job || o.job->is_slurm() || o.job->start != schedulers::Start::every_node ||
      o.standalone || o.rdzv_endpoint || given_value(values, opt::master_addr) != nullptr) {
    return {};
  }
  return schedulers::check_mpi_head(*o.job);
}

// c10d's nodes meet at an endpoint that every node is given; --standalone
// (torchrun's c10d on localhost) needs none.
Expected<void> check_rendezvous(const Options& o, const LayeredValues& values) {
  if (o.rdzv_backend == RendezvousBackend::c10d && !o.standalone && !o.rdzv_endpoint) {
    return fail_usage(value_of(values, opt::rdzv_backend).given +
                      " needs --rdzv_endpoint HOST[:PORT]" +
                      " (the same on every node, e.g. node0:29400)");
  }
  return {};
}

// --standalone stays the single-node static launch it has always been
// (torchrun's c10d on localhost with a free port comes to the same); its
// endpoint is its own, so a given one is dropped as torchrun overrides it.
// The static backend takes a given endpoint as the master address and port,
// as torchrun does, where --master_addr/--master_port do not set them.
void apply_rendezvous(Options& o, const LayeredValues& values) {
  if (o.standalone) {
    o.rdzv_backend = RendezvousBackend::static_ranks;
    o.rdzv_endpoint.reset();
    return;
  }
  if (o.rdzv_backend != RendezvousBackend::static_ranks || !o.rdzv_endpoint) return;
  const LayeredValue& endpoint = value_of(values, opt::rdzv_endpoint);
  auto derive = [&](std::string_view name, const std::string& text) {
    o.origins[std::string(name)] =
        Options::Origin{text + " (from " + endpoint.given + ")", endpoint.source};
  };
  if (!values.contains(opt::master_addr)) {
    o.master_addr = o.rdzv_endpoint->host;
    derive(opt::master_addr, o.rdzv_endpoint->host);
  }
  if (!values.contains(opt::master_port)) {
    o.master_port = o.rdzv_endpoint->port;
    derive(opt::master_port, std::to_string(o.rdzv_endpoint->port));
  }
}

// Device selections that cannot be combined (as in deepspeed, where
// --gpu_ids is accelerate's spelling of --include), and per-rank settings
// without per-rank mode. This is the one place selections are checked
// against each other, before any device is probed; whether the devices
// exist is launch's business (placement/selection.hpp), with the node's devices.
Expected<void> check_device_flags(const Options& o, const LayeredValues& values) {
  auto given = [&](std::string_view name) { return given_value(values, name); };
  const LayeredValue* include = given(opt::include);
  const LayeredValue* exclude = given(opt::exclude);
  const LayeredValue* gpu_ids = given(opt::gpu_ids);
  if (include && exclude) {
    return fail_usage(include->given + " and " + exclude->given +
                      " cannot be combined (as in deepspeed); name the devices to use with one of "
                      "them");
  }
  const bool ids_select = gpu_ids && o.gpu_ids;  // --gpu_ids all selects nothing
  if (ids_select && (include || exclude)) {
    return fail_usage(gpu_ids->given + " and " + (include ? include : exclude)->given +
                      " both select devices; give only one of them");
  }
  if (ids_select && !include && !exclude && o.include) {
    return fail_usage(gpu_ids->given + " and the hostfile's slots for this host (--include " +
                      *o.include + ") both select devices; give only one of them");
  }
  const LayeredValue* num_gpus = given(opt::num_gpus);
  const LayeredValue* other = ids_select ? gpu_ids : include ? include : exclude;
  if (num_gpus && other) {
    return fail_usage(num_gpus->given + " and " + other->given +
                      " both select devices; give only one of them (--num_gpus N takes the "
                      "first N)");
  }
  const LayeredValue* per_proc = given(opt::devices_per_proc);
  if (per_proc && o.visible_devices != VisibleDevices::per_rank) {
    return fail_usage(
        per_proc->given +
        " applies to --visible-devices per-rank only (in shared mode every worker sees "
        "every selected device); add --visible-devices per-rank or drop it");
  }
  return {};
}

// One owner for a worker's CPUs: torchrun's binding and deepspeed's each
// decide them whole.
Expected<void> check_cpu_binding(const Options& o, const LayeredValues& values) {
  if (!o.numa_binding || !o.deepspeed.bind_cores_to_rank) return {};
  const LayeredValue* cores = given_value(values, opt::bind_cores_to_rank);
  return fail_usage(value_of(values, opt::numa_binding).given + " and " +
                    (cores ? cores->given : std::string("--bind_cores_to_rank")) +
                    " both decide which CPUs each worker runs on; give only one of them");
}

Expected<void> check_module(const Options& o, const LayeredValues& values) {
  if (o.module && o.no_python) {
    const LayeredValue& module = value_of(values, opt::module);
    const LayeredValue& no_python = value_of(values, opt::no_python);
    std::string message = "-m/--module and --no_python cannot be combined";
    if (module.source != Source::command_line || no_python.source != Source::command_line) {
      message += " (" + module.given + ", " + no_python.given + ")";
    }
    return fail_usage(message);
  }
  return {};
}

Expected<void> check_program_given(const Options& o) {
  if (o.program_and_args.empty()) {
    return fail_usage(
        "missing PROGRAM: put the program and its arguments after the options, e.g. "
        "'gangrun --nproc_per_node 2 train.py --epochs 3' (see gangrun --help)");
  }
  return {};
}

// NO_COLOR (no-color.org) changes --color's default, not a value given anywhere.
void apply_no_color(Options& o, const EnvMap& env) {
  auto origin = o.origins.find(std::string(opt::color));
  if (origin != o.origins.end() && origin->second.source != Source::default_value) return;
  std::optional<std::string> no_color = env_lookup(env, "NO_COLOR");
  if (!no_color || no_color->empty()) return;
  o.color = ColorMode::never;
  o.origins[std::string(opt::color)] =
      Options::Origin{"never (NO_COLOR is set)", Source::default_value};
}

// A refused flag stops accelerate's typing; the hosts of --mpirun_hostfile,
// once taken, stay taken when a later value is wrong, for the hosts' typing to
// read with the other problems.
Expected<void> add_accelerate_values(const LayeredValues& values, Options& o) {
  GANGRUN_TRY(refuse_unhonoured_accelerate_flags(values));
  GANGRUN_TRY_ASSIGN(mpirun_hostfile, type_mpirun_hostfile(values, o));
  if (*mpirun_hostfile) {
    // Refused with -H and with a --launcher other than openmpi, so it
    // overrides only the automatic launcher and a hostfile nobody gave.
    o.hosts.hostfile = **mpirun_hostfile;
    o.launcher = Options::Launcher::openmpi;
  }
  GANGRUN_TRY_ASSIGN(accelerate, type_accelerate_values(values, o));
  o.accelerate = std::move(accelerate->settings);  // no row sets it
  if (o.accelerate.one_plain_process) {
    // Overrides the process counts the rows typed: accelerate's simple
    // launcher runs the script once per machine, whatever --num_processes or
    // --num_gpus asked for.
    o.nproc_per_node = ProcCount{.kind = ProcCount::Kind::number, .number = 1};
    o.num_processes.reset();
    o.num_gpus.reset();
  }
  // Set only where no --rdzv_endpoint was given.
  if (accelerate->rdzv_endpoint) o.rdzv_endpoint = *accelerate->rdzv_endpoint;
  return {};
}

// accelerate's, then deepspeed's, then the hosts': each reads what the one
// before it added (the hosts of --mpirun_hostfile, deepspeed's --num_gpus on
// CPUs as the count the hosts are limited by).
void add_tool_values(const LayeredValues& values, Options& o, Problems& problems) {
  problems.keep(add_accelerate_values(values, o));

  const DeepspeedAdditions deepspeed = type_deepspeed_values(values, o);
  // Overrides the default verbosity only: set where -v and -q are not given.
  if (deepspeed.verbosity) o.verbosity = *deepspeed.verbosity;
  if (deepspeed.num_gpus_as_workers_per_node) {
    // Set only where no process count was given: a CPU launch has no devices
    // for --num_gpus to select, so it counts the workers instead.
    o.nproc_per_node = ProcCount{.kind = ProcCount::Kind::number,
                                 .number = *deepspeed.num_gpus_as_workers_per_node};
    o.num_gpus.reset();
  }
  problems.keep(check_deepspeed_values(values, o));

  Expected<HostsAdditions> hosts = type_hosts_values(values, o);
  if (!problems.keep(hosts)) return;
  o.hosts.hosts = std::move(hosts->hosts);  // no row sets it
  if (hosts->run_here) {
    // Overrides --nproc_per_node, --include and --exclude: a hostfile naming
    // only this host runs here, its slots the workers and their devices (the
    // filters were applied to the slots already).
    o.nproc_per_node = hosts->run_here->nproc_per_node;
    o.include = hosts->run_here->include;
    o.exclude.reset();
  }
  if (hosts->start_hosts) {
    // Overrides --launcher auto and --nnodes: gangrun starts the hosts itself,
    // and their count (--num_nodes applied already) is the node count.
    o.launcher = hosts->start_hosts->launcher;
    o.nnodes = o.min_nnodes = hosts->start_hosts->nnodes;
  }
}

}  // namespace

Expected<Options> build_options(const Layers& layers, std::vector<std::string> program_and_args,
                                const EnvMap& env, Purpose purpose, Problems found_before) {
  const LayeredValues& values = layers.values;
  // Every value on its own first: each problem is reported, all at once,
  // after those layering found.
  Problems problems = std::move(found_before);
  Options o;
  o.job = layers.job;
  check_refused(values, problems);
  apply_rows(values, o, problems);
  if (!problems.empty()) {
    // The rest reads typed values, so it waits for them; the hostfile needs
    // only its own, and a missing one is worth knowing in the same run.
    problems.keep(check_hostfile_alone(o));
    GANGRUN_TRY(problems.result());
  }
  settle_quiet_and_verbose(values, o);

  // Then what the tools' flags add beyond their rows' fields, and the checks
  // that set several options against each other; these read typed values, so
  // they run once every value typed, and each reports its problem.
  add_tool_values(values, o, problems);
  o.program_and_args = std::move(program_and_args);
  for (const auto& [name, value] : values) {
    // A value from a scheduler says which variables gave it, one from
    // accelerate's YAML config which file and key.
    const bool says_where = value.source == Source::slurm || value.source == Source::scheduler ||
                            !value.file_key.empty();
    std::string shown = says_where ? value.text + " (" + value.where + ")" : value.text;
    o.origins[name] = {std::move(shown), value.source, value.where};
  }
  if (problems.empty()) {
    for (auto check : {check_module, check_nodes, check_rendezvous, check_scheduler_head,
                       check_process_counts, check_device_flags, check_cpu_binding}) {
      problems.keep(check(o, values));
    }
  }
  if (purpose == Purpose::launch) {
    problems.keep(check_program_given(o));
  } else if (!o.program_and_args.empty()) {
    std::string word = purpose == Purpose::devices ? "devices" : "preflight";
    problems.add(Error(ErrorCode::usage,
                       "gangrun " + word + " takes launch options but no program ('" +
                           o.program_and_args.front() + "' was given); to run a program called " +
                           word + ", use gangrun -- " + word));
  } else if (purpose == Purpose::preflight && o.preflight) {
    problems.add(Error(ErrorCode::usage,
                       "gangrun preflight runs the checks already; --preflight is for a launch"));
  }
  GANGRUN_TRY(problems.result());
  apply_rendezvous(o, values);
  apply_no_color(o, env);
  return o;
}

}  // namespace gangrun::config
