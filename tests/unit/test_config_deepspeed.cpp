// deepspeed's own flags: parsing, typing and what they refuse.
#include "config/deepspeed/deepspeed_env_file.hpp"
#include "config/deepspeed/deepspeed_values.hpp"
#include "config_test_support.hpp"

#include <unistd.h>

#include <filesystem>
#include <fstream>

using gangrun::config::LaunchStyle;
using gangrun::config::parse_core_list;
using gangrun::config::parse_deepspeed_env;
using gangrun::config::read_deepspeed_env_files;
using gangrun::config::test::launch;
using gangrun::config::test::usage_error;

TEST_CASE("config deepspeed: the launch style is torchrun's unless asked", "[config][deepspeed]") {
  CHECK(launch({"train.py"}).deepspeed.launch_style == LaunchStyle::torchrun);
  auto options = launch({"--launch_style", "deepspeed", "--no_local_rank", "train.py"});
  CHECK(options.deepspeed.launch_style == LaunchStyle::deepspeed);
  CHECK(options.deepspeed.no_local_rank);
  CHECK(launch({"train.py"}, {{"GANGRUN_LAUNCH_STYLE", "deepspeed"}}).deepspeed.launch_style ==
        LaunchStyle::deepspeed);
  CHECK(usage_error({"--launch_style", "mpi", "train.py"}).find("torchrun, deepspeed") !=
        std::string::npos);
}

TEST_CASE("config deepspeed: -i and -e are --include and --exclude", "[config][deepspeed]") {
  CHECK(launch({"-i", "localhost:0,2", "train.py"}).include == "localhost:0,2");
  CHECK(launch({"-e", "localhost:1", "train.py"}).exclude == "localhost:1");
}

TEST_CASE("config deepspeed: the flags deepspeed passes through", "[config][deepspeed]") {
  auto options = launch({"--bind_cores_to_rank", "--bind_core_list", "0,2-3", "--save_pid",
                         "--force_multi", "--enable_each_rank_log", "logs", "train.py"});
  CHECK(options.deepspeed.bind_cores_to_rank);
  CHECK(options.deepspeed.bind_core_list == std::vector<int>{0, 2, 3});
  CHECK(options.deepspeed.save_pid);
  CHECK(options.deepspeed.force_multi);
  CHECK(options.deepspeed.each_rank_log_dir == "logs");
}

TEST_CASE("config deepspeed: --log_level is the verbosity where -v and -q are not given",
          "[config][deepspeed]") {
  CHECK(launch({"--log_level", "debug", "train.py"}).verbosity == 1);
  CHECK(launch({"--log_level", "error", "train.py"}).verbosity == -1);
  CHECK(launch({"--log_level", "info", "train.py"}).verbosity == 0);
  CHECK(launch({"--log_level", "error", "-v", "train.py"}).verbosity == 1);
  CHECK(usage_error({"--log_level", "loud", "train.py"}).find("loud") != std::string::npos);
}

TEST_CASE(
    "config deepspeed: --num_gpus on CPUs is the worker count, as deepspeed's CPU "
    "accelerator takes it",
    "[config][deepspeed]") {
  auto options = launch({"--accelerator", "cpu", "--num_gpus", "2", "train.py"});
  REQUIRE(options.nproc_per_node);
  CHECK(options.nproc_per_node->number == 2);
  CHECK_FALSE(options.num_gpus);
  CHECK(launch({"--num_gpus", "2", "train.py"}).num_gpus == 2);  // devices still select
}

TEST_CASE("config deepspeed: what is refused says why and what instead", "[config][deepspeed]") {
  std::string autotuning = usage_error({"--autotuning", "tune", "train.py"});
  CHECK(autotuning.find("--autotuning") != std::string::npos);
  CHECK(autotuning.find("not supported") != std::string::npos);
  std::string both = usage_error({"--enable_each_rank_log", "logs", "--log_dir", "d", "train.py"});
  CHECK(both.find("--log_dir") != std::string::npos);
  CHECK(usage_error({"--enable_each_rank_log", "/dev/null", "train.py"}).find("not a directory") !=
        std::string::npos);
  CHECK(usage_error({"--bind_core_list", "3,1", "train.py"}).find("'1'") != std::string::npos);
  CHECK(usage_error({"--venv_script", "v.sh", "train.py"}).find("--python") != std::string::npos);
  CHECK(launch({"--no_ssh", "train.py"}).deepspeed.no_ssh);
}

TEST_CASE("config deepspeed: parse_core_list reads deepspeed's ranges", "[config][deepspeed]") {
  CHECK(*parse_core_list("1,3-5,7") == std::vector<int>{1, 3, 4, 5, 7});
  CHECK(*parse_core_list("0") == std::vector<int>{0});
  CHECK_FALSE(parse_core_list("5-3"));
  CHECK_FALSE(parse_core_list("1,1"));
  CHECK_FALSE(parse_core_list("0-2,2"));
  CHECK_FALSE(parse_core_list("a"));
  CHECK_FALSE(parse_core_list(""));
  CHECK_FALSE(parse_core_list("1, 2"));
  CHECK_FALSE(parse_core_list("0-99999999"));
}

TEST_CASE("config deepspeed: .deepspeed_env lines", "[config][deepspeed]") {
  auto vars = parse_deepspeed_env("A=1\n  B = x y \n\n# note\nC=a=b\n", "f");
  REQUIRE(vars);
  CHECK(*vars == gangrun::EnvMap{{"A", "1"}, {"B", "x y"}, {"C", "a=b"}});
  auto bad = parse_deepspeed_env("A=1\nNOVALUE\n", "f");
  REQUIRE_FALSE(bad);
  CHECK(bad.error().message().find("f:2") != std::string::npos);
  CHECK_FALSE(parse_deepspeed_env("=1\n", "f"));
}

TEST_CASE("config deepspeed: .deepspeed_env files in HOME, then the directory, DS_ENV_FILE",
          "[config][deepspeed]") {
  namespace fs = std::filesystem;
  fs::path root = fs::temp_directory_path() / ("gangrun-dsenv-" + std::to_string(::getpid()));
  fs::create_directories(root / "home");
  fs::create_directories(root / "work");
  std::ofstream(root / "home" / ".deepspeed_env") << "A=home\nB=home\n";
  std::ofstream(root / "work" / ".deepspeed_env") << "B=work\n";
  std::ofstream(root / "work" / "other") << "C=other\n";
  gangrun::EnvMap env = {{"HOME", (root / "home").string()}};
  auto vars = read_deepspeed_env_files(env, (root / "work").string());
  REQUIRE(vars);
  CHECK(*vars == gangrun::EnvMap{{"A", "home"}, {"B", "work"}});
  env["DS_ENV_FILE"] = "other";
  CHECK(*read_deepspeed_env_files(env, (root / "work").string()) ==
        gangrun::EnvMap{{"C", "other"}});
  env["DS_ENV_FILE"] = (root / "home" / ".deepspeed_env").string();
  CHECK(read_deepspeed_env_files(env, "/")->at("A") == "home");
  CHECK(read_deepspeed_env_files({}, (root / "home").string())->size() == 2);
  fs::remove_all(root);
}

TEST_CASE("config deepspeed: the typer returns what it adds, and changes nothing",
          "[config][deepspeed]") {
  using gangrun::config::DeepspeedAdditions;
  using gangrun::config::LayeredValues;
  using gangrun::config::Options;
  using gangrun::config::Source;
  Options o;
  o.accelerator = gangrun::config::Accelerator::cpu;
  o.num_gpus = 3;
  o.deepspeed.log_level_verbosity = 1;
  auto added = gangrun::config::type_deepspeed_values({}, o);
  CHECK(added == DeepspeedAdditions{.verbosity = 1, .num_gpus_as_workers_per_node = 3});
  CHECK(o.num_gpus == 3);
  CHECK(o.verbosity == 0);

  // -v decides the verbosity; a process count decides the workers.
  LayeredValues verbose = {{"verbose", {"1", Source::command_line, "-v", "-v"}}};
  o.nproc_per_node =
      gangrun::config::ProcCount{.kind = gangrun::config::ProcCount::Kind::number, .number = 2};
  CHECK(gangrun::config::type_deepspeed_values(verbose, o) == DeepspeedAdditions{});
}
