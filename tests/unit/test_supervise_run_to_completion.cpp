// supervise::run_to_completion with real children: /bin/sh scripts that
// print, exit, die of a signal or outlive their timeout.
#include "supervise/process.hpp"

#include <catch2/catch.hpp>

#include <csignal>
#include <string>
#include <thread>

using namespace gangrun;
using namespace gangrun::supervise;

namespace {

SpawnSpec shell(const std::string& script, EnvMap env = {}) {
  return SpawnSpec{.executable = "/bin/sh", .argv = {"sh", "-c", script}, .env = std::move(env)};
}

constexpr std::chrono::milliseconds k_generous{10'000};

}  // namespace

TEST_CASE("run_to_completion: the child's stdout and exit code", "[supervise]") {
  auto run = run_to_completion(shell("printf 'out'; exit 3"), k_generous);
  REQUIRE(run);
  CHECK(run->output == "out");
  REQUIRE(run->status);
  CHECK(run->status->kind == ExitStatus::Kind::exited);
  CHECK(run->status->code == 3);
}

TEST_CASE("run_to_completion: the environment is exactly the given one", "[supervise]") {
  auto run = run_to_completion(shell(R"(printf '%s|%s' "$ONLY" "${HOME-unset}")", {{"ONLY", "x"}}),
                               k_generous);
  REQUIRE(run);
  CHECK(run->output == "x|unset");
  REQUIRE(run->status);
  CHECK(run->status->success());
}

TEST_CASE("run_to_completion: a child killed by a signal", "[supervise]") {
  auto run = run_to_completion(shell("printf 'before'; kill -9 $$"), k_generous);
  REQUIRE(run);
  CHECK(run->output == "before");
  REQUIRE(run->status);
  CHECK(run->status->kind == ExitStatus::Kind::signaled);
  CHECK(run->status->signal == SIGKILL);
}

TEST_CASE("run_to_completion: a child past its timeout is killed with its tree", "[supervise]") {
  auto start = std::chrono::steady_clock::now();
  // The background sleep holds stdout too: only killing the tree ends it.
  auto run = run_to_completion(shell("printf 'started'; sleep 30 & sleep 30"),
                               std::chrono::milliseconds(300));
  auto took = std::chrono::steady_clock::now() - start;
  REQUIRE(run);
  CHECK(run->output == "started");
  CHECK_FALSE(run->status);
  CHECK(took >= std::chrono::milliseconds(300));
  CHECK(took < std::chrono::seconds(5));
}

TEST_CASE("run_to_completion: a program that cannot be executed is an error", "[supervise]") {
  SpawnSpec spec{.executable = "/nonexistent/gangrun-test/probe", .argv = {"probe"}};
  auto run = run_to_completion(spec, k_generous);
  REQUIRE_FALSE(run);
  CHECK(run.error().code() == ErrorCode::not_found);
  CHECK_THAT(run.error().message(), Catch::Contains("/nonexistent/gangrun-test/probe"));
}

TEST_CASE("run_to_completion: several threads at once each get their own child", "[supervise]") {
  std::string outputs[4];
  std::thread threads[4];
  for (int i = 0; i < 4; ++i) {
    threads[i] = std::thread([i, &outputs] {
      auto run = run_to_completion(shell("sleep 0.1; printf " + std::to_string(i)), k_generous);
      outputs[i] = run && run->status && run->status->success() ? run->output : "failed";
    });
  }
  for (std::thread& thread : threads) thread.join();
  for (int i = 0; i < 4; ++i) CHECK(outputs[i] == std::to_string(i));
}
