// Every option's name as a typed constant: code outside the option table
// names an option as opt::gpu_ids, never as the text "gpu_ids", so a misspelled
// name does not compile. The list holds one name per row of the table; a unit
// test (test_config_option_rows.cpp) checks that it and the table name the
// same options, so a row without its constant, or a constant without its row,
// fails there.
#pragma once

#include <string_view>

// X(name) once for every row of the option table.
// clang-format off
#define GANGRUN_OPTION_NAMES(X) \
  X(nproc_per_node) X(num_processes) X(num_gpus) X(accelerator) X(gpu_ids) X(include) \
  X(exclude) X(visible_devices) X(devices_per_proc) X(mask_format) X(nnodes) X(node_rank) \
  X(master_addr) X(master_port) X(standalone) X(rdzv_backend) X(rdzv_endpoint) X(rdzv_conf) \
  X(local_addr) X(rdzv_id) X(virtual_local_rank) X(max_restarts) X(monitor_interval) X(role) \
  X(max_connections) X(max_connections_per_address) X(max_store_bytes) \
  X(max_store_bytes_per_address) \
  X(launcher) X(launcher_args) X(worker_per_task) X(start_method) X(run_path) X(module) \
  X(no_python) X(python) X(log_dir) X(redirects) X(tee) X(local_ranks_filter) \
  X(duplicate_stdout_filters) X(duplicate_stderr_filters) X(logs_specs) X(event_log_handler) \
  X(log_prefix) X(output) X(term_timeout) X(failure_window) X(hang_timeout) X(on_hang) \
  X(arrival_timeout) X(metrics_addr) \
  X(preflight) X(preflight_timeout) \
  X(stack_tool) X(straggler_watch) X(flight_recorder) \
  X(no_stacks_at_failure) X(numa_binding) \
  X(signals_to_handle) X(dry_run) X(json) X(report) X(config) X(verbose) X(quiet) X(color) \
  X(version) X(help) X(fsdp_version) X(fsdp_offload_params) X(fsdp_min_num_params) \
  X(fsdp_sharding_strategy) X(fsdp_reshard_after_forward) X(fsdp_auto_wrap_policy) \
  X(fsdp_transformer_layer_cls_to_wrap) X(fsdp_backward_prefetch) X(fsdp_state_dict_type) \
  X(fsdp_forward_prefetch) X(fsdp_use_orig_params) X(fsdp_cpu_ram_efficient_loading) \
  X(fsdp_sync_module_states) X(fsdp_activation_checkpointing) \
  X(fsdp_activation_checkpointing_offload) X(deepspeed_config_file) X(zero_stage) \
  X(offload_optimizer_device) X(offload_param_device) X(offload_optimizer_nvme_path) \
  X(offload_param_nvme_path) X(gradient_accumulation_steps) X(gradient_clipping) \
  X(zero3_init_flag) X(zero3_save_16bit_model) X(deepspeed_hostfile) \
  X(deepspeed_exclusion_filter) X(deepspeed_inclusion_filter) X(deepspeed_multinode_launcher) \
  X(deepspeed_moe_layer_cls_names) X(megatron_lm_tp_degree) X(megatron_lm_use_custom_fsdp) \
  X(megatron_lm_no_load_optim) X(megatron_lm_eod_mask_loss) \
  X(megatron_lm_overlap_cpu_optimizer_d2h_h2d) X(megatron_lm_no_save_optim) \
  X(megatron_lm_optimizer_cpu_offload) X(megatron_lm_use_precision_aware_optimizer) \
  X(megatron_lm_decoder_last_pipeline_num_layers) X(megatron_lm_pp_degree) \
  X(megatron_lm_num_micro_batches) X(megatron_lm_sequence_parallelism) \
  X(megatron_lm_recompute_activations) X(megatron_lm_use_distributed_optimizer) \
  X(megatron_lm_gradient_clipping) X(megatron_lm_recompute_granularity) \
  X(megatron_lm_recompute_method) X(megatron_lm_recompute_num_layers) \
  X(megatron_lm_attention_backend) X(megatron_lm_expert_model_parallel_size) \
  X(megatron_lm_context_parallel_size) X(megatron_lm_attention_dropout) \
  X(megatron_lm_hidden_dropout) X(megatron_lm_attention_softmax_in_fp32) \
  X(megatron_lm_expert_tensor_parallel_size) X(megatron_lm_calculate_per_token_loss) \
  X(megatron_lm_use_rotary_position_embeddings) X(fp8_backend) X(fp8_use_autocast_during_eval) \
  X(fp8_margin) X(fp8_interval) X(fp8_format) X(fp8_amax_history_len) X(fp8_amax_compute_algo) \
  X(fp8_override_linear_precision) X(fp8_opt_level) X(fp8_enable_fsdp_float8_all_gather) \
  X(fp8_pad_inner_dim) X(parallelism_config_dp_replicate_size) \
  X(parallelism_config_dp_shard_size) X(parallelism_config_tp_size) \
  X(parallelism_config_cp_size) X(parallelism_config_cp_backend) \
  X(parallelism_config_cp_comm_strategy) X(parallelism_config_sp_size) \
  X(parallelism_config_sp_backend) X(parallelism_config_sp_seq_length) \
  X(parallelism_config_sp_seq_length_is_variable) X(parallelism_config_sp_attn_implementation) \
  X(config_file) X(multi_gpu) X(use_deepspeed) X(use_fsdp) X(use_megatron_lm) \
  X(use_parallelism_config) X(cpu) X(mixed_precision) X(num_cpu_threads_per_process) \
  X(enable_cpu_affinity) X(dynamo_backend) X(dynamo_mode) X(dynamo_use_fullgraph) \
  X(dynamo_use_dynamic) X(dynamo_use_regional_compilation) X(same_network) X(debug) \
  X(main_training_function) X(downcast_bf16) X(tpu) X(tpu_cluster) X(tpu_use_sudo) X(vm) X(env) \
  X(mpirun_hostfile) X(aws_access_key_id) X(aws_secret_access_key) X(launch_style) \
  X(no_local_rank) X(enable_each_rank_log) X(bind_cores_to_rank) X(bind_core_list) X(save_pid) \
  X(force_multi) X(no_ssh) X(venv_script) X(log_level) X(autotuning) X(hostfile) X(ssh_port) \
  X(no_ssh_check)
// clang-format on

namespace gangrun::config::opt {

#define GANGRUN_OPTION_NAME_CONSTANT(name) inline constexpr std::string_view name = #name;
GANGRUN_OPTION_NAMES(GANGRUN_OPTION_NAME_CONSTANT)
#undef GANGRUN_OPTION_NAME_CONSTANT

// All of them.
#define GANGRUN_OPTION_NAME_ITEM(name) name,
inline constexpr std::string_view all[] = {GANGRUN_OPTION_NAMES(GANGRUN_OPTION_NAME_ITEM)};
#undef GANGRUN_OPTION_NAME_ITEM

}  // namespace gangrun::config::opt
