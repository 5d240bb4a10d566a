// deepspeed's hostfile and its filters, with deepspeed's meaning
// (deepspeed/launcher/runner.py: _parse_hostfile, parse_resource_filter,
// apply_num_nodes_and_gpus), and how a hostfile sets the launch options.
#include "config/deepspeed/deepspeed_env_file.hpp"
#include "config/hosts/hostfile.hpp"
#include "config/hosts/hosts_values.hpp"
#include "config_test_support.hpp"

#include <catch2/catch.hpp>

#include <sys/stat.h>

#include <filesystem>
#include <fstream>

namespace {

using Catch::Matchers::Contains;
using Catch::Matchers::Equals;
using Catch::Matchers::StartsWith;
using gangrun::config::filter_hosts;
using gangrun::config::HostfileEntry;
using gangrun::config::HostSlots;
using gangrun::config::limit_hosts;
using gangrun::config::Options;
using gangrun::config::parse_hostfile;
using gangrun::config::test::launch;
using gangrun::config::test::usage_error;

std::vector<HostfileEntry> three_hosts() {
  return *parse_hostfile("worker-0 slots=2\nworker-1 slots=4\nworker-2 slots=1\n", "hf");
}

std::string parse_error(std::string_view text) {
  auto parsed = parse_hostfile(text, "hf");
  REQUIRE_FALSE(parsed);
  return parsed.error().message();
}

std::string filter_error(const std::optional<std::string>& include,
                         const std::optional<std::string>& exclude) {
  auto filtered = filter_hosts(three_hosts(), include, exclude);
  REQUIRE_FALSE(filtered);
  return filtered.error().message();
}

// A hostfile in a fresh temporary directory, removed at the end.
struct TempHostfile {
  std::filesystem::path dir;
  std::string path;
  explicit TempHostfile(const std::string& text) {
    dir = std::filesystem::temp_directory_path() /
          ("gangrun-hostfile-" + std::to_string(::getpid()) + "-" + std::to_string(counter()++));
    std::filesystem::create_directories(dir);
    path = (dir / "hostfile").string();
    std::ofstream(path) << text;
  }
  ~TempHostfile() { std::filesystem::remove_all(dir); }
  static int& counter() {
    static int value = 0;
    return value;
  }
};

}  // namespace

TEST_CASE("hostfile: host slots=N lines, comments and blank lines, order kept", "[hostfile]") {
  auto entries = parse_hostfile("# cluster\n\n  node-b slots=8  \nnode-a\tslots=2 # gpus\n", "hf");
  REQUIRE(entries);
  CHECK(*entries == std::vector<HostfileEntry>{{"node-b", 8, 3}, {"node-a", 2, 4}});
}

TEST_CASE("hostfile: bad lines, duplicates and empty files name file:line", "[hostfile]") {
  CHECK_THAT(parse_error("a slots=1\nb slots=x\n"), Contains("hf:2:") && Contains("'b slots=x'"));
  CHECK_THAT(parse_error("a slots=1\nb\n"), Contains("hf:2:"));
  CHECK_THAT(parse_error("a slots=1\n# x\na slots=2\n"),
             Contains("hf:3:") && Contains("already named on line 1"));
  CHECK_THAT(parse_error("# only a comment\n\n"), Contains("names no host"));
  CHECK_THAT(parse_error("a slots= 2\n"), Contains("hf:1:"));
}

TEST_CASE("hostfile: reading a missing file names it", "[hostfile]") {
  auto read = gangrun::config::read_hostfile("/nonexistent/dir/hostfile");
  REQUIRE_FALSE(read);
  CHECK_THAT(read.error().message(), Contains("/nonexistent/dir/hostfile"));
}

TEST_CASE("hostfile: no filter keeps every slot of every host", "[hostfile]") {
  auto hosts = filter_hosts(three_hosts(), std::nullopt, std::nullopt);
  REQUIRE(hosts);
  CHECK(*hosts == std::vector<HostSlots>{
                      {"worker-0", {0, 1}}, {"worker-1", {0, 1, 2, 3}}, {"worker-2", {0}}});
}

TEST_CASE("hostfile: --include takes hosts and slots, in hostfile order", "[hostfile]") {
  auto hosts = filter_hosts(three_hosts(), "worker-2@worker-1:3,1,1", std::nullopt);
  REQUIRE(hosts);
  CHECK(*hosts == std::vector<HostSlots>{{"worker-1", {1, 3}}, {"worker-2", {0}}});
}

TEST_CASE("hostfile: --exclude drops slots, and hosts left without any", "[hostfile]") {
  auto hosts = filter_hosts(three_hosts(), std::nullopt, "worker-1:0,2@worker-2");
  REQUIRE(hosts);
  CHECK(*hosts == std::vector<HostSlots>{{"worker-0", {0, 1}}, {"worker-1", {1, 3}}});
  auto whole = filter_hosts(three_hosts(), std::nullopt, "worker-0:0,1");
  REQUIRE(whole);
  CHECK(whole->front().host == "worker-1");
}

TEST_CASE("hostfile: filter errors as deepspeed's", "[hostfile]") {
  CHECK_THAT(filter_error("worker-9", std::nullopt), Contains("'worker-9' is not in the hostfile"));
  CHECK_THAT(filter_error("worker-0:2", std::nullopt), Contains("has no slot 2"));
  CHECK_THAT(filter_error(std::nullopt, "worker-0:x"), Contains("'x' is not a slot"));
  CHECK_THAT(filter_error("worker-0", "worker-1"), Contains("cannot be combined"));
  CHECK_THAT(filter_error(std::nullopt, "worker-0@worker-1@worker-2"), Contains("no host"));
}

TEST_CASE("hostfile: --num_nodes takes the first hosts, --num_gpus slots 0..N-1", "[hostfile]") {
  auto all = *filter_hosts(three_hosts(), std::nullopt, std::nullopt);
  auto limited = limit_hosts(all, 2, 3);
  REQUIRE(limited);
  CHECK(*limited == std::vector<HostSlots>{{"worker-0", {0, 1, 2}}, {"worker-1", {0, 1, 2}}});
  auto too_many = limit_hosts(all, 4, std::nullopt);
  REQUIRE_FALSE(too_many);
  CHECK_THAT(too_many.error().message(), Contains("--num_nodes 4"));
}

TEST_CASE("hostfile: -H chooses the ssh launcher and one node per host", "[hostfile]") {
  TempHostfile file("node1 slots=2\nnode2 slots=2\nnode3 slots=1\n");
  Options options = launch({"-H", file.path, "--exclude", "node2", "train.py"});
  CHECK(options.launcher == Options::Launcher::ssh);
  CHECK(options.nnodes == 2);
  CHECK(options.hosts.hosts == std::vector<HostSlots>{{"node1", {0, 1}}, {"node3", {0}}});
  Options first = launch({"--hostfile", file.path, "--num_nodes", "1", "--ssh_port", "2222",
                          "--launcher", "pdsh", "train.py"});
  CHECK(first.hosts.hosts == std::vector<HostSlots>{{"node1", {0, 1}}});
  CHECK(first.hosts.ssh_port == 2222);
  CHECK(first.launcher == Options::Launcher::ssh);
}

TEST_CASE("hostfile: only this host runs here with its slots as workers", "[hostfile]") {
  TempHostfile file("localhost slots=3\n");
  Options options = launch({"-H", file.path, "--exclude", "localhost:1", "train.py"});
  CHECK(options.launcher == Options::Launcher::automatic);
  CHECK(options.hosts.hosts.empty());
  REQUIRE(options.nproc_per_node);
  CHECK(options.nproc_per_node->number == 2);
  CHECK(options.include == "localhost:0,2");
}

TEST_CASE("hostfile: --force_multi starts this host alone over ssh too", "[hostfile]") {
  TempHostfile file("localhost slots=2\n");
  Options options = launch({"-H", file.path, "--force_multi", "train.py"});
  CHECK(options.launcher == Options::Launcher::ssh);
  CHECK(options.hosts.hosts == std::vector<HostSlots>{{"localhost", {0, 1}}});
}

TEST_CASE("hostfile: the typer returns what the hosts add, and changes nothing", "[hostfile]") {
  using gangrun::config::HostsAdditions;
  using gangrun::config::type_hosts_values;
  TempHostfile file("node1 slots=2\nnode2 slots=1\n");
  Options options;
  options.hosts.hostfile = file.path;
  auto added = type_hosts_values({}, options);
  REQUIRE(added);
  CHECK(added->hosts == std::vector<HostSlots>{{"node1", {0, 1}}, {"node2", {0}}});
  CHECK_FALSE(added->run_here);
  CHECK(added->start_hosts ==
        HostsAdditions::StartHosts{.launcher = Options::Launcher::ssh, .nnodes = 2});
  CHECK(options.launcher == Options::Launcher::automatic);
  CHECK(options.nnodes == 1);
  CHECK(options.hosts.hosts.empty());

  TempHostfile here("localhost slots=3\n");
  options.hosts.hostfile = here.path;
  auto run_here = type_hosts_values({}, options);
  REQUIRE(run_here);
  CHECK(run_here->hosts.empty());
  CHECK_FALSE(run_here->start_hosts);
  REQUIRE(run_here->run_here);
  CHECK(run_here->run_here->nproc_per_node.number == 3);
  CHECK_FALSE(options.nproc_per_node);

  // Without a hostfile, nothing.
  auto none = type_hosts_values({}, Options{});
  REQUIRE(none);
  CHECK(*none == HostsAdditions{});
}

TEST_CASE("hostfile: refused combinations", "[hostfile]") {
  TempHostfile file("node1 slots=2\nnode2 slots=2\n");
  CHECK_THAT(usage_error({"-H", file.path, "--launcher", "local", "train.py"}),
             Contains("--launcher local"));
  CHECK_THAT(usage_error({"-H", file.path, "--num_gpus", "1", "--include", "node1", "train.py"}),
             Contains("cannot be combined"));
  CHECK_THAT(usage_error({"--launcher", "ssh", "train.py"}), Contains("-H/--hostfile"));
  CHECK_THAT(usage_error({"--launcher", "mpich", "train.py"}), Contains("--launcher ssh"));
  CHECK_THAT(usage_error({"-H", file.path, "--ssh_port", "70000", "train.py"}), Contains("70000"));
}

// ---- what a hostfile cannot make gangrun do: hang, eat memory, take long

namespace {

std::string read_error(const std::string& path) {
  auto read = gangrun::config::read_hostfile(path);
  REQUIRE_FALSE(read);
  CHECK(read.error().code() == gangrun::ErrorCode::usage);
  return read.error().message();
}

// "node-000000 slots=8\n" ... for `count` hosts.
std::string many_hosts(int count) {
  std::string text;
  for (int i = 0; i < count; ++i) text += "node-" + std::to_string(i) + " slots=8\n";
  return text;
}

}  // namespace

TEST_CASE("hostfile: a FIFO is refused at once, not waited on for a writer", "[hostfile]") {
  TempHostfile file("");
  std::string fifo = (file.dir / "fifo").string();
  REQUIRE(::mkfifo(fifo.c_str(), 0600) == 0);
  CHECK(read_error(fifo) == fifo +
                                ": cannot read the hostfile: it is a FIFO (named pipe); "
                                "-H/--hostfile reads 'HOST slots=N' lines from a regular file");
}

TEST_CASE("hostfile: /dev/zero and a directory are refused by their type", "[hostfile]") {
  CHECK_THAT(read_error("/dev/zero"),
             StartsWith("/dev/zero: cannot read the hostfile: it is a character device"));
  TempHostfile file("");
  CHECK_THAT(read_error(file.dir.string()), Contains("it is a directory"));
}

TEST_CASE("hostfile: a file over the limit is refused, one at the limit is read", "[hostfile]") {
  const std::size_t limit = gangrun::config::k_max_hostfile_bytes;
  const std::string host = "node slots=1\n";
  TempHostfile over(host + std::string(limit + 1 - host.size(), '#'));
  CHECK(read_error(over.path) ==
        over.path +
            ": cannot read the hostfile: it is larger than 16384 KiB; a hostfile has one "
            "short line per host");
  TempHostfile at(host + std::string(limit - host.size(), '#'));
  auto read = gangrun::config::read_hostfile(at.path);
  REQUIRE(read);
  CHECK(read->size() == 1);
}

TEST_CASE("hostfile: 100,000 hosts parse in order, a duplicate among them is found", "[hostfile]") {
  const std::string text = many_hosts(100'000);
  auto entries = parse_hostfile(text, "hf");
  REQUIRE(entries);
  REQUIRE(entries->size() == 100'000);
  CHECK(entries->front() == HostfileEntry{"node-0", 8, 1});
  CHECK(entries->back() == HostfileEntry{"node-99999", 8, 100'000});
  CHECK_THAT(parse_error(text + "node-4711 slots=2\n"),
             Equals("hf:100001: host 'node-4711' is already named on line 4712 (deepspeed "
                    "refuses a host named twice)"));
}

TEST_CASE("hostfile: more slots in all than any job has are refused", "[hostfile]") {
  std::string text;
  for (int i = 0; i < 3; ++i) text += "n" + std::to_string(i) + " slots=9999999\n";
  CHECK_THAT(parse_error(text), StartsWith("hf:1: the hostfile gives more than 1048576 slots"));
  CHECK(parse_hostfile("a slots=1048576\n", "hf"));
  std::vector<HostSlots> two = {{"a", {0}}, {"b", {0}}};
  auto huge = limit_hosts(two, std::nullopt, 1'000'000'000);
  REQUIRE_FALSE(huge);
  CHECK(huge.error().message() ==
        "--num_gpus 1000000000 on each of 2 host(s) is more than 1048576 workers in all");
  CHECK(limit_hosts(two, std::nullopt, 524'288));
}

TEST_CASE("hostfile: a NUL or another control character in a line is refused", "[hostfile]") {
  using namespace std::string_literals;
  CHECK(parse_error("a slots=1\nb\0.evil slots=1\n"s) ==
        "hf:2: the line contains a NUL character; a hostfile is text, 'HOST slots=N' per line");
  CHECK_THAT(parse_error("a\x1b[2J slots=1\n"), StartsWith("hf:1: the line contains a control "
                                                           "character (byte 27)"));
  // Tabs and carriage returns are blanks, as deepspeed's \\s reads them.
  CHECK(parse_hostfile("a\tslots=1\r\n", "hf"));
  // A comment may say anything.
  CHECK(parse_hostfile("# \0\x01\na slots=1\n"s, "hf"));
}

TEST_CASE("hostfile: a host name that ssh would take for an option is refused", "[hostfile]") {
  CHECK_THAT(parse_error("-oProxyCommand=x slots=1\n"),
             StartsWith("hf:1: host '-oProxyCommand=x' starts with '-'"));
}

TEST_CASE("hostfile: .deepspeed_env refuses a NUL and skips what is not a regular file",
          "[hostfile][deepspeed]") {
  using namespace std::string_literals;
  auto nul = gangrun::config::parse_deepspeed_env("A=1\nNCCL_SOCKET_IFNAME=eth0\0x\n"s, "env");
  REQUIRE_FALSE(nul);
  CHECK(nul.error().code() == gangrun::ErrorCode::usage);
  CHECK_THAT(nul.error().message(),
             StartsWith("env:2: key \"NCCL_SOCKET_IFNAME\": the value contains a NUL character"));
  CHECK_THAT(gangrun::config::parse_deepspeed_env("A\0B=1\n"s, "env").error().message(),
             StartsWith("env:1: key \"A\\0B\": the name contains a NUL character"));

  TempHostfile file("A=1\nB=x\0y\n"s);
  gangrun::EnvMap env = {{"DS_ENV_FILE", file.path}};
  auto read = gangrun::config::read_deepspeed_env_files(env, "/");
  REQUIRE_FALSE(read);
  CHECK_THAT(read.error().message(), StartsWith(file.path + ":2: key \"B\""));

  // deepspeed's os.path.isfile skips a FIFO; so does gangrun, without blocking on it.
  std::string fifo = (file.dir / "fifo").string();
  REQUIRE(::mkfifo(fifo.c_str(), 0600) == 0);
  env["DS_ENV_FILE"] = fifo;
  auto skipped = gangrun::config::read_deepspeed_env_files(env, "/");
  REQUIRE(skipped);
  CHECK(skipped->empty());
}
