// accelerate launch's own flags: the variables they give the workers (as
// accelerate 1.15 spells them), the launcher they pick, the flags refused,
// and that a torchrun-style line gets none of it.
#include "config/accelerate/accelerate_values.hpp"
#include "config_test_support.hpp"

#include <catch2/catch.hpp>

#include <map>
#include <string>
#include <vector>

namespace {

using Catch::Matchers::Contains;
using Catch::Matchers::StartsWith;
using gangrun::config::Options;
using gangrun::config::test::launch;
using gangrun::config::test::usage_error;

std::map<std::string, std::string> variables(const Options& o) {
  return {o.accelerate.variables.begin(), o.accelerate.variables.end()};
}

}  // namespace

TEST_CASE("config accelerate: a torchrun-style line gets no accelerate variables",
          "[config][accelerate]") {
  for (auto line : {std::vector<std::string>{"--nproc_per_node", "2", "--nnodes", "1", "x.py"},
                    {"--nproc_per_node", "2", "--num_processes", "2", "x.py"},
                    // -n alone is gangrun's own total of workers, as mpirun's.
                    {"-n", "2", "x.py"},
                    {"--num_processes", "1", "x.py"},
                    {"--num_processes", "2", "--nnodes", "2", "--master_addr", "h", "x.py"}}) {
    Options o = launch(line);
    CHECK_FALSE(o.accelerate.active);
    CHECK(o.accelerate.variables.empty());
  }
}

TEST_CASE("config accelerate: --num_processes without a launcher mode is one job of them all",
          "[config][accelerate]") {
  for (auto line : {std::vector<std::string>{"--num_processes", "2", "x.py"},
                    {"--num_processes=2", "x.py"},
                    {"-n", "2", "--mixed_precision", "bf16", "x.py"},
                    {"--num_processes", "2", "--mixed_precision", "bf16", "x.py"}}) {
    Options o = launch(line);
    CHECK(o.accelerate.active);
    CHECK(o.accelerate.multi_process_without_mode);
    CHECK_FALSE(o.accelerate.one_plain_process);
    CHECK(*o.num_processes == 2);
    CHECK(o.accelerate.process_count_given.starts_with(line[0].substr(0, line[0].find('='))));
    auto vars = variables(o);
    // ACCELERATE_USE_CPU is the plan's to add, by the devices the workers get.
    CHECK_FALSE(vars.contains("ACCELERATE_USE_CPU"));
    CHECK(vars.contains("ACCELERATE_MIXED_PRECISION"));
    CHECK(vars.at("ACCELERATE_DYNAMO_BACKEND") == "NO");
    CHECK(o.accelerate.sets_omp_threads);
    CHECK(o.accelerate.free_port_when_busy);
  }
  // A launcher mode keeps accelerate's own launcher.
  Options cpu = launch({"--cpu", "--num_processes", "2", "x.py"});
  CHECK_FALSE(cpu.accelerate.multi_process_without_mode);
  CHECK(cpu.accelerate.one_plain_process);
  Options gpu = launch({"--multi_gpu", "--num_processes", "2", "x.py"});
  CHECK_FALSE(gpu.accelerate.multi_process_without_mode);
}

TEST_CASE("config accelerate: a taken port moves to a free one only on a single machine",
          "[config][accelerate]") {
  CHECK(launch({"--multi_gpu", "--num_processes", "2", "--main_process_port", "29600", "x.py"})
            .accelerate.free_port_when_busy);
  CHECK_FALSE(launch({"--multi_gpu", "--num_processes", "4", "--num_machines", "2",
                      "--main_process_ip", "h", "--main_process_port", "29600", "x.py"})
                  .accelerate.free_port_when_busy);
  CHECK_FALSE(launch({"--nproc_per_node", "2", "--master_port", "29600", "x.py"})
                  .accelerate.free_port_when_busy);
}

TEST_CASE("config accelerate: --cpu runs accelerate's simple launcher, one process",
          "[config][accelerate]") {
  Options o = launch({"--cpu", "--num_processes", "2", "x.py"});
  CHECK(o.accelerate.active);
  CHECK_FALSE(o.num_processes);
  CHECK(o.nproc_per_node->number == 1);
  auto vars = variables(o);
  CHECK(vars.at("ACCELERATE_USE_CPU") == "True");
  CHECK(vars.at("KMP_AFFINITY") == "granularity=fine,compact,1,0");
  CHECK(vars.at("KMP_BLOCKTIME") == "1");
  CHECK(vars.at("ACCELERATE_MIXED_PRECISION") == "no");
  CHECK(vars.at("ACCELERATE_DYNAMO_BACKEND") == "NO");
  CHECK(vars.at("ACCELERATE_DYNAMO_MODE") == "default");
  CHECK(vars.at("ACCELERATE_DYNAMO_USE_FULLGRAPH") == "False");
  CHECK(o.accelerate.sets_omp_threads);
  CHECK(*o.accelerate.split_physical_cores_among == 2);
}

TEST_CASE("config accelerate: --multi_gpu keeps the process count and sets no USE_CPU",
          "[config][accelerate]") {
  Options o = launch({"--multi_gpu", "--num_processes", "2", "--mixed_precision", "BF16",
                      "--dynamo_backend", "inductor", "--dynamo_use_dynamic",
                      "--num_cpu_threads_per_process", "3", "--debug", "x.py"});
  CHECK(*o.num_processes == 2);
  auto vars = variables(o);
  CHECK_FALSE(vars.contains("ACCELERATE_USE_CPU"));
  CHECK(vars.at("ACCELERATE_MIXED_PRECISION") == "bf16");
  CHECK(vars.at("ACCELERATE_DYNAMO_BACKEND") == "INDUCTOR");
  CHECK(vars.at("ACCELERATE_DYNAMO_USE_DYNAMIC") == "True");
  CHECK(vars.at("ACCELERATE_DEBUG_MODE") == "true");
  CHECK(*o.accelerate.cpu_threads_per_process == 3);
}

TEST_CASE("config accelerate: --use_deepspeed sets accelerate's DeepSpeed variables",
          "[config][accelerate]") {
  Options o = launch({"--use_deepspeed", "--num_processes", "2", "--zero_stage", "2",
                      "--gradient_clipping", "1", "--offload_optimizer_device", "CPU",
                      "--gradient_accumulation_steps", "4", "x.py"});
  auto vars = variables(o);
  CHECK(vars.at("ACCELERATE_USE_DEEPSPEED") == "true");
  CHECK(vars.at("ACCELERATE_DEEPSPEED_ZERO_STAGE") == "2");
  CHECK(vars.at("ACCELERATE_GRADIENT_CLIPPING") == "1.0");
  CHECK(vars.at("ACCELERATE_GRADIENT_ACCUMULATION_STEPS") == "4");
  CHECK(vars.at("ACCELERATE_DEEPSPEED_OFFLOAD_OPTIMIZER_DEVICE") == "cpu");
  CHECK(vars.at("ACCELERATE_CONFIG_DS_FIELDS").empty());
  CHECK_FALSE(vars.contains("ACCELERATE_DYNAMO_BACKEND"));  // not in accelerate's deepspeed env
  CHECK_FALSE(o.accelerate.sets_omp_threads);
  CHECK(o.accelerate.add_cwd_to_python_path);
}

TEST_CASE("config accelerate: --use_fsdp sets the FSDP_ variables with accelerate's defaults",
          "[config][accelerate]") {
  Options o = launch({"--use_fsdp", "--num_processes", "2", "--fsdp_offload_params", "True",
                      "--fsdp_transformer_layer_cls_to_wrap", "Block", "x.py"});
  auto vars = variables(o);
  CHECK(vars.at("ACCELERATE_USE_FSDP") == "true");
  CHECK(vars.at("FSDP_VERSION") == "1");
  CHECK(vars.at("FSDP_SHARDING_STRATEGY") == "FULL_SHARD");
  CHECK(vars.at("FSDP_OFFLOAD_PARAMS") == "true");
  CHECK(vars.at("FSDP_MIN_NUM_PARAMS") == "100000000");
  CHECK(vars.at("FSDP_TRANSFORMER_CLS_TO_WRAP") == "Block");
  CHECK(vars.at("FSDP_SYNC_MODULE_STATES") == "true");
  CHECK_FALSE(vars.contains("FSDP_AUTO_WRAP_POLICY"));
}

TEST_CASE("config accelerate: --use_megatron_lm sets MEGATRON_LM_ variables",
          "[config][accelerate]") {
  Options o = launch({"--use_megatron_lm", "--num_processes", "2", "--megatron_lm_tp_degree", "2",
                      "--megatron_lm_eod_mask_loss", "false", "x.py"});
  auto vars = variables(o);
  CHECK(vars.at("ACCELERATE_USE_MEGATRON_LM") == "true");
  CHECK(vars.at("MEGATRON_LM_TP_DEGREE") == "2");
  CHECK(vars.at("MEGATRON_LM_EOD_MASK_LOSS") == "True");  // Python's bool("false")
  CHECK(vars.at("MEGATRON_LM_NO_LOAD_OPTIM") == "False");
  CHECK(vars.at("MEGATRON_LM_GRADIENT_CLIPPING") == "1.0");
}

TEST_CASE("config accelerate: flags gangrun cannot honour are refused with the reason",
          "[config][accelerate]") {
  CHECK_THAT(usage_error({"--tpu", "x.py"}),
             StartsWith("--tpu: gangrun cannot honour it: TPU training runs through torch_xla"));
  CHECK_THAT(usage_error({"--vm", "a", "x.py"}), StartsWith("--vm: gangrun cannot honour it"));
  CHECK_THAT(usage_error({"--aws_access_key_id", "k", "x.py"}),
             Contains("SageMaker launches are accelerate's own"));
  CHECK_THAT(usage_error({"--multi_gpu", "--cpu", "x.py"}),
             Contains("accelerate takes only one of --cpu, --multi_gpu"));
  CHECK_THAT(usage_error({"--multi_gpu", "--num_processes", "1", "x.py"}),
             Contains("--multi_gpu needs at least 2 processes"));
  CHECK_THAT(usage_error({"--mixed_precision", "fp32", "x.py"}), StartsWith("--mixed_precision: "));
  CHECK_THAT(usage_error({"--use_deepspeed", "--num_processes", "4", "--nnodes", "2", "x.py"}),
             Contains("deepspeed's own multi-node launcher"));
  CHECK_THAT(usage_error({"--use_parallelism_config", "--use_fsdp", "-n", "2", "x.py"}),
             Contains("needs --use_fsdp and --fsdp_version 2"));
  // A refused flag given as false is no request.
  CHECK_FALSE(launch({"--tpu=false", "x.py"}).accelerate.variables.empty());
}

TEST_CASE("config accelerate: values are spelled as Python's str() spells them",
          "[config][accelerate]") {
  auto vars = variables(launch({"--use_deepspeed", "-n", "2", "--gradient_clipping", "0.00001",
                                "--zero_stage", "+3", "x.py"}));
  CHECK(vars.at("ACCELERATE_GRADIENT_CLIPPING") == "1e-05");
  CHECK(vars.at("ACCELERATE_DEEPSPEED_ZERO_STAGE") == "3");
  CHECK_THAT(usage_error({"--use_deepspeed", "-n", "2", "--zero_stage", "two", "x.py"}),
             StartsWith("--zero_stage: 'two' is not an integer"));
}

TEST_CASE("config accelerate: --fp8_override_linear_precision gives three 1/0 variables",
          "[config][accelerate]") {
  auto vars = variables(launch({"--multi_gpu", "--num_processes", "2", "--mixed_precision", "fp8",
                                "--fp8_override_linear_precision", "true,false,true", "x.py"}));
  CHECK(vars.at("ACCELERATE_FP8_OVERRIDE_FPROP") == "1");
  CHECK(vars.at("ACCELERATE_FP8_OVERRIDE_DGRAD") == "0");
  CHECK(vars.at("ACCELERATE_FP8_OVERRIDE_WGRAD") == "1");
  CHECK_THAT(usage_error({"--multi_gpu", "--num_processes", "2", "--mixed_precision", "fp8",
                          "--fp8_override_linear_precision", "true,false", "x.py"}),
             Contains("is not three booleans"));
}

TEST_CASE("config accelerate: c10d meets at --main_process_ip:--main_process_port",
          "[config][accelerate]") {
  Options o = launch({"--multi_gpu", "--num_processes", "4", "--num_machines", "2",
                      "--machine_rank", "1", "--rdzv_backend", "c10d", "--main_process_ip",
                      "10.0.0.1", "--main_process_port", "29411", "x.py"});
  REQUIRE(o.rdzv_endpoint);
  CHECK(o.rdzv_endpoint->host == "10.0.0.1");
  CHECK(o.rdzv_endpoint->port == 29411);
  Options default_port = launch({"--multi_gpu", "--num_processes", "2", "--rdzv_backend", "c10d",
                                 "--main_process_ip", "10.0.0.1", "x.py"});
  REQUIRE(default_port.rdzv_endpoint);
  CHECK(default_port.rdzv_endpoint->port == 29500);
}

TEST_CASE("config accelerate: the typers return what they add, and change nothing",
          "[config][accelerate]") {
  using gangrun::config::Endpoint;
  using gangrun::config::LayeredValues;
  using gangrun::config::RendezvousBackend;
  using gangrun::config::Source;
  Options o;
  o.num_processes = 4;
  o.rdzv_backend = RendezvousBackend::c10d;
  o.master_addr = "head";
  o.master_port = 1234;
  const Options before = o;
  LayeredValues cpu = {{"cpu", {"true", Source::command_line, "--cpu", "--cpu"}}};
  auto added = gangrun::config::type_accelerate_values(cpu, o);
  REQUIRE(added);
  CHECK(added->settings.active);
  CHECK(added->settings.one_plain_process);
  CHECK(added->settings.split_physical_cores_among == 4);
  CHECK(std::map<std::string, std::string>(added->settings.variables.begin(),
                                           added->settings.variables.end())
            .at("ACCELERATE_USE_CPU") == "True");
  CHECK(added->rdzv_endpoint == Endpoint{"head", 1234});
  CHECK(o.accelerate == before.accelerate);
  CHECK(o.nproc_per_node == before.nproc_per_node);

  // A torchrun-style line: nothing added.
  auto none = gangrun::config::type_accelerate_values({}, Options{});
  REQUIRE(none);
  CHECK(none->settings == gangrun::config::AccelerateSettings{});
  CHECK_FALSE(none->rdzv_endpoint);

  LayeredValues mpirun = {
      {"mpirun_hostfile",
       {"hosts", Source::command_line, "--mpirun_hostfile", "--mpirun_hostfile hosts"}}};
  auto taken = gangrun::config::type_mpirun_hostfile(mpirun, Options{});
  REQUIRE(taken);
  CHECK(taken->value_or("") == "hosts");
  auto not_given = gangrun::config::type_mpirun_hostfile({}, Options{});
  REQUIRE(not_given);
  CHECK_FALSE(not_given->has_value());
  LayeredValues tpu = {{"tpu", {"true", Source::command_line, "--tpu", "--tpu"}}};
  CHECK_FALSE(gangrun::config::refuse_unhonoured_accelerate_flags(tpu));
  CHECK(gangrun::config::refuse_unhonoured_accelerate_flags(cpu));
}
