#include "config/option_names.hpp"
#include "launch/doctor_plan.hpp"

#include <catch2/catch.hpp>

#include <string>

using gangrun::config::Options;
using gangrun::config::Source;
using gangrun::launch::doctor_plan;

TEST_CASE("launch::doctor_plan takes the watches as the options ask", "[launch]") {
  Options options;
  options.hang_timeout = 5.0;
  options.no_stacks_at_failure = true;
  options.flight_recorder = true;
  auto doctor = doctor_plan(options, {});
  REQUIRE(doctor);
  CHECK(doctor->hang_timeout_s == 5.0);
  CHECK_FALSE(doctor->stacks_at_failure);
  CHECK(doctor->flight_recorder);
  CHECK_FALSE(doctor->stack_tool);  // looked for at launch, beside the interpreter
}

TEST_CASE("launch::doctor_plan watches the start with --hang-timeout or when asked", "[launch]") {
  Options options;
  auto doctor = doctor_plan(options, {});
  REQUIRE(doctor);
  CHECK_FALSE(doctor->start_timeout_s);  // its default alone watches nothing

  options.hang_timeout = 5.0;
  doctor = doctor_plan(options, {});
  REQUIRE(doctor);
  CHECK(doctor->start_timeout_s == 600.0);

  options.start_timeout.reset();  // --start-timeout 0
  doctor = doctor_plan(options, {});
  REQUIRE(doctor);
  CHECK_FALSE(doctor->start_timeout_s);

  options = Options{};
  options.start_timeout = 120.0;
  options.origins[std::string(gangrun::config::opt::start_timeout)] = {
      .text = "2m", .source = Source::command_line};
  doctor = doctor_plan(options, {});
  REQUIRE(doctor);
  CHECK(doctor->start_timeout_s == 120.0);
}

TEST_CASE("launch::doctor_plan checks --stack-tool and names it as the user gave it", "[launch]") {
  Options options;
  options.stack_tool = "/bin/sh";
  auto found = doctor_plan(options, {});
  REQUIRE(found);
  CHECK(found->stack_tool == "/bin/sh");

  options.stack_tool = "no-such-stack-tool";
  auto missing = doctor_plan(options, {{"PATH", "/nonexistent"}});
  REQUIRE_FALSE(missing);
  CHECK(missing.error().message().rfind("--stack-tool: ", 0) == 0);

  options.origins[std::string(gangrun::config::opt::stack_tool)] = {.text = "no-such-stack-tool",
                                                                    .source = Source::gangrun_env};
  missing = doctor_plan(options, {{"PATH", "/nonexistent"}});
  REQUIRE_FALSE(missing);
  CHECK(missing.error().message().rfind("GANGRUN_STACK_TOOL: ", 0) == 0);
}
