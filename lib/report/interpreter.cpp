#include "report/interpreter.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <array>
#include <string_view>

namespace gangrun::report {
namespace {

constexpr std::string_view k_marker = "ModuleNotFoundError: No module named '";

// The packages whose own launcher the user has just left: their environment
// had them, so their absence points at the interpreter.
constexpr std::array<std::string_view, 3> k_launcher_packages = {"torch", "accelerate",
                                                                 "deepspeed"};

std::optional<std::string> module_named_in(std::string_view line) {
  std::size_t at = line.rfind(k_marker);
  if (at == std::string_view::npos) return std::nullopt;
  std::string_view rest = line.substr(at + k_marker.size());
  std::size_t end = rest.find('\'');
  if (end == std::string_view::npos || end == 0) return std::nullopt;
  return std::string(rest.substr(0, end));
}

std::string top_level(const std::string& module) { return module.substr(0, module.find('.')); }

bool is_launcher_package(const std::string& module) {
  std::string package = top_level(module);
  for (std::string_view known : k_launcher_packages) {
    if (package == known) return true;
  }
  return false;
}

std::optional<std::string> last_module_named(const std::vector<std::string>& lines) {
  // Not std::views::reverse: clang cannot build libstdc++ 12's <ranges>.
  // NOLINTNEXTLINE(modernize-loop-convert)
  for (auto line = lines.rbegin(); line != lines.rend(); ++line) {
    if (auto module = module_named_in(*line)) return module;
  }
  return std::nullopt;
}

}  // namespace

std::string source_name(InterpreterSource source) {
  switch (source) {
    case InterpreterSource::python_option:
      return "--python";
    case InterpreterSource::python_exec:
      return "PYTHON_EXEC";
    case InterpreterSource::path_search:
      return "PATH";
    case InterpreterSource::shebang:
      return "#!";
    case InterpreterSource::program:
      return "program";
  }
  return "PATH";
}

std::optional<std::string> missing_launcher_module(const std::vector<std::string>& last_lines,
                                                   const std::optional<WorkerError>& error) {
  std::optional<std::string> module;
  if (error) module = module_named_in(error->message);
  if (!module) module = last_module_named(last_lines);
  if (!module || !is_launcher_package(*module)) return std::nullopt;
  return module;
}

std::vector<std::string> launcher_packages_imported(std::string_view source) {
  std::vector<std::string> found;
  while (!source.empty()) {
    std::size_t end = source.find('\n');
    std::string_view line = source.substr(0, end);
    source = end == std::string_view::npos ? std::string_view{} : source.substr(end + 1);
    while (!line.empty() && (line.front() == ' ' || line.front() == '\t')) line.remove_prefix(1);
    for (std::string_view keyword : {"import ", "from "}) {
      if (!line.starts_with(keyword)) continue;
      std::string_view rest = line.substr(keyword.size());
      while (rest.starts_with(' ')) rest.remove_prefix(1);
      std::string_view name = rest.substr(0, rest.find_first_of(" .,;\t\r#"));
      if (is_launcher_package(std::string(name)) &&
          std::find(found.begin(), found.end(), name) == found.end()) {
        found.emplace_back(name);
      }
    }
  }
  return found;
}

std::string interpreter_hint(const Interpreter& interpreter, const std::string& module) {
  std::string package = top_level(module);
  std::string choose_another;
  switch (interpreter.source) {
    case InterpreterSource::shebang:
      choose_another =
          "or change that #! line, or run the script through gangrun's interpreter "
          "(without --no_python, choosing it with --python PATH or PYTHON_EXEC)";
      break;
    case InterpreterSource::program:
      choose_another = "or name a Python interpreter that has it as the program";
      break;
    default:
      choose_another = "or choose an interpreter that has it with --python PATH or PYTHON_EXEC";
  }
  if (module == package) {
    return fmt::format(
        "{} is not installed for the Python interpreter that ran, {} (chosen by {}): install it "
        "into that interpreter ({} -m pip install {}), {}",
        package, interpreter.path, interpreter.origin, interpreter.path, package, choose_another);
  }
  return fmt::format(
      "{} is missing from the {} of the Python interpreter that ran, {} (chosen by {}): that {} "
      "is likely not the version the script expects; upgrade it ({} -m pip install -U {}), {}",
      module, package, interpreter.path, interpreter.origin, package, interpreter.path, package,
      choose_another);
}

}  // namespace gangrun::report
