// accelerate launch's own flags and config file turned into what its workers
// see: which of its launchers it would pick (one process, or torchrun's N per
// machine) and the variables each launcher sets (accelerate 1.15,
// utils/launch.py: prepare_simple_launcher_cmd_env, prepare_multi_gpu_env,
// prepare_deepspeed_cmd_env). Values are spelled as accelerate spells them:
// Python's str() of what its argument parser made of the text.
#include "config/accelerate/accelerate_values.hpp"

#include "config/accelerate/accelerate_modes.hpp"
#include "config/option_values.hpp"
#include "store/default_port.hpp"
#include "util/strings.hpp"

#include <algorithm>
#include <charconv>
#include <cstdio>

namespace gangrun::config {

namespace {

// What Python's str() makes of a value accelerate parsed with this type.
enum class Render {
  text,     // str
  lower,    // str(value).lower()
  integer,  // int
  real,     // float
  py_bool,  // bool(): any non-empty text is True
};

Expected<std::string> python_int(std::string_view text) {
  std::string digits;
  for (char c : strings::trim(text)) {
    if (c != '_') digits += c;
  }
  long long number = 0;
  const char* begin = digits.data() + (digits.starts_with('+') ? 1 : 0);
  auto [end, error] = std::from_chars(begin, digits.data() + digits.size(), number);
  if (error != std::errc() || end != digits.data() + digits.size() || begin == end) {
    return fail_usage("'" + std::string(text) + "' is not an integer");
  }
  return std::to_string(number);
}

// Python's repr of a float: the shortest text that reads back, with ".0"
// on whole numbers and an exponent from 1e16 up and below 1e-4.
Expected<std::string> python_float(std::string_view text) {
  std::string trimmed(strings::trim(text));
  char* end = nullptr;
  double number = std::strtod(trimmed.c_str(), &end);
  if (trimmed.empty() || end != trimmed.c_str() + trimmed.size()) {
    return fail_usage("'" + std::string(text) + "' is not a number");
  }
  char buffer[64];
  const double magnitude = number < 0 ? -number : number;
  const bool scientific = magnitude != 0 && (magnitude >= 1e16 || magnitude < 1e-4);
  auto result =
      std::to_chars(buffer, buffer + sizeof buffer, number,
                    scientific ? std::chars_format::scientific : std::chars_format::fixed);
  std::string shown(buffer, result.ptr);
  if (!scientific && shown.find('.') == std::string::npos && shown.find('n') == std::string::npos) {
    shown += ".0";
  }
  return shown;
}

class Reader {
 public:
  explicit Reader(const LayeredValues& values) : values_(values) {}

  const LayeredValue* find(std::string_view name) const {
    auto it = values_.find(name);
    return it == values_.end() ? nullptr : &it->second;
  }
  // Given by the user (any layer), not a table default.
  const LayeredValue* given(std::string_view name) const { return given_value(values_, name); }
  bool on(std::string_view name) const {
    const LayeredValue* value = find(name);
    return value != nullptr && parse_bool(value->text).value_or(false);
  }
  // The value as accelerate's worker variable spells it; nullopt when unset.
  Expected<std::optional<std::string>> render(std::string_view name, Render how) const {
    const LayeredValue* value = find(name);
    if (value == nullptr) return std::optional<std::string>();
    // accelerate copies config file values into its arguments unparsed:
    // str() of the YAML value (config/accelerate/accelerate_config_file.hpp spells them).
    if (from_a_config_file(value->source)) {
      return std::optional<std::string>(how == Render::lower ? strings::to_lower(value->text)
                                                             : value->text);
    }
    Expected<std::string> shown = value->text;
    switch (how) {
      case Render::text:
        break;
      case Render::lower:
        shown = strings::to_lower(value->text);
        break;
      case Render::integer:
        shown = python_int(value->text);
        break;
      case Render::real:
        shown = python_float(value->text);
        break;
      case Render::py_bool:
        shown = value->text.empty() ? "False" : "True";
        break;
    }
    if (!shown) return fail_usage(value->where + ": " + shown.error().message());
    return std::optional<std::string>(*shown);
  }

 private:
  const LayeredValues& values_;
};

// One variable from one option, when the option has a value.
struct Passed {
  std::string_view option;
  std::string_view variable;
  Render how;
  std::string_view when_unset = {};  // accelerate's value when the option has none
};

using Variables = std::vector<std::pair<std::string, std::string>>;

Expected<void> pass_each(const Reader& read, const std::vector<Passed>& rows, Variables& out) {
  for (const Passed& row : rows) {
    GANGRUN_TRY_ASSIGN(shown, read.render(row.option, row.how));
    if (*shown) {
      out.emplace_back(row.variable, **shown);
    } else if (!row.when_unset.empty()) {
      out.emplace_back(row.variable, row.when_unset);
    }
  }
  return {};
}

const char* python_bool(bool value) { return value ? "True" : "False"; }

// Flags gangrun cannot honour, with what to do instead; each is refused
// when given.
struct Refusal {
  std::string_view option;
  std::string_view why;
};
const std::vector<Refusal>& refusals() {
  static const std::vector<Refusal> rows = {
      {opt::tpu,
       "TPU training runs through torch_xla's launcher, which gangrun is not; use "
       "accelerate launch for TPUs"},
      {opt::tpu_cluster, "TPU pods are started through gcloud on each VM; use accelerate launch"},
      {opt::tpu_use_sudo, "TPU pods are started through gcloud on each VM; use accelerate launch"},
      {opt::vm, "TPU pod VMs are started through gcloud; use accelerate launch"},
      {opt::env,
       "it sets variables on TPU pod VMs; for gangrun's workers, export them before "
       "gangrun"},
      {opt::aws_access_key_id, "SageMaker launches are accelerate's own; use accelerate launch"},
      {opt::aws_secret_access_key,
       "SageMaker launches are accelerate's own; use accelerate launch"},
  };
  return rows;
}

// Which of accelerate's launchers sets the workers' variables (not to be
// confused with Options::Launcher, how gangrun starts its nodes).
// multi_process: N processes per machine without a launcher mode
// (AccelerateSettings::multi_process_without_mode); the workers' variables
// are the multi-GPU launcher's.
enum class AccelerateLauncher { simple, multi_gpu, deepspeed, multi_process };

// accelerate launch without a launcher mode and without a config file picks
// by the GPUs it sees: its multi-GPU launcher when there are several, else
// one plain process whatever --num_processes says (commands/launch.py,
// _validate_launch_command). gangrun does not start fewer processes than
// --num_processes asks: when it asks for more than one per machine, they
// become one job.
bool several_processes_without_mode(const Reader& read, const LayeredValues& values,
                                    const Options& o) {
  // --nproc_per_node speaks torchrun; --mpirun_hostfile has mpirun start them.
  const LayeredValue* count = read.given(opt::num_processes);
  if (count == nullptr || read.given(opt::nproc_per_node) != nullptr ||
      read.given(opt::mpirun_hostfile) != nullptr) {
    return false;
  }
  // -n (or GANGRUN_NUM_PROCESSES, a config key) is gangrun's and mpirun's
  // total of workers: alone, its line keeps torchrun's environment. Only
  // accelerate's spelling, or another flag of accelerate's, speaks accelerate.
  bool accelerate_spelling = count->where == "--num_processes" || count->where == "--num-processes";
  if (!accelerate_spelling && !speaks_accelerate(values)) return false;
  if (!o.num_processes || *o.num_processes <= std::max(o.nnodes, 1)) return false;
  for (const AccelerateMode& mode : k_accelerate_modes) {
    if (mode.starts_workers && read.on(mode.option)) return false;
  }
  // A config file's distributed_type NO or MULTI_CPU is accelerate's simple
  // launcher, one process, on any machine: kept as it is.
  for (const auto& [name, value] : values) {
    if (from_a_config_file(value.source)) return false;
  }
  return read.find(opt::config_file) == nullptr;
}

Expected<AccelerateLauncher> pick_launcher(const Reader& read, bool without_mode) {
  // accelerate refuses two of these given together; a config file's
  // distributed_type stands back for any of them (layering.cpp).
  const LayeredValue* first = nullptr;
  for (const AccelerateMode& mode : k_accelerate_modes) {
    if (!mode.one_at_a_time) continue;
    const LayeredValue* value = read.given(mode.option);
    if (value == nullptr || from_a_config_file(value->source) || !read.on(mode.option)) continue;
    if (first != nullptr) {
      return fail_usage(first->given + " and " + value->given +
                        ": accelerate takes only one of --cpu, --multi_gpu, --tpu, "
                        "--use_deepspeed, --use_fsdp at a time");
    }
    first = value;
  }
  if (read.on(opt::cpu)) return AccelerateLauncher::simple;
  if (read.on(opt::use_deepspeed)) return AccelerateLauncher::deepspeed;
  if (read.on(opt::use_fsdp) || read.on(opt::use_megatron_lm) || read.on(opt::multi_gpu)) {
    return AccelerateLauncher::multi_gpu;
  }
  return without_mode ? AccelerateLauncher::multi_process : AccelerateLauncher::simple;
}

Expected<void> add_dynamo(const Reader& read, Variables& out) {
  GANGRUN_TRY_ASSIGN(backend, read.render(opt::dynamo_backend, Render::text));
  const std::string upper = strings::to_upper(backend->value_or("no"));
  const OptionSpec& spec = option_row(opt::dynamo_backend);
  bool known = false;
  for (std::string_view choice : spec.choices) known = known || strings::to_upper(choice) == upper;
  if (!known) {
    return fail_usage(read.find(opt::dynamo_backend)->where + ": unknown dynamo backend '" + upper +
                      "'");
  }
  out.emplace_back("ACCELERATE_DYNAMO_BACKEND", upper);
  GANGRUN_TRY(pass_each(
      read, {{opt::dynamo_mode, "ACCELERATE_DYNAMO_MODE", Render::text, "default"}}, out));
  out.emplace_back("ACCELERATE_DYNAMO_USE_FULLGRAPH",
                   python_bool(read.on(opt::dynamo_use_fullgraph)));
  out.emplace_back("ACCELERATE_DYNAMO_USE_DYNAMIC", python_bool(read.on(opt::dynamo_use_dynamic)));
  out.emplace_back("ACCELERATE_DYNAMO_USE_REGIONAL_COMPILATION",
                   python_bool(read.on(opt::dynamo_use_regional_compilation)));
  return {};
}

Expected<void> add_mixed_precision(const Reader& read, Variables& out) {
  const LayeredValue* value = read.find(opt::mixed_precision);
  const std::string mode = strings::to_lower(value ? value->text : "no");
  if (mode != "no" && mode != "fp16" && mode != "bf16" && mode != "fp8") {
    return fail_usage(value->where + ": unknown mixed precision '" + mode +
                      "' (expected no, fp16, bf16 or fp8)");
  }
  out.emplace_back("ACCELERATE_MIXED_PRECISION", mode);
  if (mode != "fp8") return {};
  GANGRUN_TRY(pass_each(
      read,
      {{opt::fp8_backend, "ACCELERATE_FP8_BACKEND", Render::text},
       {opt::fp8_margin, "ACCELERATE_FP8_MARGIN", Render::integer, "0"},
       {opt::fp8_interval, "ACCELERATE_FP8_INTERVAL", Render::integer, "1"},
       {opt::fp8_format, "ACCELERATE_FP8_FORMAT", Render::text, "HYBRID"},
       {opt::fp8_amax_history_len, "ACCELERATE_FP8_AMAX_HISTORY_LEN", Render::integer, "1024"},
       {opt::fp8_amax_compute_algo, "ACCELERATE_FP8_AMAX_COMPUTE_ALGO", Render::text,
        "most_recent"},
       {opt::fp8_opt_level, "ACCELERATE_FP8_OPT_LEVEL", Render::text, "O2"}},
      out));
  out.emplace_back("ACCELERATE_FP8_USE_AUTOCAST_DURING_EVAL",
                   python_bool(read.on(opt::fp8_use_autocast_during_eval)));
  if (const LayeredValue* given = read.find(opt::fp8_override_linear_precision)) {
    // Three booleans, for the forward pass and the two gradients, each passed
    // as accelerate's str_to_bool gives it: 1 or 0.
    std::vector<std::string> parts = strings::split(given->text, ',');
    if (parts.size() != 3) {
      return fail_usage(given->where + ": '" + given->text +
                        "' is not three booleans (fprop,dgrad,wgrad), e.g. true,false,false");
    }
    const char* names[] = {"ACCELERATE_FP8_OVERRIDE_FPROP", "ACCELERATE_FP8_OVERRIDE_DGRAD",
                           "ACCELERATE_FP8_OVERRIDE_WGRAD"};
    for (std::size_t i = 0; i < parts.size(); ++i) {
      auto on = parse_bool(strings::trim(parts[i]));
      if (!on) return fail_usage(given->where + ": " + on.error().message());
      out.emplace_back(names[i], *on ? "1" : "0");
    }
  }
  for (std::string_view name : {opt::fp8_enable_fsdp_float8_all_gather, opt::fp8_pad_inner_dim}) {
    const LayeredValue* given = read.find(name);
    bool on = given == nullptr || parse_bool(given->text).value_or(true);
    out.emplace_back(strings::to_upper("ACCELERATE_" + std::string(name)), on ? "1" : "0");
  }
  return {};
}

Expected<void> add_fsdp(const Reader& read, Variables& out) {
  out.emplace_back("ACCELERATE_USE_FSDP", "true");
  return pass_each(
      read,
      {{opt::fsdp_version, "FSDP_VERSION", Render::text, "1"},
       {opt::fsdp_sharding_strategy, "FSDP_SHARDING_STRATEGY", Render::text, "FULL_SHARD"},
       {opt::fsdp_reshard_after_forward, "FSDP_RESHARD_AFTER_FORWARD", Render::lower, "true"},
       {opt::fsdp_offload_params, "FSDP_OFFLOAD_PARAMS", Render::lower, "false"},
       {opt::fsdp_min_num_params, "FSDP_MIN_NUM_PARAMS", Render::integer, "100000000"},
       {opt::fsdp_auto_wrap_policy, "FSDP_AUTO_WRAP_POLICY", Render::text},
       {opt::fsdp_transformer_layer_cls_to_wrap, "FSDP_TRANSFORMER_CLS_TO_WRAP", Render::text},
       {opt::fsdp_backward_prefetch, "FSDP_BACKWARD_PREFETCH", Render::text},
       {opt::fsdp_state_dict_type, "FSDP_STATE_DICT_TYPE", Render::text},
       {opt::fsdp_forward_prefetch, "FSDP_FORWARD_PREFETCH", Render::lower, "false"},
       {opt::fsdp_use_orig_params, "FSDP_USE_ORIG_PARAMS", Render::lower, "true"},
       {opt::fsdp_cpu_ram_efficient_loading, "FSDP_CPU_RAM_EFFICIENT_LOADING", Render::lower,
        "true"},
       {opt::fsdp_sync_module_states, "FSDP_SYNC_MODULE_STATES", Render::lower, "true"},
       {opt::fsdp_activation_checkpointing, "FSDP_ACTIVATION_CHECKPOINTING", Render::lower,
        "false"},
       {opt::fsdp_activation_checkpointing_offload, "FSDP_ACTIVATION_CHECKPOINTING_OFFLOAD",
        Render::lower, "false"}},
      out);
}

Expected<void> add_megatron(const Reader& read, Variables& out) {
  out.emplace_back("ACCELERATE_USE_MEGATRON_LM", "true");
  std::vector<Passed> rows = {
      {opt::megatron_lm_tp_degree, "TP_DEGREE", Render::integer, "1"},
      {opt::megatron_lm_use_custom_fsdp, "USE_CUSTOM_FSDP", Render::py_bool, "False"},
      {opt::megatron_lm_no_load_optim, "NO_LOAD_OPTIM", Render::py_bool, "False"},
      {opt::megatron_lm_eod_mask_loss, "EOD_MASK_LOSS", Render::py_bool, "False"},
      {opt::megatron_lm_no_save_optim, "NO_SAVE_OPTIM", Render::py_bool, "False"},
      {opt::megatron_lm_optimizer_cpu_offload, "OPTIMIZER_CPU_OFFLOAD", Render::py_bool, "False"},
      {opt::megatron_lm_use_precision_aware_optimizer, "USE_PRECISION_AWARE_OPTIMIZER",
       Render::py_bool, "False"},
      {opt::megatron_lm_overlap_cpu_optimizer_d2h_h2d, "OVERLAP_CPU_OPTIMIZER_D2H_H2D",
       Render::py_bool, "False"},
      {opt::megatron_lm_decoder_last_pipeline_num_layers, "DECODER_LAST_PIPELINE_NUM_LAYERS",
       Render::integer},
      {opt::megatron_lm_pp_degree, "PP_DEGREE", Render::integer, "1"},
      {opt::megatron_lm_gradient_clipping, "GRADIENT_CLIPPING", Render::real, "1.0"},
      {opt::megatron_lm_num_micro_batches, "NUM_MICRO_BATCHES", Render::integer},
      {opt::megatron_lm_sequence_parallelism, "SEQUENCE_PARALLELISM", Render::text},
      {opt::megatron_lm_recompute_activations, "RECOMPUTE_ACTIVATIONS", Render::text},
      {opt::megatron_lm_use_distributed_optimizer, "USE_DISTRIBUTED_OPTIMIZER", Render::text},
      {opt::megatron_lm_recompute_granularity, "RECOMPUTE_GRANULARITY", Render::text},
      {opt::megatron_lm_recompute_method, "RECOMPUTE_METHOD", Render::text},
      {opt::megatron_lm_recompute_num_layers, "RECOMPUTE_NUM_LAYERS", Render::integer},
      {opt::megatron_lm_attention_backend, "ATTENTION_BACKEND", Render::text},
      {opt::megatron_lm_expert_model_parallel_size, "EXPERT_MODEL_PARALLEL_SIZE", Render::integer},
      {opt::megatron_lm_context_parallel_size, "CONTEXT_PARALLEL_SIZE", Render::integer},
      {opt::megatron_lm_attention_dropout, "ATTENTION_DROPOUT", Render::real},
      {opt::megatron_lm_hidden_dropout, "HIDDEN_DROPOUT", Render::real},
      {opt::megatron_lm_attention_softmax_in_fp32, "ATTENTION_SOFTMAX_IN_FP32", Render::text},
      {opt::megatron_lm_expert_tensor_parallel_size, "EXPERT_TENSOR_PARALLEL_SIZE",
       Render::integer},
      {opt::megatron_lm_calculate_per_token_loss, "CALCULATE_PER_TOKEN_LOSS", Render::text},
      {opt::megatron_lm_use_rotary_position_embeddings, "USE_ROTARY_POSITION_EMBEDDINGS",
       Render::text},
  };
  Variables added;
  GANGRUN_TRY(pass_each(read, rows, added));
  for (auto& [name, text] : added) out.emplace_back("MEGATRON_LM_" + name, std::move(text));
  return {};
}

Expected<void> add_parallelism_config(const Reader& read, Variables& out) {
  out.emplace_back("ACCELERATE_USE_PARALLELISM_CONFIG", "true");
  std::vector<Passed> rows = {
      {opt::parallelism_config_dp_replicate_size, "DP_REPLICATE_SIZE", Render::integer, "1"},
      {opt::parallelism_config_dp_shard_size, "DP_SHARD_SIZE", Render::integer, "1"},
      {opt::parallelism_config_tp_size, "TP_SIZE", Render::integer, "1"},
      {opt::parallelism_config_cp_size, "CP_SIZE", Render::integer, "1"},
      {opt::parallelism_config_cp_backend, "CP_BACKEND", Render::text, "torch"},
      {opt::parallelism_config_sp_size, "SP_SIZE", Render::integer, "1"},
      {opt::parallelism_config_sp_backend, "SP_BACKEND", Render::text, "deepspeed"},
  };
  Variables added;
  GANGRUN_TRY(pass_each(read, rows, added));
  auto size_of = [&](std::string_view key) {
    for (const auto& [name, text] : added) {
      if (name == key) return text;
    }
    return std::string("1");
  };
  if (size_of("CP_SIZE") != "1") {
    GANGRUN_TRY(pass_each(
        read,
        {{opt::parallelism_config_cp_comm_strategy, "CP_COMM_STRATEGY", Render::text, "allgather"}},
        added));
  }
  if (size_of("SP_SIZE") != "1") {
    GANGRUN_TRY(
        pass_each(read,
                  {{opt::parallelism_config_sp_seq_length, "SP_SEQ_LENGTH", Render::text, "None"},
                   {opt::parallelism_config_sp_seq_length_is_variable, "SP_SEQ_LENGTH_IS_VARIABLE",
                    Render::py_bool, "True"},
                   {opt::parallelism_config_sp_attn_implementation, "SP_ATTN_IMPLEMENTATION",
                    Render::text, "sdpa"}},
                  added));
  }
  for (auto& [name, text] : added) out.emplace_back("PARALLELISM_CONFIG_" + name, std::move(text));
  return {};
}

// ACCELERATE_CONFIG_DS_FIELDS: the keys of the config file's deepspeed_config
// section in the file's order, and mixed_precision when the file gave it.
std::string deepspeed_fields(const LayeredValues& values) {
  std::vector<std::pair<int, std::string>> fields;
  for (const auto& [name, value] : values) {
    if (!from_a_config_file(value.source)) continue;
    if (value.file_key.starts_with("deepspeed_config.")) {
      fields.emplace_back(value.file_position,
                          value.file_key.substr(std::string_view("deepspeed_config.").size()));
    }
  }
  std::sort(fields.begin(), fields.end());
  std::vector<std::string> keys;
  keys.reserve(fields.size() + 1);
  for (auto& field : fields) keys.push_back(strings::to_lower(field.second));
  auto mixed = values.find(opt::mixed_precision);
  if (mixed != values.end() && from_a_config_file(mixed->second.source)) {
    keys.emplace_back(opt::mixed_precision);
  }
  return strings::join(keys, ",");
}

Expected<void> add_deepspeed(const Reader& read, const LayeredValues& values, Variables& out) {
  out.emplace_back("ACCELERATE_CONFIG_DS_FIELDS", deepspeed_fields(values));
  out.emplace_back("ACCELERATE_USE_DEEPSPEED", "true");
  return pass_each(
      read,
      {{opt::zero_stage, "ACCELERATE_DEEPSPEED_ZERO_STAGE", Render::integer},
       {opt::gradient_accumulation_steps, "ACCELERATE_GRADIENT_ACCUMULATION_STEPS",
        Render::integer},
       {opt::gradient_clipping, "ACCELERATE_GRADIENT_CLIPPING", Render::real},
       {opt::offload_optimizer_device, "ACCELERATE_DEEPSPEED_OFFLOAD_OPTIMIZER_DEVICE",
        Render::lower},
       {opt::offload_param_device, "ACCELERATE_DEEPSPEED_OFFLOAD_PARAM_DEVICE", Render::lower},
       {opt::zero3_init_flag, "ACCELERATE_DEEPSPEED_ZERO3_INIT", Render::lower},
       {opt::zero3_save_16bit_model, "ACCELERATE_DEEPSPEED_ZERO3_SAVE_16BIT_MODEL", Render::lower},
       {opt::deepspeed_config_file, "ACCELERATE_DEEPSPEED_CONFIG_FILE", Render::text},
       {opt::deepspeed_moe_layer_cls_names, "ACCELERATE_DEEPSPEED_MOE_LAYER_CLS_NAMES",
        Render::text}},
      out);
}

// Over several machines accelerate hands --use_deepspeed to deepspeed's own
// multi-node launcher (pdsh by default) unless told 'standard'.
Expected<void> check_deepspeed_nodes(const Reader& read, const Options& o) {
  if (o.nnodes <= 1) return {};
  const LayeredValue* launcher = read.given(opt::deepspeed_multinode_launcher);
  if (launcher != nullptr && launcher->text == "standard") return {};
  const std::string where = launcher != nullptr
                                ? launcher->given
                                : "--use_deepspeed over " + std::to_string(o.nnodes) +
                                      " machines (deepspeed_multinode_launcher pdsh)";
  return fail_usage(where +
                    ": accelerate would start deepspeed's own multi-node launcher; gangrun "
                    "starts each machine's workers itself: give --deepspeed_multinode_launcher "
                    "standard and run gangrun on every machine, or use -H/--hostfile");
}

}  // namespace

Expected<void> refuse_unhonoured_accelerate_flags(const LayeredValues& values) {
  Reader read(values);
  for (const Refusal& refusal : refusals()) {
    const LayeredValue* value = read.given(refusal.option);
    const OptionSpec& spec = option_row(refusal.option);
    if (value == nullptr) continue;
    if (spec.kind == OptionKind::flag && !parse_bool(value->text).value_or(true)) continue;
    return fail_usage(value->where + ": gangrun cannot honour it: " + std::string(refusal.why));
  }
  return {};
}

Expected<std::optional<std::string>> type_mpirun_hostfile(const LayeredValues& values,
                                                          const Options& o) {
  Reader read(values);
  const LayeredValue* file = read.given(opt::mpirun_hostfile);
  if (file == nullptr) return std::optional<std::string>();
  if (const LayeredValue* hostfile = read.given(opt::hostfile)) {
    return fail_usage(file->given + " and " + hostfile->given +
                      " both name the hosts; give one of them");
  }
  if (o.launcher != Options::Launcher::automatic && o.launcher != Options::Launcher::openmpi) {
    return fail_usage(file->given + " starts gangrun through mpirun, but " +
                      read.given(opt::launcher)->given + " asks for another way; drop one of them");
  }
  return std::optional<std::string>(file->text);
}

bool speaks_accelerate(const LayeredValues& values) {
  for (const auto& [name, value] : values) {
    if (value.source == Source::default_value) continue;
    const OptionSpec* spec = find_option_by_name(name);
    if (spec != nullptr && spec->group == OptionGroup::accelerate) return true;
  }
  return false;
}

Expected<AccelerateAdditions> type_accelerate_values(const LayeredValues& values,
                                                     const Options& o) {
  Reader read(values);
  const bool without_mode = several_processes_without_mode(read, values, o);
  AccelerateAdditions added;
  if (!speaks_accelerate(values) && !without_mode) return added;
  AccelerateSettings& s = added.settings;
  s.active = true;
  s.free_port_when_busy =
      o.nnodes <= 1 && !o.standalone && o.rdzv_backend == RendezvousBackend::static_ranks;
  if (read.find(opt::config_file) != nullptr && read.given(opt::num_processes) == nullptr) {
    return fail_usage(read.find(opt::config_file)->text +
                      ": no num_processes in the config file; give --num_processes (accelerate "
                      "launch asks for it too)");
  }
  GANGRUN_TRY_ASSIGN(launcher, pick_launcher(read, without_mode));
  if (*launcher == AccelerateLauncher::multi_process) {
    s.multi_process_without_mode = true;
    s.process_count_given = read.given(opt::num_processes)->given;
  }
  if (*launcher != AccelerateLauncher::simple && read.on(opt::multi_gpu) && o.num_processes &&
      *o.num_processes < 2) {
    return fail_usage(read.given(opt::num_processes)->given +
                      ": --multi_gpu needs at least 2 processes (as in accelerate launch)");
  }
  if (read.on(opt::use_parallelism_config) &&
      (!read.on(opt::use_fsdp) || read.find(opt::fsdp_version)->text == "1")) {
    return fail_usage(read.given(opt::use_parallelism_config)->where +
                      ": needs --use_fsdp and --fsdp_version 2 (as in accelerate launch)");
  }
  if (*launcher == AccelerateLauncher::deepspeed) GANGRUN_TRY(check_deepspeed_nodes(read, o));

  Variables& out = s.variables;
  const bool use_cpu = read.on(opt::cpu);
  if (*launcher == AccelerateLauncher::simple)
    out.emplace_back("ACCELERATE_USE_CPU", python_bool(use_cpu));
  if (read.on(opt::debug)) out.emplace_back("ACCELERATE_DEBUG_MODE", "true");
  if (*launcher == AccelerateLauncher::simple && use_cpu) {
    out.emplace_back("KMP_AFFINITY", "granularity=fine,compact,1,0");
    out.emplace_back("KMP_BLOCKTIME", "1");
  }
  GANGRUN_TRY(add_mixed_precision(read, out));
  if (*launcher == AccelerateLauncher::deepspeed) {
    GANGRUN_TRY(add_deepspeed(read, values, out));
    s.add_cwd_to_python_path = true;
  } else {
    GANGRUN_TRY(add_dynamo(read, out));
    if (*launcher == AccelerateLauncher::multi_gpu && read.on(opt::use_fsdp))
      GANGRUN_TRY(add_fsdp(read, out));
    if (*launcher == AccelerateLauncher::multi_gpu && read.on(opt::use_megatron_lm)) {
      GANGRUN_TRY(add_megatron(read, out));
    }
    s.sets_omp_threads = true;
  }
  if (read.on(opt::enable_cpu_affinity)) out.emplace_back("ACCELERATE_CPU_AFFINITY", "1");
  if (*launcher != AccelerateLauncher::simple && read.on(opt::use_parallelism_config)) {
    GANGRUN_TRY(add_parallelism_config(read, out));
  }

  if (const LayeredValue* threads = read.find(opt::num_cpu_threads_per_process)) {
    Expected<int> count = parse_positive_int(threads->text);
    if (!count) return fail_usage(threads->where + ": " + count.error().message());
    s.cpu_threads_per_process = *count;
  } else if (use_cpu && o.num_processes) {
    s.split_physical_cores_among = std::max(*o.num_processes / std::max(o.nnodes, 1), 1);
  }
  // accelerate's simple launcher runs the script once per machine.
  s.one_plain_process = *launcher == AccelerateLauncher::simple;
  if (o.rdzv_backend == RendezvousBackend::c10d && !o.rdzv_endpoint && o.master_addr) {
    // accelerate launch meets at --main_process_ip:--main_process_port with
    // the c10d backend (torchrun's --rdzv_endpoint), port 29500 by default.
    added.rdzv_endpoint = Endpoint{*o.master_addr, o.master_port.value_or(store::k_default_port)};
  }
  return added;
}

}  // namespace gangrun::config
