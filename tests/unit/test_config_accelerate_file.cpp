// accelerate's YAML config (--config_file, and its default file): every key
// mapped to its option, the command line above it, the default file read only
// on an accelerate-style line, and every way the file can be refused.
#include "config/accelerate/accelerate_config_file.hpp"
#include "config_test_support.hpp"
#include "temp_dir.hpp"

#include <catch2/catch.hpp>

#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <map>
#include <string>

namespace {

using gangrun::test::TempDir;

using Catch::Matchers::Contains;
using Catch::Matchers::StartsWith;
using gangrun::EnvMap;
using gangrun::config::AccelerateConfigEntry;
using gangrun::config::Options;
using gangrun::config::Source;
using gangrun::config::test::launch;
using gangrun::config::test::usage_error;

std::map<std::string, std::string> entries(const std::string& yaml) {
  auto parsed = gangrun::config::parse_accelerate_config_text(yaml, "cfg.yaml");
  if (!parsed) FAIL(parsed.error().message());
  std::map<std::string, std::string> by_option;
  for (const AccelerateConfigEntry& entry : *parsed) by_option[entry.option] = entry.text;
  return by_option;
}

std::string error_of(const std::string& yaml) {
  auto parsed = gangrun::config::parse_accelerate_config_text(yaml, "cfg.yaml");
  if (parsed) FAIL("expected an error");
  return parsed ? "" : parsed.error().message();
}

std::map<std::string, std::string> variables(const Options& o) {
  return {o.accelerate.variables.begin(), o.accelerate.variables.end()};
}

}  // namespace

TEST_CASE("config accelerate file: keys map to the options of the same meaning",
          "[config][accelerate]") {
  auto got = entries(
      "compute_environment: LOCAL_MACHINE\n"
      "distributed_type: FSDP\n"
      "num_processes: 4\nnum_machines: 2\nmachine_rank: 1\n"
      "main_process_ip: 10.0.0.1\nmain_process_port: 29501\n"
      "gpu_ids: all\nmixed_precision: bf16\nuse_cpu: false\ndebug: true\n"
      "rdzv_backend: static\nsame_network: true\ntpu_env: []\n"
      "dynamo_config:\n  dynamo_backend: INDUCTOR\n  use_fullgraph: true\n"
      "fsdp_config:\n  fsdp_offload_params: false\n  sharding_strategy: FULL_SHARD\n"
      "deepspeed_config:\n  zero_stage: 2\n  unknown_to_any_flag: 1\n"
      "main_training_function: main\n");
  CHECK(got.at("use_fsdp") == "true");
  CHECK(got.at("num_processes") == "4");
  CHECK(got.at("nnodes") == "2");
  CHECK(got.at("node_rank") == "1");
  CHECK(got.at("master_addr") == "10.0.0.1");
  CHECK(got.at("master_port") == "29501");
  CHECK(got.at("gpu_ids") == "all");
  CHECK(got.at("cpu") == "false");
  CHECK(got.at("debug") == "true");
  CHECK(got.at("dynamo_backend") == "INDUCTOR");
  CHECK(got.at("dynamo_use_fullgraph") == "true");
  CHECK(got.at("fsdp_offload_params") == "False");  // Python's str(False); lower-cased later
  CHECK(got.at("fsdp_sharding_strategy") == "FULL_SHARD");
  CHECK(got.at("zero_stage") == "2");
  CHECK_FALSE(got.contains("rdzv_backend"));  // accelerate launch ignores it in the file too
  CHECK_FALSE(got.contains("same_network"));
}

TEST_CASE("config accelerate file: what accelerate refuses or gangrun cannot run is an error",
          "[config][accelerate]") {
  CHECK_THAT(error_of("num_processes: 2\nnot_a_key: 1\n"),
             StartsWith("cfg.yaml: key \"not_a_key\": not a key of accelerate's config file"));
  CHECK_THAT(error_of("distributed_type: XLA\n"),
             StartsWith("cfg.yaml: key \"distributed_type\": XLA: gangrun cannot honour it"));
  CHECK_THAT(error_of("compute_environment: AMAZON_SAGEMAKER\n"),
             Contains("SageMaker launches are accelerate's own"));
  CHECK_THAT(error_of("distributed_type: WARP\n"), Contains("unknown distributed type 'WARP'"));
  CHECK_THAT(error_of("num_processes: [1, 2]\n"),
             StartsWith("cfg.yaml: key \"num_processes\": expected a single value"));
  CHECK_THAT(error_of("debug: sometimes\n"),
             StartsWith("cfg.yaml: key \"debug\": expected true or false"));
  CHECK_THAT(error_of("- a\n- b\n"), StartsWith("cfg.yaml: expected accelerate's config"));
  CHECK_THAT(error_of("a: [\n"), StartsWith("cfg.yaml: not valid YAML: line "));
}

TEST_CASE("config accelerate file: the command line wins, the file's values stand below",
          "[config][accelerate]") {
  TempDir dir;
  std::string cfg = dir.write("cfg.yaml",
                              "distributed_type: DEEPSPEED\nnum_processes: 2\n"
                              "mixed_precision: bf16\n"
                              "deepspeed_config:\n  gradient_accumulation_steps: 4\n"
                              "  zero_stage: 3\n");
  Options o = launch({"--config_file", cfg, "--mixed_precision", "fp16", "x.py"});
  auto vars = variables(o);
  CHECK(vars.at("ACCELERATE_USE_DEEPSPEED") == "true");
  CHECK(vars.at("ACCELERATE_MIXED_PRECISION") == "fp16");
  CHECK(vars.at("ACCELERATE_DEEPSPEED_ZERO_STAGE") == "3");
  CHECK(vars.at("ACCELERATE_CONFIG_DS_FIELDS") == "gradient_accumulation_steps,zero_stage");
  CHECK(*o.num_processes == 2);
  CHECK(o.origins.at("num_processes").source == Source::accelerate_config);
  // --dry-run -v names the file and key a value came from.
  CHECK(o.origins.at("num_processes").text == "2 (" + cfg + ": key \"num_processes\")");

  // mixed_precision from the file is listed too, as accelerate lists it.
  auto from_file = variables(launch({"--config_file", cfg, "x.py"}));
  CHECK(from_file.at("ACCELERATE_CONFIG_DS_FIELDS") ==
        "gradient_accumulation_steps,zero_stage,mixed_precision");

  // A launcher flag on the command line puts the file's distributed_type aside.
  auto multi = variables(launch({"--config_file", cfg, "--multi_gpu", "x.py"}));
  CHECK_FALSE(multi.contains("ACCELERATE_USE_DEEPSPEED"));
  CHECK(multi.contains("ACCELERATE_DYNAMO_BACKEND"));

  // accelerate asks for num_processes when the file has none.
  std::string without = dir.write("none.yaml", "distributed_type: MULTI_GPU\n");
  CHECK_THAT(usage_error({"--config_file", without, "x.py"}), Contains("no num_processes"));
  CHECK(*launch({"--config_file", without, "-n", "2", "x.py"}).num_processes == 2);
}

TEST_CASE("config accelerate file: the default config is read only on an accelerate-style line",
          "[config][accelerate]") {
  TempDir dir;
  dir.write("hf/accelerate/default_config.yaml",
            "compute_environment: LOCAL_MACHINE\ndistributed_type: MULTI_GPU\n"
            "num_processes: 3\nmixed_precision: fp16\n");
  EnvMap env = {{"HF_HOME", dir.path().string() + "/hf"}};

  // torchrun-style: the default config changes nothing.
  Options torchrun_style = launch({"--nproc_per_node", "2", "x.py"}, env);
  CHECK_FALSE(torchrun_style.accelerate.active);
  CHECK_FALSE(torchrun_style.num_processes);

  Options accelerate_style = launch({"--mixed_precision", "bf16", "x.py"}, env);
  CHECK(*accelerate_style.num_processes == 3);
  CHECK(variables(accelerate_style).at("ACCELERATE_MIXED_PRECISION") == "bf16");

  // accelerate launch does not read its default config under --cpu.
  Options cpu = launch({"--cpu", "x.py"}, env);
  CHECK(variables(cpu).at("ACCELERATE_MIXED_PRECISION") == "no");

  // XDG_CACHE_HOME and HOME name it when HF_HOME does not.
  CHECK(*gangrun::config::default_accelerate_config_path({{"XDG_CACHE_HOME", "/c"}}) ==
        "/c/huggingface/accelerate/default_config.yaml");
  CHECK(*gangrun::config::default_accelerate_config_path({{"HOME", "/h"}}) ==
        "/h/.cache/huggingface/accelerate/default_config.yaml");
}

TEST_CASE("config accelerate file: a file gangrun cannot read names itself",
          "[config][accelerate]") {
  CHECK_THAT(usage_error({"--config_file", "/nonexistent/cfg.yaml", "x.py"}),
             StartsWith("/nonexistent/cfg.yaml: cannot read the config file"));
  CHECK_THAT(usage_error({"--config_file", "/dev/zero", "x.py"}),
             Contains("--config_file reads YAML from a regular file"));
}

TEST_CASE("config accelerate file: a NUL in any key or value is refused, nested ones too",
          "[config][accelerate]") {
  const std::string why = ": the value contains a NUL character";
  CHECK_THAT(error_of("main_process_ip: \"127.0.0.1\\0.evil.com\"\n"),
             StartsWith("cfg.yaml: key \"main_process_ip\"" + why));
  CHECK_THAT(error_of("deepspeed_config:\n  zero_stage: \"1\\0\"\n"),
             StartsWith("cfg.yaml: key \"deepspeed_config.zero_stage\"" + why));
  // Keys accelerate ignores and lists are looked at too.
  CHECK_THAT(error_of("tpu_env:\n  - A=1\n  - \"B=\\0\"\n"),
             StartsWith("cfg.yaml: key \"tpu_env[1]\"" + why));
  CHECK_THAT(error_of("\"num_\\0machines\": 2\n"),
             StartsWith("cfg.yaml: key \"num_\\0machines\": the key contains a NUL character"));
}
