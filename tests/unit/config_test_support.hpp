// Helpers shared by the config tests: argv from a word list, and the two
// outcomes a test expects (a launch, or a usage error).
#pragma once

#include "config/cli.hpp"

#include <catch2/catch.hpp>

#include <string>
#include <variant>
#include <vector>

namespace gangrun::config::test {

inline Expected<Command> parse(const std::vector<std::string>& args, const EnvMap& env = {}) {
  std::vector<const char*> argv = {"gangrun"};
  for (const std::string& arg : args) argv.push_back(arg.c_str());
  argv.push_back(nullptr);
  return parse_command_line(static_cast<int>(argv.size() - 1), argv.data(), env);
}

inline Options launch(std::vector<std::string> args, const EnvMap& env = {}) {
  Expected<Command> command = parse(std::move(args), env);
  if (!command) FAIL("unexpected error: " << command.error().message());
  REQUIRE(std::holds_alternative<LaunchRequest>(*command));
  return std::get<LaunchRequest>(*command).options;
}

// The usage error's message; fails the test if parsing succeeded.
inline std::string usage_error(std::vector<std::string> args, const EnvMap& env = {}) {
  Expected<Command> command = parse(std::move(args), env);
  if (command) FAIL("expected a usage error");
  CHECK(command.error().code() == ErrorCode::usage);
  CHECK_FALSE(command.error().message().starts_with("gangrun:"));
  return command.error().message();
}

}  // namespace gangrun::config::test
