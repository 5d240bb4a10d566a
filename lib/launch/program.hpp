// Program resolution (docs/flags.md, "Command line": which program runs): what
// exactly each worker will execute, decided before anything starts.
#pragma once

#include "config/options.hpp"
#include "report/interpreter.hpp"
#include "util/env.hpp"
#include "util/error.hpp"

#include <string>
#include <vector>

namespace gangrun::launch {

struct ResolvedProgram {
  std::string executable;         // the file execve() gets
  std::vector<std::string> argv;  // argv[0] and the user's arguments, before ${local_rank}
  std::string entrypoint;         // what the user named (the script, module or program)
  bool uses_python = false;
  // The Python interpreter that runs it and where it came from, for the
  // failure report's hint and the stack tool's search: gangrun's own choice
  // when uses_python, else the one a program's #! line names (a python
  // script run as it is), else the program itself when it is a python
  // (`gangrun /venv/bin/python train.py`); nullopt for anything else.
  std::optional<report::Interpreter> interpreter;
};

// -m MOD        -> PYTHON -u -m MOD ARGS
// --no_python   -> PROGRAM ARGS
// *.py, or an existing file that is not executable -> PYTHON -u PROGRAM ARGS
// anything else -> PROGRAM ARGS, found through PATH when it has no '/'.
// PYTHON is --python, else PYTHON_EXEC, else python3 on PATH; the
// interpreter record says which, with its absolute path. A program run as it
// is whose #! line names python (directly or through env) gets that one
// recorded; an unreadable file or another #! line records none. Errors:
// not_found (127) and not_executable (126), naming every path tried.
Expected<ResolvedProgram> resolve_program(const config::Options& options, const EnvMap& env);

// Finds an executable the way execvp() would: a name with a '/' as it is,
// else the first executable file of that name in PATH's directories. `what`
// names its role ("program", "Python interpreter") in the messages. Errors:
// not_found, not_executable (a directory, a file without x permission).
Expected<std::string> find_executable(const std::string& name, const EnvMap& env,
                                      const std::string& what);

// Replaces torchrun's ${local_rank} macro in every argument after argv[0].
std::vector<std::string> substitute_local_rank(const std::vector<std::string>& argv,
                                               int local_rank);

}  // namespace gangrun::launch
