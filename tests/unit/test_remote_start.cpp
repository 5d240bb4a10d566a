// The table of remote starts: which way a launch takes, in which order the
// ways are asked, and the one call that runs the way that applies.
#include "config_test_support.hpp"
#include "remote/remote_start.hpp"

#include <catch2/catch.hpp>

#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <sstream>

namespace {

using Catch::Matchers::Contains;
using Catch::Matchers::StartsWith;
using gangrun::EnvMap;
using gangrun::config::Options;
using gangrun::config::test::launch;
using gangrun::remote::RemoteStart;

using Words = std::vector<std::string>;

EnvMap allocation_env(int nodes) {
  return {{"PATH", "/usr/bin:/bin"},
          {"SLURM_JOB_ID", "12"},
          {"SLURM_JOB_NUM_NODES", std::to_string(nodes)},
          {"SLURM_JOB_NODELIST", "n[1-" + std::to_string(nodes) + "]"}};
}

// A hostfile of two other hosts, removed at the end of the test.
struct TwoHosts {
  std::filesystem::path dir = std::filesystem::temp_directory_path() /
                              ("gangrun-remote-start-" + std::to_string(::getpid()));
  std::string path = (dir / "hostfile").string();
  TwoHosts() {
    std::filesystem::create_directories(dir);
    std::ofstream(path) << "node1 slots=2\nnode2 slots=2\n";
  }
  ~TwoHosts() { std::filesystem::remove_all(dir); }
};

// The name of the way options take; "" for none.
std::string way_of(const Options& options) {
  auto start = gangrun::remote::remote_start_for(options);
  if (!start) FAIL(start.error().message());
  return *start ? std::string((*start)->name) : "";
}

}  // namespace

TEST_CASE("remote starts: one table, asked in order, every row complete", "[remote]") {
  Words names;
  for (const RemoteStart& start : gangrun::remote::remote_starts()) {
    names.emplace_back(start.name);
    CHECK(start.applies != nullptr);
    CHECK(start.dry_run != nullptr);
    CHECK(start.run != nullptr);
  }
  CHECK(names == Words{"srun", "ssh", "mpirun"});
}

TEST_CASE("remote starts: the first way that applies is the one", "[remote]") {
  TwoHosts hosts;
  CHECK(way_of(launch({"train.py"})).empty());
  CHECK(way_of(launch({"train.py"}, allocation_env(3))) == "srun");
  CHECK(way_of(launch({"-H", hosts.path, "train.py"})) == "ssh");
  CHECK(way_of(launch({"--launcher", "openmpi", "-H", hosts.path, "train.py"})) == "mpirun");
  // In a Slurm job a hostfile alone could mean either: srun declines (the
  // hostfile gives nodes), ssh refuses.
  auto both = gangrun::remote::remote_start_for(
      launch({"--node_rank", "0", "-H", hosts.path, "train.py"}, allocation_env(3)));
  REQUIRE_FALSE(both);
  CHECK_THAT(both.error().message(), Contains("--launcher ssh to use the hostfile"));
}

TEST_CASE("remote starts: preflight starts itself through srun and ssh, not mpirun", "[remote]") {
  for (const RemoteStart& start : gangrun::remote::remote_starts()) {
    CHECK(start.runs_preflight == (start.name != "mpirun"));
  }
}

TEST_CASE("remote starts: one call runs the way that applies, or none", "[remote]") {
  std::ostringstream out;
  Words local = {"--no_python", "true"};
  auto none = gangrun::remote::start_remotely(launch(local), local, {}, out);
  REQUIRE(none);
  CHECK_FALSE(*none);
  CHECK(out.str().empty());

  Words dry = {"--dry-run", "--no_python", "true"};
  auto printed =
      gangrun::remote::start_remotely(launch(dry, allocation_env(2)), dry, allocation_env(2), out);
  REQUIRE(printed);
  CHECK(*printed == 0);
  CHECK_THAT(out.str(), StartsWith("gangrun dry run: in this Slurm allocation"));
  CHECK_THAT(out.str(), Contains("gangrun --dry-run --no_python true"));

  SECTION("a program no node could run is refused here, before any tool starts") {
    Words missing = {"--dry-run", "no-such-script.py"};
    auto refused = gangrun::remote::start_remotely(launch(missing, allocation_env(2)), missing,
                                                   allocation_env(2), out);
    CHECK_FALSE(refused);
  }
}
