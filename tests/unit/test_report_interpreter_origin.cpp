// Where launch::resolve_program says the workers' Python interpreter came
// from, for the failure report's hint (report/interpreter.hpp).
#include "launch/program.hpp"
#include "temp_dir.hpp"

#include <catch2/catch.hpp>

#include <sys/stat.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>

namespace fs = std::filesystem;
using gangrun::config::Options;
using gangrun::launch::resolve_program;
using gangrun::report::InterpreterSource;

namespace {

using gangrun::test::TempDir;

Options with_program(std::vector<std::string> words) {
  Options options;
  options.program_and_args = std::move(words);
  return options;
}

}  // namespace

TEST_CASE("launch::resolve_program records python3 found on PATH and its directory",
          "[launch][report]") {
  TempDir dir;
  fs::path python = dir.write("python3", "", true);
  fs::path script = dir.write("train.py", "import torch\n", false);
  auto program = resolve_program(with_program({script.string()}),
                                 {{"PATH", "/nonexistent:" + dir.path().string()}});
  REQUIRE(program);
  REQUIRE(program->interpreter);
  CHECK(program->interpreter->path == python.string());
  CHECK(program->interpreter->source == InterpreterSource::path_search);
  CHECK(program->interpreter->origin ==
        "the default, python3, found in " + dir.path().string() + " on PATH");
}

TEST_CASE("launch::resolve_program records --python and PYTHON_EXEC as absolute paths",
          "[launch][report]") {
  TempDir dir;
  fs::path python = dir.write("mypython", "", true);
  fs::path script = dir.write("train.py", "", false);
  fs::path saved = fs::current_path();
  fs::current_path(dir.path());
  Options options = with_program({"train.py"});

  SECTION("--python, relative") {
    options.python = "./mypython";
    auto program = resolve_program(options, {{"PATH", "/nonexistent"}, {"PYTHON_EXEC", "x"}});
    REQUIRE(program);
    CHECK(program->interpreter->path == python.string());
    CHECK(program->interpreter->source == InterpreterSource::python_option);
    CHECK(program->interpreter->origin ==
          "--python, from the command line, GANGRUN_PYTHON or --config");
  }
  SECTION("PYTHON_EXEC, a name found on PATH") {
    auto program =
        resolve_program(options, {{"PATH", dir.path().string()}, {"PYTHON_EXEC", "mypython"}});
    REQUIRE(program);
    CHECK(program->interpreter->path == python.string());
    CHECK(program->interpreter->source == InterpreterSource::python_exec);
    CHECK(program->interpreter->origin ==
          "PYTHON_EXEC=mypython, found in " + dir.path().string() + " on PATH");
  }
  fs::current_path(saved);
}

TEST_CASE("launch::resolve_program reads a python #! line of a program run as it is",
          "[launch][report]") {
  TempDir dir;
  fs::path python = dir.write("python3.12", "", true);
  gangrun::EnvMap env = {{"PATH", dir.path().string()}};

  fs::path direct = dir.write("direct", "#!" + python.string() + " -u\nimport torch\n", true);
  auto program = resolve_program(with_program({direct.string()}), env);
  REQUIRE(program);
  CHECK_FALSE(program->uses_python);
  REQUIRE(program->interpreter);
  CHECK(program->interpreter->path == python.string());
  CHECK(program->interpreter->source == InterpreterSource::shebang);
  CHECK(program->interpreter->origin ==
        "the #! line of " + direct.string() + " (#!" + python.string() + " -u)");

  fs::path through_env = dir.write("through_env", "#!/usr/bin/env -S python3.12 -u\n", true);
  program = resolve_program(with_program({through_env.string()}), env);
  REQUIRE(program);
  REQUIRE(program->interpreter);
  CHECK(program->interpreter->path == python.string());
  CHECK_THAT(program->interpreter->origin,
             Catch::EndsWith(", found in " + dir.path().string() + " on PATH"));

  fs::path shell = dir.write("shell", "#!/bin/sh\npython3 train.py\n", true);
  program = resolve_program(with_program({shell.string()}), env);
  REQUIRE(program);
  CHECK_FALSE(program->interpreter);

  Options no_python = with_program({direct.string()});
  no_python.no_python = true;
  program = resolve_program(no_python, env);
  REQUIRE(program);
  CHECK(program->interpreter);
}
