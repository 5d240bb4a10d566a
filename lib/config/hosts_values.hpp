// What hostfiles and starting gangrun on other hosts do beyond their rows'
// fields (build_options.cpp calls it after every row is applied).
#pragma once

#include "config/layering.hpp"
#include "config/options.hpp"
#include "util/error.hpp"

#include <string_view>

namespace gangrun::config {

// --ssh_port: 1..65535.
Expected<int> parse_ssh_port(std::string_view text);

// Reads the hostfile options.hosts names (its rows typed the flags already)
// and sets the hosts and the core options they stand for; usage errors name
// the option as given.
Expected<void> type_hosts_values(const LayeredValues& values, Options& options);

// Reads the hostfile alone, for when another value did not type and
// type_hosts_values does not run: a hostfile that cannot be read or parsed is
// reported with the other problems. Nothing when no hostfile is given.
Expected<void> check_hostfile_alone(const Options& options);

}  // namespace gangrun::config
