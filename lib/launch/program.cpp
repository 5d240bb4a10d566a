#include "launch/program.hpp"

#include "util/strings.hpp"

#include <sys/stat.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>

namespace gangrun::launch {
namespace {

constexpr const char* k_default_path = "/usr/local/bin:/usr/bin:/bin";

enum class FileKind { missing, directory, not_executable, executable };

FileKind classify(const std::string& path) {
  struct stat info {};
  if (::stat(path.c_str(), &info) != 0) return FileKind::missing;
  if (S_ISDIR(info.st_mode)) return FileKind::directory;
  return ::access(path.c_str(), X_OK) == 0 ? FileKind::executable : FileKind::not_executable;
}

bool ends_with(const std::string& text, std::string_view suffix) {
  return text.size() >= suffix.size() &&
         text.compare(text.size() - suffix.size(), suffix.size(), suffix) == 0;
}

// Absolute without resolving links: a virtual environment's python is a
// link to the system one, and the environment is the useful name.
std::string absolute_path(const std::string& path) {
  std::error_code ignored;
  std::filesystem::path absolute = std::filesystem::absolute(path, ignored);
  return absolute.empty() ? path : absolute.lexically_normal().string();
}

std::string directory_of(const std::string& path) {
  std::string parent = std::filesystem::path(path).parent_path().string();
  return parent.empty() ? "." : parent;
}

bool names_python(const std::string& path) {
  return std::filesystem::path(path).filename().string().rfind("python", 0) == 0;
}

report::Interpreter chosen_interpreter(const config::Options& options, const EnvMap& env,
                                       const std::string& name, const std::string& executable) {
  report::Interpreter interpreter;
  interpreter.path = absolute_path(executable);
  std::string found_in = ", found in " + directory_of(interpreter.path) + " on PATH";
  bool searched = name.find('/') == std::string::npos;
  if (options.python) {
    interpreter.source = report::InterpreterSource::python_option;
    interpreter.origin = "--python, from the command line, GANGRUN_PYTHON or --config";
  } else if (env.contains("PYTHON_EXEC")) {
    interpreter.source = report::InterpreterSource::python_exec;
    interpreter.origin = "PYTHON_EXEC=" + name;
  } else {
    interpreter.source = report::InterpreterSource::path_search;
    interpreter.origin = "the default, " + name;
  }
  if (searched) interpreter.origin += found_in;
  return interpreter;
}

// The interpreter a program's "#!/path/python" or "#!/usr/bin/env python3"
// line starts, found the way env(1) will find it in the workers' PATH.
std::optional<report::Interpreter> shebang_interpreter(const std::string& program,
                                                       const EnvMap& env) {
  std::ifstream file(program);
  std::string line;
  if (!file || !std::getline(file, line) || line.rfind("#!", 0) != 0) return std::nullopt;
  std::vector<std::string> words;
  for (const std::string& word : strings::split(line.substr(2), ' ')) {
    std::string_view trimmed = strings::trim(word);
    if (!trimmed.empty()) words.emplace_back(trimmed);
  }
  if (words.empty()) return std::nullopt;
  report::Interpreter interpreter;
  interpreter.source = report::InterpreterSource::shebang;
  interpreter.origin = "the #! line of " + program + " (" + line + ")";
  if (names_python(words[0])) {
    interpreter.path = words[0];
    return interpreter;
  }
  if (std::filesystem::path(words[0]).filename() != "env") return std::nullopt;
  for (std::size_t i = 1; i < words.size(); ++i) {
    if (words[i].front() == '-') continue;
    if (!names_python(words[i])) return std::nullopt;
    auto found = find_executable(words[i], env, "Python interpreter");
    if (!found) return std::nullopt;
    interpreter.path = absolute_path(*found);
    interpreter.origin += ", found in " + directory_of(interpreter.path) + " on PATH";
    return interpreter;
  }
  return std::nullopt;
}

// The program itself when it is a Python interpreter, as `gangrun
// /venv/bin/python train.py` runs one: named python* as given, or once its
// links are resolved (a venv's bin/py made by hand). The path keeps the
// name given, whose directory is the environment's bin/ (py-spy is looked
// for there, doctor::find_stack_tool).
std::optional<report::Interpreter> program_as_interpreter(const std::string& named,
                                                          const std::string& executable) {
  std::error_code error;
  std::filesystem::path resolved = std::filesystem::canonical(executable, error);
  if (!names_python(executable) && (error || !names_python(resolved.string()))) {
    return std::nullopt;
  }
  report::Interpreter interpreter;
  interpreter.source = report::InterpreterSource::program;
  interpreter.path = absolute_path(executable);
  interpreter.origin = "the program, " + named;
  if (named.find('/') == std::string::npos) {
    interpreter.origin += ", found in " + directory_of(interpreter.path) + " on PATH";
  }
  return interpreter;
}

Expected<ResolvedProgram> through_python(const config::Options& options, const EnvMap& env,
                                         std::vector<std::string> python_args) {
  std::string python =
      options.python ? *options.python : env_lookup(env, "PYTHON_EXEC").value_or("python3");
  std::string what = options.python                ? "--python interpreter"
                     : env.contains("PYTHON_EXEC") ? "Python interpreter (PYTHON_EXEC)"
                                                   : "Python interpreter";
  GANGRUN_TRY_ASSIGN(executable, find_executable(python, env, what));
  ResolvedProgram program;
  program.executable = *executable;
  program.argv = {python, "-u"};
  program.argv.insert(program.argv.end(), python_args.begin(), python_args.end());
  program.uses_python = true;
  program.interpreter = chosen_interpreter(options, env, python, *executable);
  return program;
}

}  // namespace

Expected<std::string> find_executable(const std::string& name, const EnvMap& env,
                                      const std::string& what) {
  if (name.empty()) return fail(ErrorCode::not_found, what + " is an empty string");
  if (name.find('/') != std::string::npos) {
    switch (classify(name)) {
      case FileKind::executable:
        return name;
      case FileKind::missing:
        return fail(ErrorCode::not_found, what + " " + name + " not found");
      case FileKind::directory:
        return fail(ErrorCode::not_executable, what + " " + name + " is a directory");
      case FileKind::not_executable:
        return fail(ErrorCode::not_executable,
                    what + " " + name + " is not executable (chmod +x it, or run it through " +
                        "an interpreter)");
    }
  }
  std::string path = env_lookup(env, "PATH").value_or(k_default_path);
  std::optional<std::string> denied;
  for (std::string dir : strings::split(path, ':')) {
    if (dir.empty()) dir = ".";
    std::string candidate = dir + "/" + name;
    FileKind kind = classify(candidate);
    if (kind == FileKind::executable) return candidate;
    if (kind == FileKind::not_executable && !denied) denied = candidate;
  }
  if (denied) {
    return fail(ErrorCode::not_executable, what + " " + *denied + " is not executable");
  }
  return fail(ErrorCode::not_found, what + " '" + name + "' not found in PATH (" + path + ")");
}

Expected<ResolvedProgram> resolve_program(const config::Options& options, const EnvMap& env) {
  const std::vector<std::string>& words = options.program_and_args;
  if (words.empty()) return fail_usage("missing PROGRAM to launch");
  const std::string& first = words.front();

  if (options.module) {
    std::vector<std::string> args = {"-m"};
    args.insert(args.end(), words.begin(), words.end());
    auto program = through_python(options, env, std::move(args));
    if (program) program->entrypoint = first;
    return program;
  }

  FileKind kind = classify(first);
  bool python_script =
      !options.no_python && (ends_with(first, ".py") || kind == FileKind::not_executable);
  if (python_script) {
    if (kind == FileKind::missing) {
      return fail(ErrorCode::not_found, "script " + first + " not found");
    }
    if (kind == FileKind::directory) {
      return fail(ErrorCode::not_executable, "script " + first + " is a directory");
    }
    auto program = through_python(options, env, words);
    if (program) program->entrypoint = first;
    return program;
  }

  GANGRUN_TRY_ASSIGN(executable, find_executable(first, env, "program"));
  ResolvedProgram program;
  program.executable = *executable;
  program.argv = words;
  program.entrypoint = first;
  program.interpreter = shebang_interpreter(*executable, env);
  if (!program.interpreter) program.interpreter = program_as_interpreter(first, *executable);
  return program;
}

std::vector<std::string> substitute_local_rank(const std::vector<std::string>& argv,
                                               int local_rank) {
  std::vector<std::string> out = argv;
  std::string value = std::to_string(local_rank);
  for (std::size_t i = 1; i < out.size(); ++i) {
    std::string& arg = out[i];
    for (std::size_t pos = arg.find("${local_rank}"); pos != std::string::npos;
         pos = arg.find("${local_rank}", pos + value.size())) {
      arg.replace(pos, 13, value);
    }
  }
  return out;
}

}  // namespace gangrun::launch
