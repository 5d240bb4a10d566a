#include "launch/workers_plan.hpp"

#include <catch2/catch.hpp>

#include <csignal>
#include <set>
#include <string>
#include <vector>

using gangrun::EnvMap;
using gangrun::config::Options;
using gangrun::config::OutputMode;
using gangrun::launch::LaunchPlan;
using gangrun::launch::plan_output;
using gangrun::launch::plan_workers;

TEST_CASE("launch::plan_output prefixes several workers' lines", "[launch]") {
  Options options;
  LaunchPlan plan;
  plan.local_world_size = 2;
  plan_output(options, {{"TORCHELASTIC_ERROR_FILE", "/tmp/error.json"}}, plan);
  CHECK(plan.prefix_output);
  CHECK(plan.teardown_signals == std::set<int>{SIGTERM, SIGINT, SIGHUP, SIGQUIT});
  CHECK(plan.parent_error_file == "/tmp/error.json");
  CHECK_FALSE(plan.prefix_template.empty());

  plan = {};
  plan.local_world_size = 2;
  options.output = OutputMode::inherit;
  options.log_prefix = "[{rank}] ";
  plan_output(options, {}, plan);
  CHECK_FALSE(plan.prefix_output);
  CHECK(plan.prefix_template == "[{rank}] ");
}

TEST_CASE("launch::plan_workers gives each worker its argv, mask and streams", "[launch]") {
  Options options;
  options.local_ranks_filter = std::set<int>{1};
  LaunchPlan plan;
  plan.local_world_size = 2;
  plan.program.argv = {"/bin/true", "x"};
  std::vector<EnvMap> masks = {{{"CUDA_VISIBLE_DEVICES", "0"}}, {{"CUDA_VISIBLE_DEVICES", "1"}}};
  REQUIRE(plan_workers(options, {}, masks, plan));
  REQUIRE(plan.workers.size() == 2);
  CHECK(plan.workers[1].local_rank == 1);
  CHECK(plan.workers[1].argv == std::vector<std::string>{"/bin/true", "x"});
  CHECK(plan.workers[1].device_env == masks[1]);
  CHECK_FALSE(plan.workers[0].to_console.out);  // filtered out of the console
  CHECK(plan.workers[1].to_console.out);
  CHECK_FALSE(plan.workers[1].to_file.out);

  plan.workers.clear();
  plan.log_dir = "logs";
  REQUIRE(plan_workers(options, {}, masks, plan));
  CHECK(plan.workers[0].to_file.out);
  CHECK(plan.workers[0].to_file.err);
}
