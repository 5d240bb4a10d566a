// OMP_NUM_THREADS, decided in one place (launch/dialects/omp_threads.hpp):
// what each worker gets under torchrun's, accelerate's and deepspeed's rules,
// and that the message says what the workers actually get.
#include "launch/dialects/omp_threads.hpp"
#include "launch/dialects/worker_variables.hpp"
#include "launch/plan.hpp"
#include "launch_test_support.hpp"

#include <catch2/catch.hpp>

using gangrun::config::Options;
using gangrun::launch::make_plan;
using gangrun::launch::omp_threads;
using gangrun::launch::omp_threads_message;
using gangrun::launch::static_assignment;
using gangrun::launch::worker_variables;
using gangrun::launch::test::job;

namespace {

// What worker 0 gets in its variables, or "unset".
std::string first_worker_threads(const gangrun::launch::LaunchPlan& plan) {
  auto vars = worker_variables(plan, plan.workers[0], static_assignment(plan, 0, "1"), "/r");
  auto found = vars.find("OMP_NUM_THREADS");
  return found == vars.end() ? "unset" : found->second;
}

}  // namespace

TEST_CASE("omp threads: torchrun's rule, and its message only when gangrun chose",
          "[launch][omp]") {
  auto several = make_plan(job(4), {});
  REQUIRE(several);
  CHECK(first_worker_threads(*several) == "1");
  CHECK(omp_threads_message(*several) ==
        "OMP_NUM_THREADS is unset; setting it to 1 for each of the 4 workers (set it yourself "
        "to tune)");

  auto inherited = make_plan(job(4), {{"OMP_NUM_THREADS", "8"}});
  REQUIRE(inherited);
  CHECK(first_worker_threads(*inherited) == "8");
  CHECK_FALSE(omp_threads_message(*inherited));

  auto one = make_plan(job(1), {});
  REQUIRE(one);
  CHECK(first_worker_threads(*one) == "unset");
  CHECK_FALSE(omp_threads(*one, one->workers[0]).value);
  CHECK_FALSE(omp_threads_message(*one));
}

TEST_CASE("omp threads: a pinned worker gets its share's size, and the message says so",
          "[launch][omp]") {
  Options options = job(1);
  options.deepspeed.bind_cores_to_rank = true;
  options.deepspeed.bind_core_list = std::vector<int>{0};
  auto plan = make_plan(options, {{"OMP_NUM_THREADS", "8"}});
  REQUIRE(plan);
  CHECK(first_worker_threads(*plan) == "1");
  CHECK(omp_threads_message(*plan) ==
        "OMP_NUM_THREADS=8 is replaced; setting it to 1 for the one worker (the size of each "
        "worker's core share under --bind_cores_to_rank, as deepspeed sets it)");
}

TEST_CASE("omp threads: accelerate's rule, and its message", "[launch][omp]") {
  Options options = job(2);
  options.accelerate.active = true;
  options.accelerate.sets_omp_threads = true;
  auto fallback = make_plan(options, {});
  REQUIRE(fallback);
  CHECK(first_worker_threads(*fallback) == "1");
  CHECK(omp_threads_message(*fallback) ==
        "OMP_NUM_THREADS is unset; setting it to 1 for each of the 2 workers (accelerate's "
        "default; set it, or --num_cpu_threads_per_process, to tune)");

  auto kept = make_plan(options, {{"OMP_NUM_THREADS", "3"}});
  REQUIRE(kept);
  CHECK(first_worker_threads(*kept) == "3");
  CHECK_FALSE(omp_threads_message(*kept));

  auto not_a_number = make_plan(options, {{"OMP_NUM_THREADS", "many"}});
  REQUIRE(not_a_number);
  CHECK(first_worker_threads(*not_a_number) == "1");
  CHECK(omp_threads_message(*not_a_number) ==
        "OMP_NUM_THREADS=many is replaced; setting it to 1 for each of the 2 workers (accelerate "
        "reads no number in it; set it, or --num_cpu_threads_per_process, to tune)");

  options.accelerate.cpu_threads_per_process = 5;  // asked for: nothing to announce
  auto asked = make_plan(options, {{"OMP_NUM_THREADS", "3"}});
  REQUIRE(asked);
  CHECK(first_worker_threads(*asked) == "5");
  CHECK_FALSE(omp_threads_message(*asked));

  options.accelerate.sets_omp_threads = false;  // --use_deepspeed: torchrun's rule
  options.accelerate.cpu_threads_per_process.reset();
  auto under_deepspeed = make_plan(options, {});
  REQUIRE(under_deepspeed);
  CHECK(first_worker_threads(*under_deepspeed) == "1");
  CHECK(omp_threads_message(*under_deepspeed) ==
        "OMP_NUM_THREADS is unset; setting it to 1 for each of the 2 workers (set it yourself "
        "to tune)");
}
