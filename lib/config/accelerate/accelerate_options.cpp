// The options of accelerate launch's own flags and config file, as rows of the
// option table. Flags that only name an existing option (--num_processes,
// --main_process_ip, ...) are aliases in option_table.cpp; the rows here are
// the rest of accelerate 1.15's flags. What each row does to the workers'
// environment is in config/accelerate/accelerate_values.cpp.
#include "config/option_table.hpp"

namespace gangrun::config {

namespace {

OptionSpec flag(std::string_view name, std::string_view help) {
  return {.name = name, .group = OptionGroup::accelerate, .kind = OptionKind::flag, .help = help};
}

OptionSpec value(std::string_view name, std::string_view metavar, std::string_view help,
                 std::string_view default_text = {}, std::vector<std::string_view> choices = {}) {
  return {.name = name,
          .group = OptionGroup::accelerate,
          .metavar = metavar,
          .default_text = default_text,
          .choices = std::move(choices),
          .help = help};
}

// Rows passed on to the workers as accelerate passes them (ACCELERATE_*,
// FSDP_*, MEGATRON_LM_*, PARALLELISM_CONFIG_*): only the help differs.
std::vector<OptionSpec> fsdp_rows() {
  constexpr std::string_view fsdp = "with --use_fsdp: the workers' FSDP_* variable, as accelerate";
  return {
      value("fsdp_version", "1|2", fsdp, "1", {"1", "2"}),
      value("fsdp_offload_params", "BOOL", fsdp, "false"),
      value("fsdp_min_num_params", "N", fsdp, "100000000"),
      value("fsdp_sharding_strategy", "NAME", fsdp, "FULL_SHARD"),
      value("fsdp_reshard_after_forward", "BOOL", fsdp, "true"),
      value("fsdp_auto_wrap_policy", "NAME", fsdp),
      value("fsdp_transformer_layer_cls_to_wrap", "NAMES", fsdp),
      value("fsdp_backward_prefetch", "NAME", fsdp),
      value("fsdp_state_dict_type", "NAME", fsdp),
      value("fsdp_forward_prefetch", "BOOL", fsdp, "false"),
      value("fsdp_use_orig_params", "BOOL", fsdp, "true"),
      value("fsdp_cpu_ram_efficient_loading", "BOOL", fsdp, "true"),
      value("fsdp_sync_module_states", "BOOL", fsdp, "true"),
      value("fsdp_activation_checkpointing", "BOOL", fsdp, "false"),
      value("fsdp_activation_checkpointing_offload", "BOOL", fsdp, "false"),
  };
}

std::vector<OptionSpec> deepspeed_rows() {
  constexpr std::string_view ds = "with --use_deepspeed: the workers' ACCELERATE_* variable";
  constexpr std::string_view ds_none =
      "with --use_deepspeed: accepted, as accelerate passes it to no worker";
  constexpr std::string_view multinode =
      "with --use_deepspeed and several machines: only 'standard' (torchrun's way, as gangrun "
      "does) is taken; others are refused (use gangrun's -H/--hostfile)";
  return {
      value("deepspeed_config_file", "FILE", ds),
      value("zero_stage", "N", ds),
      value("offload_optimizer_device", "DEVICE", ds),
      value("offload_param_device", "DEVICE", ds),
      value("offload_optimizer_nvme_path", "DIR", ds_none),
      value("offload_param_nvme_path", "DIR", ds_none),
      value("gradient_accumulation_steps", "N", ds),
      value("gradient_clipping", "X", ds),
      value("zero3_init_flag", "BOOL", ds),
      value("zero3_save_16bit_model", "BOOL", ds),
      value("deepspeed_hostfile", "FILE", multinode),
      value("deepspeed_exclusion_filter", "SPEC", multinode),
      value("deepspeed_inclusion_filter", "SPEC", multinode),
      value("deepspeed_multinode_launcher", "NAME", multinode),
      value("deepspeed_moe_layer_cls_names", "NAMES", ds),
  };
}

std::vector<OptionSpec> megatron_rows() {
  constexpr std::string_view m = "with --use_megatron_lm: the workers' MEGATRON_LM_* variable";
  std::vector<OptionSpec> rows = {
      value("megatron_lm_tp_degree", "N", m, "1"),
      value("megatron_lm_use_custom_fsdp", "BOOL", m),
      value("megatron_lm_no_load_optim", "BOOL", m),
      value("megatron_lm_eod_mask_loss", "BOOL", m),
      value("megatron_lm_overlap_cpu_optimizer_d2h_h2d", "BOOL", m),
      value("megatron_lm_no_save_optim", "BOOL", m),
      value("megatron_lm_optimizer_cpu_offload", "BOOL", m),
      value("megatron_lm_use_precision_aware_optimizer", "BOOL", m),
      value("megatron_lm_decoder_last_pipeline_num_layers", "N", m),
      value("megatron_lm_pp_degree", "N", m, "1"),
      value("megatron_lm_num_micro_batches", "N", m),
      value("megatron_lm_sequence_parallelism", "BOOL", m),
      value("megatron_lm_recompute_activations", "BOOL", m),
      value("megatron_lm_use_distributed_optimizer", "BOOL", m),
      value("megatron_lm_gradient_clipping", "X", m, "1.0"),
      value("megatron_lm_recompute_granularity", "NAME", m),
      value("megatron_lm_recompute_method", "NAME", m),
      value("megatron_lm_recompute_num_layers", "N", m),
      value("megatron_lm_attention_backend", "NAME", m),
      value("megatron_lm_expert_model_parallel_size", "N", m),
      value("megatron_lm_context_parallel_size", "N", m),
      value("megatron_lm_attention_dropout", "X", m),
      value("megatron_lm_hidden_dropout", "X", m),
      value("megatron_lm_attention_softmax_in_fp32", "BOOL", m),
      value("megatron_lm_expert_tensor_parallel_size", "N", m),
      value("megatron_lm_calculate_per_token_loss", "BOOL", m),
      value("megatron_lm_use_rotary_position_embeddings", "BOOL", m),
  };
  return rows;
}

std::vector<OptionSpec> fp8_and_parallelism_rows() {
  constexpr std::string_view fp8 =
      "with --mixed_precision fp8: the workers' ACCELERATE_FP8_* variable";
  constexpr std::string_view pc =
      "with --use_parallelism_config: the workers' PARALLELISM_CONFIG_* variable";
  return {
      value("fp8_backend", "NAME", fp8, {}, {"ao", "te", "msamp"}),
      flag("fp8_use_autocast_during_eval", fp8),
      value("fp8_margin", "N", fp8),
      value("fp8_interval", "N", fp8),
      value("fp8_format", "NAME", fp8, {}, {"HYBRID", "E4M3", "E5M2"}),
      value("fp8_amax_history_len", "N", fp8),
      value("fp8_amax_compute_algo", "NAME", fp8, {}, {"max", "most_recent"}),
      value("fp8_override_linear_precision", "A,B,C", fp8),
      value("fp8_opt_level", "NAME", fp8, {}, {"O1", "O2"}),
      value("fp8_enable_fsdp_float8_all_gather", "BOOL", fp8),
      value("fp8_pad_inner_dim", "BOOL", fp8),
      value("parallelism_config_dp_replicate_size", "N", pc, "1"),
      value("parallelism_config_dp_shard_size", "N", pc, "1"),
      value("parallelism_config_tp_size", "N", pc, "1"),
      value("parallelism_config_cp_size", "N", pc, "1"),
      value("parallelism_config_cp_backend", "NAME", pc, "torch", {"torch"}),
      value("parallelism_config_cp_comm_strategy", "NAME", pc, "allgather"),
      value("parallelism_config_sp_size", "N", pc, "1"),
      value("parallelism_config_sp_backend", "NAME", pc, "deepspeed", {"deepspeed"}),
      value("parallelism_config_sp_seq_length", "N", pc),
      value("parallelism_config_sp_seq_length_is_variable", "BOOL", pc),
      value("parallelism_config_sp_attn_implementation", "NAME", pc, "sdpa"),
  };
}

}  // namespace

std::vector<OptionSpec> accelerate_option_specs() {
  std::vector<OptionSpec> rows = {
      {.name = "config_file",
       .group = OptionGroup::accelerate,
       .metavar = "FILE",
       .value_hint = ValueHint::file,
       .help = "accelerate's YAML config (below the command line and GANGRUN_/PET_ variables). "
               "Without it, accelerate's default config (HF_HOME or XDG_CACHE_HOME/huggingface, "
               "accelerate/default_config.yaml) is read only when the command line uses one of "
               "accelerate's own flags below, and not with --cpu, as accelerate launch does"},
      flag("multi_gpu",
           "start num_processes workers, as accelerate's multi-GPU launcher "
           "(torchrun); without it, --use_deepspeed, --use_fsdp or "
           "--use_megatron_lm an accelerate-style line starts one process per "
           "machine, as accelerate launch does"),
      flag("use_deepspeed",
           "as --multi_gpu, with accelerate's DeepSpeed variables "
           "(ACCELERATE_USE_DEEPSPEED, ACCELERATE_DEEPSPEED_*)"),
      flag("use_fsdp", "as --multi_gpu, with ACCELERATE_USE_FSDP and the FSDP_* variables"),
      flag("use_megatron_lm",
           "as --multi_gpu, with ACCELERATE_USE_MEGATRON_LM and the "
           "MEGATRON_LM_* variables"),
      flag("use_parallelism_config",
           "with --use_fsdp --fsdp_version 2: "
           "ACCELERATE_USE_PARALLELISM_CONFIG and PARALLELISM_CONFIG_*"),
      {.name = "cpu",
       .aliases = {"use_cpu"},
       .group = OptionGroup::accelerate,
       .kind = OptionKind::flag,
       .help = "one process on the CPU with ACCELERATE_USE_CPU=True, as accelerate's "
               "--cpu (its simple launcher starts one process per machine)"},
      value("mixed_precision", "MODE", "the workers' ACCELERATE_MIXED_PRECISION", {},
            {"no", "fp16", "bf16", "fp8"}),
      value("num_cpu_threads_per_process", "N",
            "the workers' OMP_NUM_THREADS (accelerate's default: the inherited OMP_NUM_THREADS "
            "or 1; with --cpu the physical cores shared among the processes)"),
      flag("enable_cpu_affinity", "the workers' ACCELERATE_CPU_AFFINITY=1"),
      value("dynamo_backend", "NAME", "the workers' ACCELERATE_DYNAMO_BACKEND (upper-cased)", {},
            {"no", "eager", "aot_eager", "inductor", "aot_ts_nvfuser", "nvprims_nvfuser",
             "cudagraphs", "ofi", "fx2trt", "onnxrt", "tensorrt", "aot_torchxla_trace_once",
             "torhchxla_trace_once", "tvm"}),
      value("dynamo_mode", "MODE", "the workers' ACCELERATE_DYNAMO_MODE", "default",
            {"default", "reduce-overhead", "max-autotune"}),
      flag("dynamo_use_fullgraph", "the workers' ACCELERATE_DYNAMO_USE_FULLGRAPH=True"),
      flag("dynamo_use_dynamic", "the workers' ACCELERATE_DYNAMO_USE_DYNAMIC=True"),
      flag("dynamo_use_regional_compilation",
           "the workers' ACCELERATE_DYNAMO_USE_REGIONAL_COMPILATION=True"),
      flag("same_network",
           "accepted: gangrun's nodes meet at the main process's address and port either way"),
      flag("debug", "the workers' ACCELERATE_DEBUG_MODE=true"),
      value("main_training_function", "NAME",
            "accepted without effect, as in accelerate launch (used by TPU launches only)"),
      flag("downcast_bf16", "accepted without effect, as in accelerate launch (TPU only)"),
      flag("tpu",
           "refused: TPU training runs through torch_xla's launcher; use accelerate "
           "launch for TPUs"),
      {.name = "tpu_cluster",
       .aliases = {"tpu_use_cluster", "no_tpu_cluster"},
       .group = OptionGroup::accelerate,
       .kind = OptionKind::flag,
       .help = "refused: TPU pods are started through gcloud; use accelerate launch"},
      flag("tpu_use_sudo", "refused: TPU pods are started through gcloud; use accelerate launch"),
      value("vm", "NAME", "refused: TPU pod VMs are started through gcloud; use accelerate launch"),
      value("env", "VAR=VALUE", "refused: sets variables on TPU pod VMs; export them instead"),
      value("mpirun_hostfile", "FILE",
            "start gangrun on every host of FILE ('HOST slots=N' lines) through Open MPI's "
            "mpirun, one task per host: -H FILE --launcher openmpi"),
      value("aws_access_key_id", "ID", "refused: SageMaker launches are accelerate's own"),
      value("aws_secret_access_key", "KEY", "refused: SageMaker launches are accelerate's own"),
  };
  for (auto more : {deepspeed_rows, fsdp_rows, megatron_rows, fp8_and_parallelism_rows}) {
    for (OptionSpec& row : more()) rows.push_back(std::move(row));
  }
  return rows;
}

}  // namespace gangrun::config
