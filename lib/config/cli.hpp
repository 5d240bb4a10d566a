// The command line of a launch (and the dispatch to `gangrun store`); with
// store_cli.cpp, the only user of CLI11.
#pragma once

#include "config/options.hpp"
#include "config/store_cli.hpp"
#include "util/env.hpp"
#include "util/error.hpp"

#include <string>

namespace gangrun::config {

// What the command line asked for.
struct Command {
  enum class Kind { launch, devices, help, version, store, completion };
  Kind kind = Kind::launch;
  Options options;     // valid when kind == launch or devices
  StoreCommand store;  // valid when kind == store
  std::string text;    // help or version text, or the completion script: printed as is
};

// Parses argv (argv[0] is the program name) and layers every option value:
// command line > GANGRUN_<OPTION> in env > PET_<OPTION> in env > the JSON file
// named by --config (or GANGRUN_CONFIG / PET_CONFIG) > built-in defaults.
// Option names accept snake_case and dash-case. The first positional word
// and everything after it (or everything after "--") is the program and its
// arguments, passed through untouched. "gangrun devices OPTIONS" takes the
// same options and no program. "gangrun completion SHELL" (bash, zsh, fish)
// gives that shell's completion script; any other word after "completion",
// --help included, is a usage error naming the shells.
//
// Every problem is an ErrorCode::usage error whose message names the option
// (with the spelling the user gave, or the environment variable / config
// key) and says what is wrong and how to fix it. Pure apart from reading the
// config file; never prints, never exits.
Expected<Command> parse_command_line(int argc, const char* const* argv, const EnvMap& env);

}  // namespace gangrun::config
