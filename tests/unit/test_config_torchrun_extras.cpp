// torchrun 2.x's options beyond the core table: those gangrun accepts with no
// effect (checked, then ignored), those it refuses with the reason, the
// --shutdown_timeout spelling of --term-timeout, and --virtual_local_rank.
#include "config_test_support.hpp"
#include "launch/dialects/worker_variables.hpp"
#include "launch/plan.hpp"

#include <catch2/catch.hpp>

namespace {

using Catch::Matchers::Contains;
using gangrun::config::Options;
using gangrun::config::test::launch;
using gangrun::config::test::usage_error;
using gangrun::launch::make_plan;
using gangrun::launch::static_assignment;
using gangrun::launch::worker_variables;

}  // namespace

TEST_CASE("torchrun options gangrun accepts are checked, then change nothing", "[config]") {
  Options plain = launch({"train.py"});
  for (auto args :
       std::vector<std::vector<std::string>>{{"--start_method", "fork", "train.py"},
                                             {"--start-method=spawn", "train.py"},
                                             {"--run_path", "train.py"},
                                             {"--event_log_handler", "x", "train.py"}}) {
    Options o = launch(args);
    CHECK(o.program_and_args == plain.program_and_args);
    CHECK(o.nproc_per_node.has_value() == plain.nproc_per_node.has_value());
  }
  CHECK_THAT(usage_error({"--start_method", "thread", "train.py"}),
             Contains("--start_method: 'thread' is not one of spawn, fork, forkserver"));
  CHECK_THAT(usage_error({"--run_path=maybe", "train.py"}), Contains("--run_path"));
}

TEST_CASE("torchrun options gangrun cannot honour are refused with the reason", "[config]") {
  CHECK_THAT(usage_error({"--logs_specs", "custom", "train.py"}),
             Contains("--logs_specs is not supported: it names a Python entry point"));
  CHECK_THAT(usage_error({"--duplicate-stdout-filters", "loss", "train.py"}),
             Contains("--duplicate-stdout-filters is not supported") && Contains("--tee 1"));
  CHECK_THAT(usage_error({"--duplicate_stderr_filters", "loss", "train.py"}), Contains("--tee 2"));
  // From any layer, named as that layer gives it.
  CHECK_THAT(usage_error({"train.py"}, {{"PET_LOGS_SPECS", "custom"}}),
             Contains("PET_LOGS_SPECS is not supported"));
}

TEST_CASE("torchrun's --numa-binding takes its four modes, and owns the CPUs alone", "[config]") {
  using gangrun::config::NumaBinding;
  CHECK_FALSE(launch({"train.py"}).numa_binding);
  CHECK(launch({"--numa_binding", "node", "train.py"}).numa_binding == NumaBinding::node);
  CHECK(launch({"--numa-binding=socket", "train.py"}).numa_binding == NumaBinding::socket);
  CHECK(launch({"--numa-binding", "exclusive", "train.py"}).numa_binding == NumaBinding::exclusive);
  CHECK(launch({"--numa_binding=core-complex", "train.py"}).numa_binding ==
        NumaBinding::core_complex);
  CHECK_THAT(usage_error({"--numa_binding", "l3", "train.py"}),
             Contains("--numa_binding: 'l3' is not a binding mode (expected node, socket, "
                      "exclusive or core-complex)"));
  CHECK_THAT(usage_error({"--numa_binding", "node", "--bind_cores_to_rank", "train.py"}),
             Contains("--numa_binding node and --bind_cores_to_rank") &&
                 Contains("give only one of them"));
}

TEST_CASE("torchrun 2.x's --shutdown_timeout is --term-timeout", "[config]") {
  CHECK(launch({"--shutdown_timeout", "5", "train.py"}).term_timeout == 5.0);
  CHECK(launch({"--shutdown-timeout=7.5", "train.py"}).term_timeout == 7.5);
}

TEST_CASE("torchrun's --virtual_local_rank: LOCAL_RANK 0 and one device each", "[config]") {
  Options o = launch({"--virtual_local_rank", "--nproc_per_node", "2", "/bin/true"});
  REQUIRE(o.virtual_local_rank);
  auto local_ranks_and_devices = [&](const gangrun::EnvMap& host_env) {
    auto plan = make_plan(o, host_env);
    REQUIRE(plan);
    std::vector<std::string> seen;
    for (const auto& worker : plan->workers) {
      auto vars = worker_variables(*plan, worker, static_assignment(*plan, 0, "1"), "/run");
      seen.push_back(vars.at("LOCAL_RANK") + ":" + vars.at("CUDA_VISIBLE_DEVICES"));
      CHECK(vars.at("RANK") == std::to_string(worker.local_rank));
    }
    return seen;
  };
  CHECK(local_ranks_and_devices({{"PATH", "/bin"}}) == std::vector<std::string>{"0:0", "0:1"});
  CHECK(local_ranks_and_devices({{"PATH", "/bin"}, {"CUDA_VISIBLE_DEVICES", "3, 5,6"}}) ==
        std::vector<std::string>{"0:3", "0:5"});

  auto too_few = make_plan(o, {{"PATH", "/bin"}, {"CUDA_VISIBLE_DEVICES", "3"}});
  REQUIRE_FALSE(too_few);
  CHECK_THAT(too_few.error().message(), Contains("CUDA_VISIBLE_DEVICES=3, which lists 1"));
}
