#include "config/deepspeed_env_file.hpp"

#include "util/strings.hpp"

#include <filesystem>
#include <fstream>
#include <sstream>

namespace gangrun::config {

Expected<EnvMap> parse_deepspeed_env(std::string_view text, const std::string& file) {
  EnvMap vars;
  int line_number = 0;
  for (const std::string& line : strings::split(text, '\n')) {
    ++line_number;
    std::string_view trimmed = strings::trim(line);
    if (trimmed.empty() || trimmed.starts_with('#')) continue;
    std::size_t equals = trimmed.find('=');
    std::string_view name =
        equals == std::string_view::npos ? trimmed : strings::trim(trimmed.substr(0, equals));
    if (equals == std::string_view::npos || name.empty()) {
      return fail_usage(file + ":" + std::to_string(line_number) + ": " + strings::quoted(trimmed) +
                        " is not NAME=VALUE");
    }
    vars[std::string(name)] = std::string(strings::trim(trimmed.substr(equals + 1)));
  }
  return vars;
}

Expected<EnvMap> read_deepspeed_env_files(const EnvMap& env, const std::string& cwd) {
  const std::string name = env_lookup(env, "DS_ENV_FILE").value_or(".deepspeed_env");
  EnvMap vars;
  std::vector<std::filesystem::path> dirs;
  if (auto home = env_lookup(env, "HOME"); home && !home->empty()) dirs.emplace_back(*home);
  dirs.emplace_back(cwd);
  for (const std::filesystem::path& dir : dirs) {
    const std::filesystem::path path = dir / name;  // an absolute name stays itself
    std::error_code error;
    if (!std::filesystem::is_regular_file(path, error)) continue;
    std::ifstream in(path);
    std::ostringstream text;
    text << in.rdbuf();
    if (!in) return fail(ErrorCode::io, "cannot read " + path.string());
    GANGRUN_TRY_ASSIGN(file_vars, parse_deepspeed_env(text.str(), path.string()));
    for (auto& [key, value] : *file_vars) vars[key] = value;
  }
  return vars;
}

}  // namespace gangrun::config
