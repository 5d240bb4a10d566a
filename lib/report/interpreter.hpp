// The Python interpreter the workers ran, where gangrun got it from, and the
// hint the failure report gives when a worker could not import what a
// launcher's users take for granted (torch, accelerate, deepspeed): after a
// switch of launchers the most common first failure is an interpreter from
// another environment.
#pragma once

#include "report/error_file.hpp"

#include <optional>
#include <string>
#include <vector>

namespace gangrun::report {

enum class InterpreterSource {
  python_option,  // --python, GANGRUN_PYTHON or --config's "python"
  python_exec,    // the PYTHON_EXEC environment variable
  path_search,    // python3 on PATH
  shebang,        // the #! line of a program run as it is (--no_python, an executable)
  program,        // the program itself is a python ("gangrun /venv/bin/python train.py")
};

struct Interpreter {
  // Absolute, with symbolic links kept: a virtual environment's python is a
  // link out of it, and the environment is what the user must recognise.
  std::string path;
  InterpreterSource source = InterpreterSource::path_search;
  // How it was chosen, in words: "--python", "PYTHON_EXEC=python3.11, found
  // in /usr/bin on PATH", "python3 on PATH, found in /opt/venv/bin", "the #!
  // line of ./train (/usr/bin/env python3), found in /usr/bin on PATH".
  std::string origin;
};

// "--python", "PYTHON_EXEC", "PATH", "#!" or "program": the source's short name.
std::string source_name(InterpreterSource source);

// The module a worker failed to import, from the last
// "ModuleNotFoundError: No module named 'X'" in its error file's message or,
// when that says nothing of it, in its last output lines (a plain `import
// torch` at the top of a script fails before torch's error file exists, so
// the output is usually all there is). nullopt when the last such line names
// none, or names something other than torch, accelerate or deepspeed (or one
// of their submodules): a user's own module missing is no interpreter
// question. This reads error text on purpose: it adds a hint and decides
// nothing about the run.
std::optional<std::string> missing_launcher_module(const std::vector<std::string>& last_lines,
                                                   const std::optional<WorkerError>& error);

// The launcher packages (torch, accelerate, deepspeed) a Python source
// imports by a line starting with "import X" or "from X", in the order first
// seen, each once. Where no output was captured this is what the agent asks
// the interpreter about.
std::vector<std::string> launcher_packages_imported(std::string_view source);

// The hint for a worker that could not import module (as returned by
// missing_launcher_module) under interpreter: the interpreter, where it came
// from, and the fix. For a missing top-level package: install it into that
// interpreter, or choose another one with --python or PYTHON_EXEC. For a
// missing submodule (the package is there): its version is likely not the
// one the script expects. One line, no trailing newline.
std::string interpreter_hint(const Interpreter& interpreter, const std::string& module);

}  // namespace gangrun::report
