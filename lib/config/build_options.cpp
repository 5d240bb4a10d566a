#include "config/build_options.hpp"

#include "config/accelerate_values.hpp"
#include "config/deepspeed_values.hpp"
#include "config/hosts_values.hpp"
#include "config/option_values.hpp"
#include "config/slurm_values.hpp"
#include "config/value_typer.hpp"
#include "util/strings.hpp"

#include <algorithm>
#include <optional>

namespace gangrun::config {

namespace {

// --nnodes as the static backend reads it: one count, no range.
Expected<NodeRange> fixed_node_count(std::string_view text) {
  GANGRUN_TRY_ASSIGN(count, parse_nnodes(text));
  return NodeRange{*count, *count};
}

Expected<Options> type_each_value(const LayeredValues& values) {
  Typer typer(values);
  Options o;
  bool quiet = false;
  typer.set("nproc_per_node", parse_proc_count, o.nproc_per_node);
  typer.set("num_processes", parse_positive_int, o.num_processes);
  typer.set("num_gpus", parse_positive_int, o.num_gpus);
  typer.set("accelerator", parse_accelerator, o.accelerator);
  typer.set("gpu_ids", parse_gpu_ids, o.gpu_ids);
  typer.set("include", non_empty_text, o.include);
  typer.set("exclude", non_empty_text, o.exclude);
  typer.set("visible_devices", parse_visible_devices, o.visible_devices);
  typer.set("devices_per_proc", parse_positive_int, o.devices_per_proc);
  typer.set("mask_format", parse_mask_format, o.mask_format);
  // The backend decides how --nnodes reads: only c10d takes a MIN:MAX range.
  typer.set("rdzv_backend", parse_rdzv_backend, o.rdzv_backend);
  NodeRange nodes{.min = o.min_nnodes, .max = o.nnodes};
  typer.set("nnodes", o.rdzv_backend == "c10d" ? parse_node_range : fixed_node_count, nodes);
  o.min_nnodes = nodes.min;
  o.nnodes = nodes.max;
  typer.set("node_rank", parse_non_negative_int, o.node_rank);
  typer.set("master_addr", non_empty_text, o.master_addr);
  typer.set("master_port", parse_port, o.master_port);
  typer.set("standalone", parse_bool, o.standalone);
  typer.set("rdzv_endpoint", parse_rdzv_endpoint, o.rdzv_endpoint);
  typer.set("rdzv_conf", parse_rdzv_conf, o.rdzv_conf);
  typer.set("local_addr", non_empty_text, o.local_addr);
  typer.set("rdzv_id", non_empty_text, o.rdzv_id);
  typer.set("virtual_local_rank", parse_bool, o.virtual_local_rank);
  typer.set("max_restarts", parse_max_restarts, o.max_restarts);
  typer.set("monitor_interval", parse_non_negative_seconds, o.monitor_interval);
  typer.set("role", non_empty_text, o.role);
  typer.set("launcher", parse_launcher, o.launcher);
  typer.set("launcher_args", parse_launcher_args, o.launcher_args);
  typer.set("worker_per_task", parse_bool, o.worker_per_task);
  typer.set("module", parse_bool, o.module);
  typer.set("no_python", parse_bool, o.no_python);
  typer.set("python", non_empty_text, o.python);
  typer.set("log_dir", non_empty_text, o.log_dir);
  typer.set("redirects", parse_streams, o.redirects);
  typer.set("tee", parse_streams, o.tee);
  typer.set("local_ranks_filter", parse_local_ranks, o.local_ranks_filter);
  typer.set("log_prefix", any_text, o.log_prefix);
  typer.set("output", parse_output_mode, o.output);
  typer.set("term_timeout", parse_non_negative_seconds, o.term_timeout);
  typer.set("failure_window", parse_non_negative_seconds, o.failure_window);
  typer.set("signals_to_handle", parse_signals, o.signals_to_handle);
  typer.set("dry_run", parse_bool, o.dry_run);
  typer.set("json", parse_bool, o.json);
  typer.set("report", non_empty_text, o.report);
  typer.set("config", non_empty_text, o.config_file);
  typer.set("verbose", parse_count, o.verbosity);
  typer.set("quiet", parse_bool, quiet);
  typer.set("color", parse_color_mode, o.color);
  if (typer.error()) return tl::unexpected(*typer.error());

  // -q beats -v given in the same or a lower layer; -v on the command line
  // beats GANGRUN_QUIET=1.
  const LayeredValue* quiet_value = typer.find("quiet");
  const LayeredValue* verbose_value = typer.find("verbose");  // always there: default 0
  if (quiet && quiet_value->source >= verbose_value->source) {
    o.verbosity = -1;
  }
  return o;
}

// torchrun options gangrun accepts without a field: their values are checked,
// and nothing depends on them (option_table.cpp says why for each).
Expected<void> check_accepted_only(const LayeredValues& values) {
  for (std::string_view name : {"start_method", "run_path", "event_log_handler"}) {
    auto it = values.find(name);
    if (it == values.end()) continue;
    const OptionSpec& spec = *find_option_by_name(name);
    const std::string& text = it->second.text;
    if (spec.kind == OptionKind::flag) {
      if (auto flag = parse_bool(text); !flag) {
        return fail_usage(it->second.where + ": " + flag.error().message());
      }
    } else if (!spec.choices.empty() &&
               std::find(spec.choices.begin(), spec.choices.end(), text) == spec.choices.end()) {
      return fail_usage(it->second.where + ": '" + text + "' is not one of " +
                        strings::join({spec.choices.begin(), spec.choices.end()}, ", "));
    }
  }
  return {};
}

// Another launcher's option that gangrun cannot honour, given in any layer.
Expected<void> check_refused(const LayeredValues& values) {
  for (const OptionSpec& spec : option_table()) {
    if (spec.refused.empty()) continue;
    const LayeredValue* value = given_value(values, spec.name);
    if (value == nullptr) continue;
    return fail_usage(value->where + " is not supported: " + std::string(spec.refused));
  }
  return {};
}

// An option that always has a value here (a default at least).
const LayeredValue& at(const LayeredValues& values, std::string_view name) {
  return values.find(name)->second;
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
    counts.push_back({&at(values, "nproc_per_node"), n, std::to_string(n) + " workers per node"});
  }
  if (o.num_processes) {
    const LayeredValue* total = &at(values, "num_processes");
    const LayeredValue* nodes = &at(values, "nnodes");
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
    counts.push_back(
        {&at(values, "num_gpus"), *o.num_gpus, std::to_string(*o.num_gpus) + " workers per node"});
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
  const bool ranks_given = o.rdzv_backend == "static" || o.standalone;
  if (ranks_given && o.node_rank >= o.nnodes) {
    return fail_usage(at(values, "node_rank").where + ": " + std::to_string(o.node_rank) +
                      " is not a node rank for " + at(values, "nnodes").given + " (expected 0.." +
                      std::to_string(o.nnodes - 1) + ")");
  }
  if (o.standalone && o.nnodes > 1) {
    return fail_usage(at(values, "standalone").where + " runs on a single node, but " +
                      at(values, "nnodes").given + " asks for " + std::to_string(o.nnodes) +
                      "; drop one of them");
  }
  return {};
}

// c10d's nodes meet at an endpoint that every node is given; --standalone
// (torchrun's c10d on localhost) needs none.
Expected<void> check_rendezvous(const Options& o, const LayeredValues& values) {
  if (o.rdzv_backend == "c10d" && !o.standalone && !o.rdzv_endpoint) {
    return fail_usage(at(values, "rdzv_backend").given + " needs --rdzv_endpoint HOST[:PORT]" +
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
    o.rdzv_backend = "static";
    o.rdzv_endpoint.reset();
    return;
  }
  if (o.rdzv_backend != "static" || !o.rdzv_endpoint) return;
  const LayeredValue& endpoint = at(values, "rdzv_endpoint");
  auto derive = [&](const char* name, std::string text) {
    o.origins[name] = Options::Origin{text + " (from " + endpoint.given + ")", endpoint.source};
  };
  if (!values.contains("master_addr")) {
    o.master_addr = o.rdzv_endpoint->host;
    derive("master_addr", o.rdzv_endpoint->host);
  }
  if (!values.contains("master_port")) {
    o.master_port = o.rdzv_endpoint->port;
    derive("master_port", std::to_string(o.rdzv_endpoint->port));
  }
}

// Selection flags that cannot be combined, and per-rank settings without
// per-rank mode, are refused here; whether the devices exist is launch's
// business (it needs the node's devices).
Expected<void> check_device_flags(const Options& o, const LayeredValues& values) {
  auto given = [&](std::string_view name) { return given_value(values, name); };
  const LayeredValue* include = given("include");
  const LayeredValue* exclude = given("exclude");
  const LayeredValue* gpu_ids = given("gpu_ids");
  if (include && exclude) {
    return fail_usage(include->given + " and " + exclude->given +
                      " cannot be combined (as in deepspeed); name the devices to use with one of "
                      "them");
  }
  if (gpu_ids && o.gpu_ids && (include || exclude)) {
    return fail_usage(gpu_ids->given + " and " + (include ? include : exclude)->given +
                      " both select devices; give only one of them");
  }
  const LayeredValue* per_proc = given("devices_per_proc");
  if (per_proc && o.visible_devices != VisibleDevices::per_rank) {
    return fail_usage(
        per_proc->given +
        " applies to --visible-devices per-rank only (in shared mode every worker sees "
        "every selected device); add --visible-devices per-rank or drop it");
  }
  return {};
}

Expected<void> check_module(const Options& o, const LayeredValues& values) {
  if (o.module && o.no_python) {
    const LayeredValue& module = at(values, "module");
    const LayeredValue& no_python = at(values, "no_python");
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
  auto origin = o.origins.find("color");
  if (origin != o.origins.end() && origin->second.source != Source::default_value) return;
  std::optional<std::string> no_color = env_lookup(env, "NO_COLOR");
  if (!no_color || no_color->empty()) return;
  o.color = ColorMode::never;
  o.origins["color"] = Options::Origin{"never (NO_COLOR is set)", Source::default_value};
}

}  // namespace

Expected<Options> build_options(const LayeredValues& values,
                                std::vector<std::string> program_and_args, const EnvMap& env,
                                Purpose purpose) {
  GANGRUN_TRY(check_refused(values));
  GANGRUN_TRY(check_accepted_only(values));
  Expected<Options> options = type_each_value(values);
  if (!options) return options;
  Options& o = *options;
  for (auto type_tool_values : {type_accelerate_values, type_deepspeed_values, type_hosts_values}) {
    GANGRUN_TRY(type_tool_values(values, o));
  }
  o.program_and_args = std::move(program_and_args);
  for (const auto& [name, value] : values) {
    // A value from Slurm says which variables gave it, one from accelerate's
    // YAML config which file and key.
    const bool says_where = value.source == Source::slurm || !value.file_key.empty();
    std::string shown = says_where ? value.text + " (" + value.where + ")" : value.text;
    o.origins[name] = {std::move(shown), value.source};
  }

  for (auto check :
       {check_module, check_nodes, check_rendezvous, check_process_counts, check_device_flags}) {
    GANGRUN_TRY(check(o, values));
  }
  if (purpose == Purpose::launch) {
    GANGRUN_TRY(check_program_given(o));
  } else if (!o.program_and_args.empty()) {
    return fail_usage("gangrun devices takes launch options but no program ('" +
                      o.program_and_args.front() +
                      "' was given); to run a program called devices, use gangrun -- devices");
  }
  apply_rendezvous(o, values);
  apply_no_color(o, env);
  return options;
}

}  // namespace gangrun::config
