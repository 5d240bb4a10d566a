// `gangrun store ...`: carries out a parsed StoreCommand (config/store_cli.hpp)
// with store::Server or store::Client.
#pragma once

#include "config/store_cli.hpp"
#include "util/error.hpp"

namespace gangrun::launch {

// Runs the command to its end and returns the exit code: 0 when done, 1 for
// a negative answer (check: a key is missing; delete: there was no such key).
// Failures are Errors: ErrorCode::store when the store cannot be reached,
// times out or refuses (exit 3), ErrorCode::io for stdin, stdout or
// --port-file. serve runs the server on this thread until SIGINT or SIGTERM,
// then returns 0.
Expected<int> run_store_command(const config::StoreCommand& command);

}  // namespace gangrun::launch
