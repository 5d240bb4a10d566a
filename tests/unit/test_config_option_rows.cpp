// Every row of the option table is applied: given a value, it lands in
// Options. A row whose value goes nowhere (a misspelled name, an apply left
// out) fails here, as does an opt:: constant without its row.
#include "config/option_table.hpp"
#include "config/options.hpp"
#include "config_test_support.hpp"

#include <catch2/catch.hpp>

#include <algorithm>
#include <map>
#include <set>
#include <string>
#include <vector>

namespace gangrun::config {
namespace {

using test::launch;

// A value for each row that is not its default.
const std::map<std::string, std::string>& sample_values() {
  static const std::map<std::string, std::string> samples = {
      {"nproc_per_node", "3"},
      {"num_processes", "2"},
      {"num_gpus", "2"},
      {"accelerator", "cpu"},
      {"gpu_ids", "0,1"},
      {"include", "localhost:0"},
      {"exclude", "localhost:1"},
      {"visible_devices", "per-rank"},
      {"devices_per_proc", "2"},
      {"mask_format", "uuid"},
      {"nnodes", "2"},
      {"node_rank", "1"},
      {"master_addr", "node0"},
      {"master_port", "1234"},
      {"standalone", "true"},
      {"rdzv_backend", "c10d"},
      {"rdzv_endpoint", "node0:1234"},
      {"rdzv_conf", "join_timeout=5"},
      {"local_addr", "node1"},
      {"rdzv_id", "job7"},
      {"virtual_local_rank", "true"},
      {"max_restarts", "2"},
      {"monitor_interval", "5"},
      {"role", "trainer"},
      {"launcher", "local"},
      {"launcher_args", "--mem=0"},
      {"worker_per_task", "true"},
      {"start_method", "fork"},
      {"run_path", "true"},
      {"module", "true"},
      {"no_python", "true"},
      {"python", "/usr/bin/python3"},
      {"log_dir", "/tmp/logs"},
      {"redirects", "3"},
      {"tee", "1"},
      {"local_ranks_filter", "0"},
      {"event_log_handler", "null"},
      {"log_prefix", "[x]"},
      {"output", "inherit"},
      {"term_timeout", "5"},
      {"max_connections", "4096"},
      {"max_connections_per_address", "0"},
      {"max_store_bytes", "1000000"},
      {"max_store_bytes_per_address", "5000"},
      {"failure_window", "0"},
      {"hang_timeout", "90s"},
      {"preflight", "true"},
      {"preflight_timeout", "30"},
      {"arrival_timeout", "90"},
      {"on_hang", "restart"},
      {"stack_tool", "/opt/py-spy"},
      {"no_stacks_at_failure", "true"},
      {"straggler_watch", "2.5"},
      {"flight_recorder", "true"},
      {"numa_binding", "core-complex"},
      {"signals_to_handle", "SIGTERM"},
      {"dry_run", "true"},
      {"json", "true"},
      {"report", "/tmp/report.json"},
      {"metrics_addr", ":9400"},
      {"config", "/tmp/job.json"},
      {"verbose", "2"},
      {"quiet", "true"},
      {"color", "never"},
      {"launch_style", "deepspeed"},
      {"no_local_rank", "true"},
      {"enable_each_rank_log", "/tmp/ranks"},
      {"bind_cores_to_rank", "true"},
      {"bind_core_list", "0,1"},
      {"save_pid", "true"},
      {"force_multi", "true"},
      {"no_ssh", "true"},
      {"log_level", "debug"},
      {"hostfile", "/tmp/hostfile"},
      {"ssh_port", "2222"},
      {"no_ssh_check", "true"},
  };
  return samples;
}

// Rows gangrun parses and checks for another launcher's sake, whose value
// changes nothing (their help says so).
const std::set<std::string> accepted_without_effect = {"start_method", "run_path",
                                                       "event_log_handler"};

TEST_CASE("option rows: every opt:: name has its row, and every row its name", "[config]") {
  std::vector<std::string> rows;
  for (const OptionSpec& spec : option_table()) rows.emplace_back(spec.name);
  std::vector<std::string> names(std::begin(opt::all), std::end(opt::all));
  std::sort(rows.begin(), rows.end());
  std::sort(names.begin(), names.end());
  CHECK(names == rows);
  for (std::string_view name : opt::all) CHECK(&option_row(name) == find_option_by_name(name));
}

TEST_CASE("option rows: each row that applies a value lands it in Options", "[config]") {
  const Options defaults;
  int applied = 0;
  for (const OptionSpec& spec : option_table()) {
    if (spec.apply == nullptr) continue;
    const std::string name(spec.name);
    INFO("--" << name);
    auto sample = sample_values().find(name);
    REQUIRE(sample != sample_values().end());  // a new row needs its sample here
    Options o;
    REQUIRE(spec.apply(sample->second, o));
    if (accepted_without_effect.contains(name)) {
      CHECK(o == defaults);
    } else {
      CHECK_FALSE(o == defaults);
    }
    ++applied;
  }
  CHECK(applied == static_cast<int>(sample_values().size()));
}

TEST_CASE("option rows: a row without apply is refused, answered by the CLI, or accelerate's",
          "[config]") {
  for (const OptionSpec& spec : option_table()) {
    if (spec.apply != nullptr) continue;
    INFO("--" << spec.name);
    CHECK(
        (!spec.refused.empty() || spec.command_line_only || spec.group == OptionGroup::accelerate));
  }
}

TEST_CASE("option rows: each row's value lands through the whole parse", "[config]") {
  // The same as above, through layering and build_options: the row's value
  // given on the command line reaches Options.
  const Options plain = launch({"p"});
  for (const auto& [name, text] : sample_values()) {
    if (accepted_without_effect.contains(name)) continue;
    const OptionSpec& spec = option_row(name);
    if (spec.group != OptionGroup::process_counts && spec.group != OptionGroup::output) continue;
    INFO("--" << name);
    Options o = launch({"--" + name, text, "p"});
    o.origins.clear();
    Options without_origins = plain;
    without_origins.origins.clear();
    CHECK_FALSE(o == without_origins);
  }
}

// accelerate's own flags turn into the workers' variables
// (accelerate_values.cpp); each is given where accelerate reads it.
struct AccelerateCase {
  std::vector<std::string> context;  // what makes accelerate read the flag
  std::string value;
};

std::vector<std::string> accelerate_context(std::string_view name) {
  if (name.starts_with("fsdp_")) return {"--use_fsdp"};
  if (name.starts_with("megatron_lm_")) return {"--use_megatron_lm"};
  if (name.starts_with("fp8_")) return {"--mixed_precision", "fp8"};
  if (name.starts_with("parallelism_config_")) {
    return {"--use_fsdp",
            "--fsdp_version",
            "2",
            "--use_parallelism_config",
            "--parallelism_config_cp_size",
            "2",
            "--parallelism_config_sp_size",
            "2"};
  }
  static const std::set<std::string_view> deepspeed = {"deepspeed_config_file",
                                                       "zero_stage",
                                                       "offload_optimizer_device",
                                                       "offload_param_device",
                                                       "gradient_clipping",
                                                       "gradient_accumulation_steps",
                                                       "zero3_init_flag",
                                                       "zero3_save_16bit_model",
                                                       "deepspeed_moe_layer_cls_names"};
  if (deepspeed.contains(name)) return {"--use_deepspeed"};
  return {"--same_network"};  // any of accelerate's flags: the line speaks accelerate
}

// accelerate's flags that reach no worker: accepted as accelerate accepts
// them, refused (accelerate_values.cpp says why), or deciding only which
// machines start (tested where that is decided).
const std::set<std::string> accelerate_without_variable = {
    "same_network", "downcast_bf16", "main_training_function", "offload_optimizer_nvme_path",
    "offload_param_nvme_path", "deepspeed_hostfile", "deepspeed_exclusion_filter",
    "deepspeed_inclusion_filter", "deepspeed_multinode_launcher", "tpu", "tpu_cluster",
    "tpu_use_sudo", "vm", "env", "mpirun_hostfile", "aws_access_key_id", "aws_secret_access_key",
    "config_file",
    // The launcher's choice: each changes which of accelerate's launchers
    // runs, checked below against the default.
    "multi_gpu", "use_deepspeed", "use_fsdp", "use_megatron_lm", "use_parallelism_config", "cpu"};

std::string accelerate_sample(const OptionSpec& spec) {
  if (spec.kind == OptionKind::flag) return "true";
  if (spec.name == opt::fp8_override_linear_precision) return "true,false,true";
  if (spec.name == opt::mixed_precision) return "bf16";
  if (spec.name == opt::num_cpu_threads_per_process) return "3";
  // Not what accelerate assumes without them (its bool() of any text is True).
  if (spec.name == opt::fp8_amax_compute_algo) return "max";
  if (spec.name == opt::fp8_opt_level) return "O1";
  if (spec.name == opt::parallelism_config_sp_seq_length_is_variable) return "";
  // A boolean's other value than what accelerate assumes without it.
  if (spec.metavar == "BOOL") return spec.default_text == "false" ? "true" : "false";
  // The last choice: the first is often what accelerate assumes without one.
  if (!spec.choices.empty() && spec.choices.back() != spec.default_text) {
    return std::string(spec.choices.back());
  }
  return spec.default_text == "7" ? "8" : "7";
}

TEST_CASE("option rows: each of accelerate's own flags reaches the workers", "[config]") {
  int checked = 0;
  for (const OptionSpec& spec : option_table()) {
    if (spec.group != OptionGroup::accelerate) continue;
    const std::string name(spec.name);
    if (accelerate_without_variable.contains(name)) continue;
    INFO("--" << name);
    std::vector<std::string> base = accelerate_context(name);
    base.emplace_back("p");
    std::vector<std::string> given = accelerate_context(name);
    given.push_back("--" + name);
    if (spec.kind != OptionKind::flag) given.push_back(accelerate_sample(spec));
    given.emplace_back("p");
    const Options without = launch(base);
    const Options with = launch(given);
    CHECK(with.accelerate != without.accelerate);
    ++checked;
  }
  CHECK(checked > 50);
  // The launcher flags: each changes what accelerate gives the workers.
  const Options plain = launch({"--same_network", "p"});
  for (std::string flag :
       {"--multi_gpu", "--use_deepspeed", "--use_fsdp", "--use_megatron_lm", "--cpu"}) {
    INFO(flag);
    CHECK(launch({"--same_network", flag, "p"}).accelerate != plain.accelerate);
  }
}

}  // namespace
}  // namespace gangrun::config
