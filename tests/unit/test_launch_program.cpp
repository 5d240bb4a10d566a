#include "launch/program.hpp"
#include "temp_dir.hpp"

#include <catch2/catch.hpp>

#include <sys/stat.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>

namespace fs = std::filesystem;
using gangrun::ErrorCode;
using gangrun::config::Options;
using gangrun::launch::resolve_program;

namespace {

using gangrun::test::TempDir;

// An executable (or not) shell script in dir.
fs::path script_in(const TempDir& dir, const std::string& name, bool executable) {
  return dir.write(name, "#!/bin/sh\nexit 0\n", executable);
}

Options with_program(std::vector<std::string> words) {
  Options options;
  options.program_and_args = std::move(words);
  return options;
}

}  // namespace

TEST_CASE("launch::resolve_program finds executables through PATH", "[launch]") {
  TempDir dir;
  script_in(dir, "tool", true);
  gangrun::EnvMap env = {{"PATH", "/nonexistent:" + dir.path().string()}};
  auto program = resolve_program(with_program({"tool", "--flag"}), env);
  REQUIRE(program);
  CHECK(program->executable == (dir.path() / "tool").string());
  CHECK(program->argv == std::vector<std::string>{"tool", "--flag"});
  CHECK_FALSE(program->uses_python);
}

TEST_CASE("launch::resolve_program reports a missing program as not found", "[launch]") {
  gangrun::EnvMap env = {{"PATH", "/nonexistent"}};
  auto program = resolve_program(with_program({"no-such-tool"}), env);
  REQUIRE_FALSE(program);
  CHECK(program.error().code() == ErrorCode::not_found);
  CHECK(program.error().exit_code() == 127);
  CHECK_THAT(program.error().message(), Catch::Contains("no-such-tool"));
}

TEST_CASE("launch::resolve_program reports a non-executable path as 126", "[launch]") {
  TempDir dir;
  fs::path file = script_in(dir, "data.bin", false);
  Options options = with_program({file.string()});
  options.no_python = true;
  auto program = resolve_program(options, {{"PATH", "/usr/bin:/bin"}});
  REQUIRE_FALSE(program);
  CHECK(program.error().code() == ErrorCode::not_executable);
  CHECK(program.error().exit_code() == 126);
}

TEST_CASE("launch::resolve_program runs .py files and plain files through Python", "[launch]") {
  TempDir dir;
  fs::path script = script_in(dir, "train.py", true);
  fs::path python = script_in(dir, "python3", true);
  gangrun::EnvMap env = {{"PATH", dir.path().string()}};
  auto program = resolve_program(with_program({script.string(), "--lr", "0.1"}), env);
  REQUIRE(program);
  CHECK(program->uses_python);
  CHECK(program->executable == python.string());
  CHECK(program->argv == std::vector<std::string>{"python3", "-u", script.string(), "--lr", "0.1"});

  fs::path plain = script_in(dir, "job", false);
  auto through_python = resolve_program(with_program({plain.string()}), env);
  REQUIRE(through_python);
  CHECK(through_python->uses_python);
}

TEST_CASE("launch::resolve_program honours -m, --python and PYTHON_EXEC", "[launch]") {
  TempDir dir;
  fs::path python = script_in(dir, "mypython", true);
  Options options = with_program({"pkg.train", "x"});
  options.module = true;
  SECTION("--python") {
    options.python = python.string();
    auto program = resolve_program(options, {{"PATH", "/nonexistent"}});
    REQUIRE(program);
    CHECK(program->argv == std::vector<std::string>{python.string(), "-u", "-m", "pkg.train", "x"});
  }
  SECTION("PYTHON_EXEC") {
    auto program =
        resolve_program(options, {{"PATH", "/nonexistent"}, {"PYTHON_EXEC", python.string()}});
    REQUIRE(program);
    CHECK(program->executable == python.string());
  }
  SECTION("missing interpreter") {
    auto program = resolve_program(options, {{"PATH", "/nonexistent"}});
    REQUIRE_FALSE(program);
    CHECK(program.error().exit_code() == 127);
  }
}

TEST_CASE("launch::resolve_program reports a missing script", "[launch]") {
  auto program = resolve_program(with_program({"/nonexistent/train.py"}), {{"PATH", "/usr/bin"}});
  REQUIRE_FALSE(program);
  CHECK(program.error().exit_code() == 127);
  CHECK_THAT(program.error().message(), Catch::Contains("/nonexistent/train.py"));
}

TEST_CASE("launch::substitute_local_rank replaces the macro in arguments", "[launch]") {
  auto argv = gangrun::launch::substitute_local_rank(
      {"p", "--out=r${local_rank}.log", "${local_rank}${local_rank}"}, 3);
  CHECK(argv == std::vector<std::string>{"p", "--out=r3.log", "33"});
}
