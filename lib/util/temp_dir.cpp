#include "util/temp_dir.hpp"

namespace gangrun {

namespace {

constexpr const char* k_variable = "TMPDIR";
constexpr const char* k_fallback = "/tmp";

std::optional<std::string> chosen_by_variable(const EnvMap& env) {
  std::optional<std::string> value = env_lookup(env, k_variable);
  if (!value || value->empty()) return std::nullopt;
  return value;
}

}  // namespace

std::string temp_dir(const EnvMap& env) { return chosen_by_variable(env).value_or(k_fallback); }

std::string temp_dir_origin(const EnvMap& env) {
  if (auto value = chosen_by_variable(env)) return std::string(k_variable) + "=" + *value;
  return k_fallback;
}

}  // namespace gangrun
