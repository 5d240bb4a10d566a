#include "util/env.hpp"

#include <cstdlib>
#include <cstring>
#include <string_view>

extern char** environ;  // NOLINT: POSIX global

namespace gangrun {

EnvMap env_from_environ(const char* const* environ_array) {
  EnvMap env;
  if (environ_array == nullptr) return env;
  for (const char* const* entry = environ_array; *entry != nullptr; ++entry) {
    std::string_view text(*entry);
    std::size_t equals = text.find('=');
    if (equals == std::string_view::npos || equals == 0) continue;
    // First definition wins, as getenv() would see it.
    env.emplace(std::string(text.substr(0, equals)), std::string(text.substr(equals + 1)));
  }
  return env;
}

EnvMap current_environment() { return env_from_environ(environ); }

void erase_from_process_environment(const std::string& name) {
  // Every entry, not getenv's first: an environment may name a variable
  // twice (execve takes any array), and unsetenv removes them all.
  for (char** entry = environ; entry != nullptr && *entry != nullptr; ++entry) {
    std::string_view text(*entry);
    if (text.size() <= name.size() || text[name.size()] != '=' || !text.starts_with(name)) {
      continue;
    }
    // explicit_bzero: a store the compiler may not drop because nothing
    // reads the bytes again.
    ::explicit_bzero(*entry + name.size() + 1, text.size() - name.size() - 1);
  }
  ::unsetenv(name.c_str());
}

std::optional<std::string> env_lookup(const EnvMap& env, const std::string& name) {
  auto it = env.find(name);
  if (it == env.end()) return std::nullopt;
  return it->second;
}

std::vector<std::string> to_envp_strings(const EnvMap& env) {
  std::vector<std::string> out;
  out.reserve(env.size());
  for (const auto& [name, value] : env) out.push_back(name + "=" + value);
  return out;
}

}  // namespace gangrun
