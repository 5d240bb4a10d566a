#include "config/deepspeed/deepspeed_env_file.hpp"

#include "config/config_file.hpp"
#include "util/strings.hpp"

#include <filesystem>

namespace gangrun::config {

Expected<EnvMap> parse_deepspeed_env(std::string_view text, const std::string& file) {
  EnvMap vars;
  Lines lines(text);
  while (std::optional<std::string_view> line = lines.next()) {
    std::string_view trimmed = strings::trim(*line);
    if (trimmed.empty() || trimmed.starts_with('#')) continue;
    const std::string where = file + ":" + std::to_string(lines.number());
    std::size_t equals = trimmed.find('=');
    std::string_view name =
        equals == std::string_view::npos ? trimmed : strings::trim(trimmed.substr(0, equals));
    if (equals == std::string_view::npos || name.empty()) {
      return fail_usage(where + ": " + strings::quoted(printable_key(trimmed)) +
                        " is not NAME=VALUE");
    }
    std::string_view value = strings::trim(trimmed.substr(equals + 1));
    const std::string key = where + ": key \"" + printable_key(name) + "\"";
    GANGRUN_TRY(refuse_nul(name, key, "the name"));
    GANGRUN_TRY(refuse_nul(value, key, "the value"));
    vars[std::string(name)] = std::string(value);
  }
  return vars;
}

Expected<EnvMap> read_deepspeed_env_files(const EnvMap& env, const std::string& cwd) {
  // 1 MiB: the variables travel on every host's ssh command line, which the
  // kernel caps at a few MiB with everything else on it.
  static constexpr UserFileKind k_deepspeed_env{
      .name = "deepspeed's environment file",
      .reads = "deepspeed reads NAME=VALUE lines",
      .max_bytes = 1024 * 1024,
      .holds = "it holds a few variables for the workers"};
  const std::string name = env_lookup(env, "DS_ENV_FILE").value_or(".deepspeed_env");
  EnvMap vars;
  std::vector<std::filesystem::path> dirs;
  if (auto home = env_lookup(env, "HOME"); home && !home->empty()) dirs.emplace_back(*home);
  dirs.emplace_back(cwd);
  for (const std::filesystem::path& dir : dirs) {
    const std::filesystem::path path = dir / name;  // an absolute name stays itself
    // deepspeed skips what os.path.isfile denies (missing, a directory, a
    // FIFO); the reader checks the opened file again, so one swapped in
    // after this look is refused rather than read.
    std::error_code error;
    if (!std::filesystem::is_regular_file(path, error)) continue;
    GANGRUN_TRY_ASSIGN(text, read_user_file(path.string(), k_deepspeed_env));
    GANGRUN_TRY_ASSIGN(file_vars, parse_deepspeed_env(*text, path.string()));
    for (auto& [key, value] : *file_vars) vars[key] = value;
  }
  return vars;
}

}  // namespace gangrun::config
