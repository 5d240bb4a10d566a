// `gangrun store ...`: carries out a parsed StoreCommand (config/store_cli.hpp)
// with store::Server or store::Client.
#pragma once

#include "config/cli.hpp"
#include "util/error.hpp"

namespace gangrun::commands {

// Runs the command to its end and returns the exit code: 0 when done, 1 for
// a negative answer (check: a key is missing; delete: there was no such key).
// Failures are Errors: ErrorCode::store when the store cannot be reached,
// times out or refuses (exit 3), ErrorCode::io for stdin, stdout or
// --port-file. serve runs the server on this thread until SIGINT or SIGTERM,
// then returns 0. gangrun's own messages go to stderr at the default level.
Expected<int> run_store_command(const config::StoreRequest& request);

}  // namespace gangrun::commands
