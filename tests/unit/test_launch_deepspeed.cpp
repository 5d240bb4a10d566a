// What deepspeed's conventions change in a worker: its argv, its variables,
// its cores.
#include "launch/dialects/deepspeed.hpp"
#include "launch/dialects/deepspeed_cores.hpp"
#include "launch/dialects/deepspeed_pid_file.hpp"
#include "launch/dialects/worker_variables.hpp"
#include "launch/plan.hpp"
#include "launch_test_support.hpp"

#include <catch2/catch.hpp>

#include <unistd.h>

#include <filesystem>
#include <fstream>

using gangrun::config::LaunchStyle;
using gangrun::config::Options;
using gangrun::launch::CoreHost;
using gangrun::launch::make_plan;
using gangrun::launch::split_cores;
using gangrun::launch::static_assignment;
using gangrun::launch::worker_variables;

namespace {

Options job(int nproc) { return gangrun::launch::test::job(nproc, {"/bin/echo", "a", "b"}); }

}  // namespace

TEST_CASE("launch deepspeed: --local_rank=N goes between the script and its arguments",
          "[launch][deepspeed]") {
  Options options = job(2);
  auto plain = make_plan(options, {});
  REQUIRE(plain);
  CHECK(plain->workers[1].argv == std::vector<std::string>{"/bin/echo", "a", "b"});
  options.deepspeed.launch_style = LaunchStyle::deepspeed;
  auto styled = make_plan(options, {});
  REQUIRE(styled);
  CHECK(styled->workers[1].argv ==
        std::vector<std::string>{"/bin/echo", "--local_rank=1", "a", "b"});
  options.deepspeed.no_local_rank = true;
  CHECK(make_plan(options, {})->workers[1].argv == std::vector<std::string>{"/bin/echo", "a", "b"});
}

TEST_CASE("launch deepspeed: LOCAL_SIZE, CROSS_RANK and CROSS_SIZE in deepspeed style",
          "[launch][deepspeed]") {
  Options options = job(2);
  options.nnodes = 3;
  options.node_rank = 2;
  auto plan = make_plan(options, {});
  REQUIRE(plan);
  auto round = static_assignment(*plan, 0, "29500");
  CHECK_FALSE(worker_variables(*plan, plan->workers[0], round, "/r").contains("CROSS_RANK"));
  options.deepspeed.launch_style = LaunchStyle::deepspeed;
  plan = make_plan(options, {});
  auto vars = worker_variables(*plan, plan->workers[1], round, "/r");
  CHECK(vars.at("LOCAL_SIZE") == "2");
  CHECK(vars.at("CROSS_RANK") == "2");
  CHECK(vars.at("CROSS_SIZE") == "3");
  CHECK(vars.at("RANK") == "5");
}

TEST_CASE("launch deepspeed: cores are shared out as deepspeed does", "[launch][deepspeed]") {
  Options options = job(3);
  CHECK(split_cores(options.deepspeed, 3, {})->at(2).empty());  // not asked for
  options.deepspeed.bind_cores_to_rank = true;
  auto shares = split_cores(options.deepspeed, 3, CoreHost{8, {}});
  REQUIRE(shares);
  CHECK(*shares == std::vector<std::vector<int>>{{0, 1}, {2, 3}, {4, 5}});
  options.deepspeed.bind_core_list = std::vector<int>{1, 3, 4, 5, 7};
  CHECK(*split_cores(options.deepspeed, 2, CoreHost{8, {}}) ==
        std::vector<std::vector<int>>{{1, 3}, {4, 5}});
  auto too_few = split_cores(options.deepspeed, 6, CoreHost{8, {}});
  REQUIRE_FALSE(too_few);
  CHECK(too_few.error().message().find("6 workers") != std::string::npos);
  auto not_allowed = split_cores(options.deepspeed, 1, CoreHost{8, {0, 1, 2, 3}});
  REQUIRE_FALSE(not_allowed);
  CHECK(not_allowed.error().message().find("core 4") != std::string::npos);
  options.deepspeed.bind_core_list.reset();
  CHECK_FALSE(split_cores(options.deepspeed, 1, CoreHost{std::nullopt, {}}));
}

TEST_CASE("launch deepspeed: a pinned worker gets OMP_NUM_THREADS of its share",
          "[launch][deepspeed]") {
  Options options = job(2);
  options.deepspeed.bind_cores_to_rank = true;
  options.deepspeed.bind_core_list = std::vector<int>{0};
  CHECK_FALSE(make_plan(options, {}));  // one core for two workers
  options = job(1);
  options.deepspeed.bind_cores_to_rank = true;
  options.deepspeed.bind_core_list = std::vector<int>{0};
  auto plan = make_plan(options, {{"OMP_NUM_THREADS", "8"}});
  REQUIRE(plan);
  CHECK(plan->workers[0].cpus == std::vector<int>{0});
  auto round = static_assignment(*plan, 0, "1");
  CHECK(worker_variables(*plan, plan->workers[0], round, "/r").at("OMP_NUM_THREADS") == "1");
}

TEST_CASE("launch deepspeed: the pid file lives as long as its owner", "[launch][deepspeed]") {
  namespace fs = std::filesystem;
  fs::path dir = fs::temp_directory_path() / ("gangrun-pidfile-" + std::to_string(::getpid()));
  fs::create_directories(dir);
  std::string path;
  {
    auto file = gangrun::launch::DeepspeedPidFile::write(4242, dir.string());
    REQUIRE(file);
    path = file->path();
    CHECK(path == (dir / "4242.deepspeed").string());
    std::ifstream in(path);
    std::string text;
    std::getline(in, text);
    CHECK(text == "4242");
  }
  CHECK_FALSE(fs::exists(path));
  CHECK_FALSE(gangrun::launch::DeepspeedPidFile::write(1, (dir / "missing").string()));
  fs::remove_all(dir);
}
