// `gangrun store ...`: operate a TCP store from a shell. The words after
// "store" become one plain StoreCommand, checked whole before anything
// connects or binds; commands/store_command.cpp carries it out. The actions
// and options are those of config/command_table.hpp.
#pragma once

#include "config/command_table.hpp"
#include "store/default_port.hpp"
#include "util/env.hpp"
#include "util/error.hpp"

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace gangrun::config {

// legacy: PyTorch 1.13's own server; validated: PyTorch 2.x and gangrun's.
enum class StoreDialect { validated, legacy };

// `gangrun store serve`. Unset limits keep the server's defaults.
struct StoreServeOptions {
  std::string host = "127.0.0.1";
  int port = store::k_default_port;  // 0: an ephemeral port
  std::string port_file;             // empty: none; else the bound port is written there
  std::optional<std::size_t> max_key_bytes;
  std::optional<std::size_t> max_value_bytes;
  std::optional<std::size_t> max_keys_per_request;
  std::optional<std::size_t> max_store_bytes;
  std::optional<std::size_t> max_connections;
  std::optional<std::size_t> max_connections_per_address;  // 0: no cap
  std::optional<std::size_t> max_store_bytes_per_address;  // 0: no quota
};

// Every other subcommand is a client of a running store.
struct StoreClientOptions {
  std::string host = "127.0.0.1";
  int port = store::k_default_port;
  // For connecting, and for each operation (a wait included).
  std::chrono::milliseconds timeout{300000};
  StoreDialect dialect = StoreDialect::validated;
  // false: "/" is put before every key (and stripped from listed keys), as
  // PyTorch's TCPStore client does, so names match what Python code uses.
  bool raw_keys = false;
};

struct StoreCommand {
  StoreAction action = StoreAction::help;
  std::string help_text;  // action == help: what to print
  StoreServeOptions serve;
  StoreClientOptions client;
  // As typed, without the "/" prefix: get, set, add, delete_key use keys[0];
  // wait and check use them all (at least one).
  std::vector<std::string> keys;
  std::optional<std::string> value;  // set; nullopt: read standard input to its end
  std::int64_t delta = 1;            // add
};

// args are the words after "store". The endpoint, when --endpoint is not
// given, comes from GANGRUN_STORE_ENDPOINT, else MASTER_ADDR and MASTER_PORT
// in env, else 127.0.0.1:29500. Every problem is an ErrorCode::usage error
// naming the option, argument or variable at fault. Pure; never prints.
Expected<StoreCommand> parse_store_command(const std::vector<std::string>& args, const EnvMap& env);

// "HOST:PORT", "[V6ADDR]:PORT", or HOST alone (port 29500). what names the
// source in messages ("--endpoint", "GANGRUN_STORE_ENDPOINT").
struct HostPort {
  std::string host;
  int port = 0;
};
Expected<HostPort> parse_endpoint(const std::string& text, const std::string& what);

}  // namespace gangrun::config
