// Environments as explicit maps. gangrun never changes its own environment to
// configure a child: it copies its environment into an EnvMap, edits the copy
// per worker and hands it to the spawn call.
#pragma once

#include <map>
#include <optional>
#include <string>
#include <vector>

namespace gangrun {

using EnvMap = std::map<std::string, std::string>;

// A copy of an environ-style array ("NAME=value" strings, null-terminated).
EnvMap env_from_environ(const char* const* environ_array);

// This process's environment, read once at call time.
EnvMap current_environment();

// Overwrites the value of every NAME=value entry of this process's environ
// with NUL bytes, in place, then unsets NAME: for a value that must not stay
// readable in /proc/PID/environ (which shows the block those entries point
// into, not environ itself). Not thread-safe, as setenv is not: call it
// before any thread starts. The one change gangrun makes to its own
// environment.
void erase_from_process_environment(const std::string& name);

std::optional<std::string> env_lookup(const EnvMap& env, const std::string& name);

// "NAME=value" strings for execve, in the map's (sorted) order.
std::vector<std::string> to_envp_strings(const EnvMap& env);

}  // namespace gangrun
