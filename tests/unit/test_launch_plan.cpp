#include "launch/dialects/torchrun.hpp"
#include "launch/dialects/worker_variables.hpp"
#include "launch/plan.hpp"
#include "launch/plan_checks.hpp"
#include "launch_test_support.hpp"
#include "temp_dir.hpp"

#include <catch2/catch.hpp>

#include <unistd.h>

#include <filesystem>
#include <fstream>

using gangrun::config::Options;
using gangrun::config::ProcCount;
using gangrun::launch::make_plan;
using gangrun::launch::static_assignment;
using gangrun::launch::worker_prefix;
using gangrun::launch::worker_variables;
using gangrun::launch::test::job;

TEST_CASE("launch::make_plan numbers ranks node by node", "[launch]") {
  Options options = job(2);
  options.nnodes = 3;
  options.node_rank = 1;
  auto plan = make_plan(options, {{"PATH", "/bin"}});
  REQUIRE(plan);
  REQUIRE(plan->workers.size() == 2);
  auto round = static_assignment(*plan, 0, "29500");
  CHECK(round.world_size == 6);
  CHECK(round.rank_of(plan->workers[0]) == 2);
  CHECK(round.rank_of(plan->workers[1]) == 3);
  CHECK(plan->master_port == 29500);  // multi-node default; one node gets a free port
}

TEST_CASE("launch::make_plan derives per-node counts from the other spellings", "[launch]") {
  Options options;
  options.program_and_args = {"/bin/true"};
  options.num_processes = 8;
  options.nnodes = 2;
  auto plan = make_plan(options, {});
  REQUIRE(plan);
  CHECK(plan->local_world_size == 4);
  options.num_processes.reset();
  options.num_gpus = 3;
  plan = make_plan(options, {});
  REQUIRE(plan);
  CHECK(plan->local_world_size == 3);
}

TEST_CASE("launch::worker_variables sets torchrun's contract", "[launch]") {
  Options options = job(4);
  options.max_restarts = 2;
  options.rdzv_id = "job7";
  options.role = "trainer";
  auto plan = make_plan(options, {{"NCCL_ASYNC_ERROR_HANDLING", "0"}});
  REQUIRE(plan);
  REQUIRE_FALSE(plan->master_port);  // picked at launch on a single node
  auto vars =
      worker_variables(*plan, plan->workers[3], static_assignment(*plan, 1, "1234"), "/run");
  CHECK(vars.at("LOCAL_RANK") == "3");
  CHECK(vars.at("RANK") == "3");
  CHECK(vars.at("GROUP_RANK") == "0");
  CHECK(vars.at("ROLE_RANK") == "3");
  CHECK(vars.at("ROLE_NAME") == "trainer");
  CHECK(vars.at("LOCAL_WORLD_SIZE") == "4");
  CHECK(vars.at("WORLD_SIZE") == "4");
  CHECK(vars.at("GROUP_WORLD_SIZE") == "1");
  CHECK(vars.at("ROLE_WORLD_SIZE") == "4");
  CHECK(vars.at("MASTER_ADDR") == "127.0.0.1");
  CHECK(vars.at("MASTER_PORT") == "1234");
  CHECK(vars.at("TORCHELASTIC_RESTART_COUNT") == "1");
  CHECK(vars.at("TORCHELASTIC_MAX_RESTARTS") == "2");
  CHECK(vars.at("TORCHELASTIC_RUN_ID") == "job7");
  CHECK(vars.at("TORCHELASTIC_USE_AGENT_STORE") == "True");
  CHECK(vars.at("TORCHELASTIC_ERROR_FILE") == "/run/attempt_1/3/error.json");
  CHECK(vars.at("NCCL_ASYNC_ERROR_HANDLING") == "0");
  CHECK(vars.at("TORCH_NCCL_ASYNC_ERROR_HANDLING") == "1");
  CHECK(vars.at("OMP_NUM_THREADS") == "1");
}

TEST_CASE("launch::worker_variables leaves OMP_NUM_THREADS alone for one worker", "[launch]") {
  auto plan = make_plan(job(1), {});
  REQUIRE(plan);
  CHECK_FALSE(worker_variables(*plan, plan->workers[0], static_assignment(*plan, 0, "1"), "/run")
                  .contains("OMP_NUM_THREADS"));
  auto kept = make_plan(job(2), {{"OMP_NUM_THREADS", "8"}});
  REQUIRE(kept);
  CHECK(worker_variables(*kept, kept->workers[0], static_assignment(*kept, 0, "1"), "/run")
            .at("OMP_NUM_THREADS") == "8");
}

TEST_CASE("launch::make_plan routes redirects, tees and the console filter", "[launch]") {
  Options options = job(3);
  options.redirects.all = {true, false};         // -r 1
  options.tee.per_local_rank[1] = {true, true};  // -t 1:3
  options.local_ranks_filter = std::set<int>{0, 1};
  auto plan = make_plan(options, {});
  REQUIRE(plan);
  CHECK(plan->prefix_output);
  CHECK(plan->workers[0].to_file == gangrun::config::Streams{true, false});
  CHECK(plan->workers[0].to_console == gangrun::config::Streams{false, true});
  CHECK(plan->workers[1].to_file == gangrun::config::Streams{true, true});
  CHECK(plan->workers[1].to_console == gangrun::config::Streams{true, true});
  CHECK(plan->workers[2].to_console == gangrun::config::Streams{false, false});
  CHECK(worker_prefix(*plan, plan->workers[0], static_assignment(*plan, 0, "1")) == "[rank0]: ");
}

namespace {

using gangrun::test::TempDir;

gangrun::launch::NodeDevices cuda_node(const std::vector<std::string>& tokens) {
  gangrun::launch::NodeDevices node;
  node.kind = gangrun::accel::DeviceKind::cuda;
  node.view = gangrun::placement::NodeView{};
  node.view->kind = gangrun::accel::DeviceKind::cuda;
  node.view->variable = "CUDA_VISIBLE_DEVICES";
  for (std::size_t i = 0; i < tokens.size(); ++i) {
    gangrun::accel::Device device;
    device.index = static_cast<int>(i);
    device.uuid = "GPU-" + tokens[i];
    node.selected.push_back({device, tokens[i]});
  }
  node.view->visible = node.selected;
  return node;
}

std::vector<std::string> masks_of(const gangrun::launch::LaunchPlan& plan) {
  std::vector<std::string> masks;
  for (const auto& worker : plan.workers) {
    auto vars = worker_variables(plan, worker, static_assignment(plan, 0, "1"), "/run");
    auto it = vars.find("CUDA_VISIBLE_DEVICES");
    masks.push_back(it == vars.end() ? "(inherited)" : it->second);
  }
  return masks;
}

using Strings = std::vector<std::string>;

}  // namespace

TEST_CASE("launch::make_plan counts devices and gives each worker its mask", "[launch]") {
  Options options = job(1);
  options.nproc_per_node = ProcCount{ProcCount::Kind::gpu, 1};
  auto plan = make_plan(options, {}, cuda_node({"2", "0", "3"}));
  REQUIRE(plan);
  CHECK(plan->local_world_size == 3);
  CHECK(masks_of(*plan) == Strings{"(inherited)", "(inherited)", "(inherited)"});

  options.visible_devices = gangrun::config::VisibleDevices::per_rank;
  plan = make_plan(options, {}, cuda_node({"2", "0", "3"}));
  REQUIRE(plan);
  CHECK(masks_of(*plan) == Strings{"2", "0", "3"});

  options.mask_format = gangrun::config::MaskFormat::uuid;
  plan = make_plan(options, {}, cuda_node({"2", "0", "3"}));
  REQUIRE(plan);
  CHECK(masks_of(*plan) == Strings{"GPU-2", "GPU-0", "GPU-3"});

  options = job(4);
  options.visible_devices = gangrun::config::VisibleDevices::per_rank;
  options.devices_per_proc = 2;
  plan = make_plan(options, {}, cuda_node({"0", "1", "2", "3", "4", "5", "6", "7"}));
  REQUIRE(plan);
  CHECK(masks_of(*plan) == Strings{"0,1", "2,3", "4,5", "6,7"});

  options = job(3);
  options.visible_devices = gangrun::config::VisibleDevices::per_rank;
  options.devices_per_proc = 2;
  plan = make_plan(options, {}, cuda_node({"0", "1", "2", "3"}));
  REQUIRE_FALSE(plan);
  CHECK(plan.error().exit_code() == 2);
  CHECK_THAT(plan.error().message(), Catch::Matchers::Contains("need 6 devices, but 4"));
}

TEST_CASE("launch::make_plan: gpu with no device and auto without devices", "[launch]") {
  Options options = job(1);
  options.nproc_per_node = ProcCount{ProcCount::Kind::gpu, 1};
  auto node = cuda_node({});
  node.view->shaped_by = {{"CUDA_VISIBLE_DEVICES", ""}};
  auto plan = make_plan(options, {}, node);
  REQUIRE_FALSE(plan);
  CHECK_THAT(plan.error().message(),
             Catch::Matchers::Contains("no CUDA device is selected (CUDA_VISIBLE_DEVICES= hides"));

  options.nproc_per_node = ProcCount{ProcCount::Kind::automatic, 1};
  plan = make_plan(options, {}, node);
  REQUIRE(plan);
  CHECK(plan->local_world_size >= 1);  // CPUs
}

TEST_CASE("launch::make_plan keeps Level Zero masks in driver order", "[launch]") {
  Options options = job(1);
  options.gpu_ids = std::vector<int>{1, 0};
  auto node = cuda_node({"1", "0"});
  node.selected[0].device.index = 1;
  node.selected[1].device.index = 0;
  node.view->variable = "ZE_AFFINITY_MASK";
  node.view->keeps_driver_order = true;
  auto plan = make_plan(options, {}, node);
  REQUIRE_FALSE(plan);
  CHECK_THAT(plan.error().message(), Catch::Matchers::Contains("cannot reorder devices"));
  options.visible_devices = gangrun::config::VisibleDevices::per_rank;
  options.nproc_per_node = ProcCount{ProcCount::Kind::number, 2};
  CHECK(make_plan(options, {}, node));  // one device each: nothing to reorder
}

TEST_CASE("launch::make_plan names the missing GPU kinds for --nproc_per_node gpu", "[launch]") {
  Options options = job(1);
  options.nproc_per_node = ProcCount{ProcCount::Kind::gpu, 1};
  gangrun::launch::NodeDevices none;  // --accelerator auto found no GPU: the launch is on CPUs
  none.kind = gangrun::accel::DeviceKind::cpu;
  none.gpus_not_found = {"CUDA: libcuda.so.1 not found",
                         "AMD ROCm: no AMD GPU driver: /sys/class/kfd does not exist"};
  auto plan = make_plan(options, {}, none);
  REQUIRE_FALSE(plan);
  CHECK(plan.error().exit_code() == 2);
  CHECK(plan.error().message() ==
        "--nproc_per_node gpu: no GPU found (CUDA: libcuda.so.1 not found; AMD ROCm: no AMD GPU "
        "driver: /sys/class/kfd does not exist); give the number of workers, or see gangrun "
        "devices");
  CHECK_THAT(plan.error().message(), !Catch::Matchers::Contains("cpu device"));
  none.gpus_not_found.clear();  // --accelerator cpu probes nothing
  CHECK_THAT(make_plan(options, {}, none).error().message(),
             Catch::Matchers::StartsWith(
                 "--nproc_per_node gpu: no GPU found (--accelerator cpu looks for none)"));

  options.nproc_per_node = ProcCount{ProcCount::Kind::xpu, 1};
  gangrun::launch::NodeDevices xpu = cuda_node({});
  xpu.kind = gangrun::accel::DeviceKind::xpu;
  xpu.why_none = "libze_loader.so.1: cannot open shared object file";
  plan = make_plan(options, {}, xpu);
  REQUIRE_FALSE(plan);
  CHECK_THAT(plan.error().message(),
             Catch::Matchers::StartsWith("--nproc_per_node xpu: no Intel XPU device is selected "
                                         "(libze_loader.so.1: cannot open"));
}

TEST_CASE("launch::check_process_capacity counts two processes per worker", "[launch]") {
  using gangrun::launch::check_process_capacity;
  using gangrun::launch::ProcessCapacity;
  ProcessCapacity unlimited;
  CHECK(check_process_capacity(500000, "--nproc_per_node 500000", unlimited));

  ProcessCapacity pid_max{.pid_max = 1'000'000, .tasks_in_use = 300};
  // 2 * 499900 + 32, with 300 in use, > 1000000
  auto refused = check_process_capacity(499'900, "--nproc_per_node 499900", pid_max);
  REQUIRE_FALSE(refused);
  CHECK(refused.error().exit_code() == 2);
  CHECK(refused.error().message() ==
        "--nproc_per_node 499900: 499900 workers need about 999832 processes (2 each: the worker "
        "and the shim that supervises it, plus 32 for gangrun), but kernel.pid_max is 1000000 "
        "(300 in use now); give fewer workers per node, or raise it with sysctl kernel.pid_max");
  CHECK(check_process_capacity(499'800, "n", ProcessCapacity{.pid_max = 1'000'000}));
  CHECK_FALSE(check_process_capacity(499'990, "n", ProcessCapacity{.pid_max = 1'000'000}));

  auto rlimit = check_process_capacity(100, "--nproc_per_node 100", {.rlimit_nproc = 200});
  REQUIRE_FALSE(rlimit);
  CHECK_THAT(rlimit.error().message(),
             Catch::Matchers::Contains("(ulimit -u, RLIMIT_NPROC) is 200; give fewer workers per "
                                       "node, or raise it with ulimit -u"));
  CHECK(check_process_capacity(84, "n", {.rlimit_nproc = 200}));

  auto threads = check_process_capacity(1000, "n", {.threads_max = 1500});
  REQUIRE_FALSE(threads);
  CHECK_THAT(threads.error().message(), Catch::Matchers::Contains("kernel.threads-max is 1500"));

  ProcessCapacity cgroup{.cgroup_pids_max = 100, .cgroup_pids_current = 10, .cgroup = "/job"};
  auto pids = check_process_capacity(30, "--num_gpus 30", cgroup);
  REQUIRE_FALSE(pids);
  CHECK_THAT(pids.error().message(),
             Catch::Matchers::Contains("but the cgroup /job allows 100 processes (pids.max; 10 in "
                                       "use now); give fewer workers per node, or raise its "
                                       "pids.max"));
  CHECK(check_process_capacity(29, "n", cgroup));
}

TEST_CASE("launch::make_plan checks the worker count before building workers", "[launch]") {
  Options options = job(500000);
  options.origins["nproc_per_node"] = {"500000", gangrun::config::Source::command_line};
  gangrun::launch::ProcessCapacity small{.pid_max = 32768, .tasks_in_use = 100};
  auto plan = make_plan(options, {}, std::nullopt, small);
  REQUIRE_FALSE(plan);
  CHECK_THAT(plan.error().message(),
             Catch::Matchers::StartsWith("--nproc_per_node 500000: 500000 workers need about "
                                         "1000032 processes"));

  // The world size must fit the RANK and WORLD_SIZE integers.
  options = job(2);
  options.nnodes = 2'000'000'000;
  plan = make_plan(options, {}, std::nullopt, gangrun::launch::ProcessCapacity{});
  REQUIRE_FALSE(plan);
  CHECK_THAT(plan.error().message(),
             Catch::Matchers::Contains("2 workers per node on 2000000000 nodes is more than "
                                       "2147483647 ranks"));
}

namespace {}  // namespace

TEST_CASE("launch::check_report_path finds an unwritable report before the run", "[launch]") {
  using gangrun::launch::check_report_path;
  TempDir dir;
  CHECK(check_report_path(dir / "report.json"));
  std::ofstream(dir / "existing.json") << "{}";
  CHECK(check_report_path(dir / "existing.json"));

  auto missing = check_report_path(dir / "no-such-dir/report.json");
  REQUIRE_FALSE(missing);
  CHECK(missing.error().exit_code() == 2);
  CHECK(missing.error().message() ==
        "--report " + (dir / "no-such-dir/report.json") + ": the directory " +
            (dir / "no-such-dir") +
            " does not exist; create it first, or give a file in an existing directory");

  auto directory = check_report_path(dir / "");
  REQUIRE_FALSE(directory);
  CHECK_THAT(directory.error().message(), Catch::Matchers::Contains(": is a directory; give"));

  auto under_file = check_report_path(dir / "existing.json/report.json");
  REQUIRE_FALSE(under_file);
  CHECK_THAT(under_file.error().message(), Catch::Matchers::Contains("Not a directory"));
}

TEST_CASE("launch::check_writable_directory walks up to what exists", "[launch]") {
  using gangrun::launch::check_writable_directory;
  TempDir dir;
  CHECK(check_writable_directory(dir / "a/b/c", "--log_dir x", "fix"));
  std::ofstream(dir / "file") << "x";
  auto file = check_writable_directory(dir / "file/run", "--log_dir " + (dir / "file"),
                                       "give a directory you may write");
  REQUIRE_FALSE(file);
  CHECK(file.error().message() == "--log_dir " + (dir / "file") + ": " + (dir / "file") +
                                      " is not a directory; give a directory you may write");
  if (::geteuid() != 0) {  // root may write anywhere on a writable file system
    std::filesystem::create_directory(dir / "locked");
    std::filesystem::permissions(
        dir / "locked", std::filesystem::perms::owner_read | std::filesystem::perms::owner_exec);
    auto locked = check_writable_directory(dir / "locked/logs", "--log_dir y", "fix");
    REQUIRE_FALSE(locked);
    CHECK_THAT(locked.error().message(), Catch::Matchers::Contains("cannot write in"));
    std::filesystem::permissions(dir / "locked", std::filesystem::perms::owner_all);
  }
}
