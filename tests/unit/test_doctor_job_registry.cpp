// `gangrun stacks` finds a running job, and the hang report which ranks reached the store: the
// registry file an agent keeps while it runs (gone with it, and ignored once its process is gone),
// its workers as the agent's grandchildren that carry a RANK, and the words of the subcommand.
#include "config/cli.hpp"
#include "doctor/job_registry.hpp"
#include "doctor/store_peers.hpp"
#include "temp_dir.hpp"

#include <catch2/catch.hpp>

#include <sys/wait.h>
#include <unistd.h>

#include <csignal>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iterator>

using namespace gangrun::doctor;
using Catch::Matchers::Contains;
using gangrun::test::TempDir;

namespace {

gangrun::Expected<gangrun::config::Command> parse(std::vector<const char*> words) {
  words.insert(words.begin(), "gangrun");
  return gangrun::config::parse_command_line(static_cast<int>(words.size()), words.data(), {});
}

}  // namespace

TEST_CASE("a registered job is found while it runs and forgotten when it ends", "[doctor]") {
  TempDir dir;
  gangrun::EnvMap env{{"XDG_RUNTIME_DIR", dir.path()}};
  CHECK(running_jobs(env).empty());
  {
    RegisteredJob me{.pid = ::getpid(),
                     .start_ticks = process_start_ticks(::getpid()).value(),
                     .run_id = "job7",
                     .host = "node0",
                     .log_dir = "/logs/job7_x",
                     .program = "train.py",
                     .interpreter = "/venv/bin/python"};
    auto registered = Registration::create(env, me);
    REQUIRE(registered);
    CHECK(std::filesystem::exists(dir / "gangrun"));
    std::vector<RegisteredJob> jobs = running_jobs(env);
    REQUIRE(jobs.size() == 1);
    CHECK(jobs[0].run_id == "job7");
    CHECK(jobs[0].log_dir == "/logs/job7_x");
    CHECK(jobs[0].interpreter == "/venv/bin/python");
    // A file left by an agent that was killed: its process is not the one
    // that wrote it (another start time), so it is not a running job.
    me.start_ticks += 1;
    me.run_id = "stale";
    dir.write("gangrun/1.json", "{\"pid\": " + std::to_string(::getpid()) +
                                    ", \"start_ticks\": " + std::to_string(me.start_ticks) +
                                    ", \"run_id\": \"stale\", \"host\": \"h\", \"log_dir\": null, "
                                    "\"program\": \"p\", \"interpreter\": null}\n");
    dir.write("gangrun/2.json", "not json");
    CHECK(running_jobs(env).size() == 1);
  }
  CHECK(running_jobs(env).empty());
}

TEST_CASE("registering removes the files of agents that are gone, and holds no secret",
          "[doctor]") {
  TempDir dir;
  gangrun::EnvMap env{{"XDG_RUNTIME_DIR", dir.path()}};
  // A child that has exited: its pid names no running process of its start time.
  pid_t child = ::fork();
  if (child == 0) ::_exit(0);
  REQUIRE(child > 0);
  ::waitpid(child, nullptr, 0);
  std::string gone = std::to_string(child);
  dir.write("gangrun/" + gone + ".json",
            "{\"pid\": " + gone +
                ", \"start_ticks\": 1, \"run_id\": \"stale\", \"host\": \"h\", \"log_dir\": null, "
                "\"program\": \"p\", \"interpreter\": null}\n");
  dir.write("gangrun/" + gone + ".json.partial", "{");
  dir.write("gangrun/" + gone + ".status.json", "{}");
  dir.write("gangrun/" + gone + ".wanted", "");
  dir.write("gangrun/notes.txt", "kept: not an agent's file");
  RegisteredJob me{.pid = ::getpid(),
                   .start_ticks = process_start_ticks(::getpid()).value(),
                   .run_id = "job8",
                   .host = "node0",
                   .log_dir = std::nullopt,
                   .program = "train.py",
                   .interpreter = std::nullopt,
                   .nodes = RegisteredJob::Nodes{
                       .store_host = "127.0.0.1", .store_port = 29500, .stacks_key = "k"}};
  auto registered = Registration::create(env, me);
  REQUIRE(registered);
  std::filesystem::path registry = dir.path() / "gangrun";
  CHECK_FALSE(std::filesystem::exists(registry / (gone + ".json")));
  CHECK_FALSE(std::filesystem::exists(registry / (gone + ".json.partial")));
  CHECK_FALSE(std::filesystem::exists(registry / (gone + ".status.json")));
  CHECK_FALSE(std::filesystem::exists(registry / (gone + ".wanted")));
  CHECK(std::filesystem::exists(registry / "notes.txt"));
  std::vector<RegisteredJob> jobs = running_jobs(env);
  REQUIRE(jobs.size() == 1);
  REQUIRE(jobs[0].nodes);
  CHECK(jobs[0].nodes->stacks_key == "k");
}

TEST_CASE("a job's workers are the agent's grandchildren with a RANK", "[doctor]") {
  // This process stands for the agent, a shell for the shim, and a sleep with
  // RANK=5 for the worker; a sleep without RANK is not a worker.
  int ready[2];
  REQUIRE(::pipe(ready) == 0);
  pid_t shim = ::fork();
  REQUIRE(shim >= 0);
  if (shim == 0) {
    ::setpgid(0, 0);
    ::dup2(ready[1], STDOUT_FILENO);
    // The worker says it is up once it runs with its RANK, and execs nothing after: while a
    // process execs, /proc shows its new environment empty for a moment.
    ::execl("/bin/sh", "sh", "-c", "RANK=5 sh -c 'sleep 60 & echo up; wait' & sleep 60 & wait",
            nullptr);
    ::_exit(127);
  }
  ::close(ready[1]);
  char line[8] = {};
  REQUIRE(::read(ready[0], line, sizeof line) > 0);
  ::close(ready[0]);
  std::vector<JobWorker> workers = job_workers(::getpid());
  ::kill(-shim, SIGKILL);
  ::waitpid(shim, nullptr, 0);
  REQUIRE(workers.size() == 1);
  CHECK(workers[0].rank == 5);
}

TEST_CASE("gangrun stacks: which job, and how to print it", "[doctor][cli]") {
  auto asked = parse({"stacks", "--pid", "12", "--native", "--json"});
  REQUIRE(asked);
  const auto& request = std::get<gangrun::config::StacksRequest>(*asked);
  CHECK(request.pid == 12);
  CHECK(request.native);
  CHECK(request.json);
  auto by_dir = parse({"stacks", "--log_dir=/logs"});
  REQUIRE(by_dir);
  CHECK(std::get<gangrun::config::StacksRequest>(*by_dir).log_dir == "/logs");
  CHECK(std::holds_alternative<gangrun::config::TextOutput>(parse({"stacks", "--help"}).value()));
  auto two = parse({"stacks", "--pid", "12", "--run-id", "x"});
  REQUIRE_FALSE(two);
  CHECK_THAT(two.error().message(), Contains("give one of --run-id, --pid and --log-dir"));
  CHECK_THAT(parse({"stacks", "--pid", "twelve"}).error().message(), Contains("not a process id"));
  CHECK_THAT(parse({"stacks", "--frobnicate"}).error().message(), Contains("unknown argument"));
  CHECK_THAT(parse({"stacks", "--run-id"}).error().message(), Contains("needs a value"));
}

TEST_CASE("a worker has reached the store when it holds a connection to the store's port",
          "[doctor]") {
  // A /proc of two workers in one network namespace: 41 holds the socket of
  // an established connection to port 29500 (0x733C), 42 only a listening
  // socket and a connection elsewhere.
  TempDir proc;
  const std::string table =
      "  sl  local_address rem_address   st tx_queue rx_queue tr tm->when retrnsmt   uid  "
      "timeout inode\n"
      "   0: 0100007F:C350 0100007F:733C 01 00000000:00000000 00:00000000 00000000  1000  0 "
      "7001 1 0 20 4 30 10 -1\n"
      "   1: 00000000:733C 00000000:0000 0A 00000000:00000000 00:00000000 00000000  1000  0 "
      "7002 1 0 100 0 0 10 0\n"
      "   2: 0100007F:C351 0100007F:0050 01 00000000:00000000 00:00000000 00000000  1000  0 "
      "7003 1 0 20 4 30 10 -1\n";
  for (const char* pid : {"41", "42"}) {
    proc.write(std::string(pid) + "/net/tcp", table);
    proc.write(std::string(pid) + "/net/tcp6", "  sl  local_address rem_address   st\n");
    std::filesystem::create_directories(proc / (std::string(pid) + "/fd"));
  }
  std::filesystem::create_symlink("socket:[7001]", proc / "41/fd/5");
  std::filesystem::create_symlink("/dev/null", proc / "41/fd/0");
  std::filesystem::create_symlink("socket:[7002]", proc / "42/fd/5");
  std::filesystem::create_symlink("socket:[7003]", proc / "42/fd/6");
  CHECK(connected_to_port({41, 42}, 29500, proc.path()) == std::set<long>{41});
  CHECK(connected_to_port({41, 42}, 80, proc.path()) == std::set<long>{42});
  CHECK(connected_to_port({43}, 29500, proc.path()).empty());  // gone
}

TEST_CASE(
    "a registered agent writes its snapshot only while top wants it, and both files go with it",
    "[doctor]") {
  TempDir dir;
  gangrun::EnvMap env{{"XDG_RUNTIME_DIR", dir.path()}};
  RegisteredJob me{.pid = ::getpid(),
                   .start_ticks = process_start_ticks(::getpid()).value(),
                   .run_id = "job9",
                   .host = "node0",
                   .program = "train.py"};
  EntryFiles files = entry_files((dir.path() / "gangrun").string(), ::getpid());
  {
    auto registered = Registration::create(env, me);
    REQUIRE(registered);
    CHECK(files.entry ==
          (dir.path() / "gangrun" / (std::to_string(::getpid()) + ".json")).string());
    CHECK_FALSE(registered->status_wanted());
    REQUIRE(want_status(files.wanted));
    CHECK(registered->status_wanted());
    REQUIRE(registered->write_status("{\"run_id\": \"job9\"}"));
    std::ifstream written(files.status);
    std::string text((std::istreambuf_iterator<char>(written)), std::istreambuf_iterator<char>());
    CHECK(text == "{\"run_id\": \"job9\"}");
    CHECK((std::filesystem::status(files.status).permissions() & std::filesystem::perms::all) ==
          (std::filesystem::perms::owner_read | std::filesystem::perms::owner_write));
    // Wanted a while ago: top has gone.
    std::filesystem::last_write_time(files.wanted, std::filesystem::file_time_type::clock::now() -
                                                       k_status_wanted_for -
                                                       std::chrono::seconds(1));
    CHECK_FALSE(registered->status_wanted());
  }
  CHECK_FALSE(std::filesystem::exists(files.entry));
  CHECK_FALSE(std::filesystem::exists(files.status));
  CHECK_FALSE(std::filesystem::exists(files.wanted));
}
