#include "commands/store_command.hpp"

#include "logging/logging.hpp"
#include "logmux/write_all.hpp"
#include "store/client.hpp"
#include "store/server.hpp"
#include "util/exit_codes.hpp"
#include "util/signals.hpp"
#include "util/strings.hpp"

#include <boost/asio/io_context.hpp>
#include <boost/asio/signal_set.hpp>
#include <spdlog/spdlog.h>

#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <csignal>
#include <cstdio>
#include <fstream>

namespace gangrun::commands {
namespace {

constexpr int k_negative_answer = 1;  // like test(1): "no", not a failure

// ---- serve -----------------------------------------------------------------

store::Limits limits_for(const config::StoreServeOptions& options) {
  store::Limits limits;
  if (options.max_key_bytes) limits.max_key_bytes = *options.max_key_bytes;
  if (options.max_value_bytes) limits.max_value_bytes = *options.max_value_bytes;
  if (options.max_keys_per_request) limits.max_keys_per_request = *options.max_keys_per_request;
  if (options.max_store_bytes) limits.max_total_bytes = *options.max_store_bytes;
  if (options.max_connections) limits.max_connections = *options.max_connections;
  if (options.max_store_bytes_per_address) {
    limits.max_bytes_per_address = *options.max_store_bytes_per_address;
  }
  if (options.max_connections_per_address) {
    limits.max_connections_per_address = *options.max_connections_per_address;
  }
  // COMPARE_SET carries a key and two values; a larger value limit must not
  // be undercut by the whole-request and pending-reply bounds.
  constexpr std::size_t k_framing = 1024;
  limits.max_request_bytes = std::max(
      limits.max_request_bytes, limits.max_key_bytes + 2 * limits.max_value_bytes + k_framing);
  limits.max_pending_reply_bytes =
      std::max(limits.max_pending_reply_bytes, limits.max_value_bytes + k_framing);
  limits.max_reply_bytes = std::max(limits.max_reply_bytes, limits.max_value_bytes + k_framing);
  // One connection may hold a whole request twice over while it is decoded,
  // plus its queued replies and one more reply.
  limits.max_buffered_bytes = std::max(
      limits.max_buffered_bytes,
      2 * limits.max_request_bytes + limits.max_pending_reply_bytes + limits.max_reply_bytes);
  return limits;
}

// Written whole under another name, then renamed, so a reader polling for
// the file never sees it half written.
Expected<void> write_port_file(const std::string& path, int port) {
  std::string partial = path + ".partial." + std::to_string(::getpid());
  {
    std::ofstream out(partial, std::ios::trunc);
    out << port << '\n';
    out.close();
    if (!out) {
      return fail(ErrorCode::io, "--port-file: cannot write " + partial + ": " + errno_text(errno));
    }
  }
  if (std::rename(partial.c_str(), path.c_str()) != 0) {
    int error = errno;
    std::remove(partial.c_str());
    return fail(ErrorCode::io, "--port-file: cannot create " + path + ": " + errno_text(error));
  }
  return {};
}

Expected<int> serve(const config::StoreServeOptions& options) {
  boost::asio::io_context io;
  boost::asio::signal_set stop_signals(io, SIGINT, SIGTERM);
  store::ServerSettings settings;
  settings.host = options.host;
  settings.port = options.port;
  settings.limits = limits_for(options);
  GANGRUN_TRY_ASSIGN(server, store::Server::start(io, settings));
  if (!options.port_file.empty())
    GANGRUN_TRY(write_port_file(options.port_file, (*server)->port()));
  spdlog::info("store listening on {}", strings::join((*server)->endpoints(), ", "));
  stop_signals.async_wait([&](const boost::system::error_code& error, int signal_number) {
    if (error) return;
    spdlog::info("{}: store stopping", signals::name(signal_number));
    io.stop();
  });
  io.run();
  return exit_codes::k_success;
}

// ---- clients -----------------------------------------------------------------

Expected<void> write_stdout(std::string_view bytes) {
  if (int error = logmux::write_all(STDOUT_FILENO, bytes); error != 0) {
    return fail(ErrorCode::io, "cannot write to standard output: " + errno_text(error));
  }
  return {};
}

Expected<std::string> read_stdin() {
  std::string text;
  char buffer[64 * 1024];
  for (;;) {
    ssize_t count = ::read(STDIN_FILENO, buffer, sizeof buffer);
    if (count > 0) {
      text.append(buffer, static_cast<std::size_t>(count));
    } else if (count == 0) {
      return text;
    } else if (errno != EINTR) {
      return fail(ErrorCode::io, "cannot read the value from standard input: " + errno_text(errno));
    }
  }
}

class ClientCommand {
 public:
  ClientCommand(const config::StoreCommand& command, store::Client& client)
      : command_(command), client_(client) {}

  Expected<int> run() {
    switch (command_.action) {
      case config::StoreAction::get:
        return get();
      case config::StoreAction::set:
        return set();
      case config::StoreAction::add:
        return add();
      case config::StoreAction::wait:
        return done(client_.wait(wire_keys()));
      case config::StoreAction::check:
        return yes_or_no(client_.check(wire_keys()));
      case config::StoreAction::delete_key:
        return yes_or_no(client_.delete_key(wire_key(command_.keys.at(0))));
      case config::StoreAction::keys:
        return keys();
      case config::StoreAction::num_keys:
        return print_number(client_.num_keys());
      case config::StoreAction::help:
      case config::StoreAction::serve:
        break;
    }
    return fail(ErrorCode::internal, "not a store client command");
  }

 private:
  // PyTorch's TCPStore client puts "/" before every key it sends.
  std::string wire_key(const std::string& key) const {
    return command_.client.raw_keys ? key : "/" + key;
  }
  std::vector<std::string> wire_keys() const {
    std::vector<std::string> keys;
    for (const std::string& key : command_.keys) keys.push_back(wire_key(key));
    return keys;
  }

  static Expected<int> done(const Expected<void>& result) {
    GANGRUN_TRY(result);
    return exit_codes::k_success;
  }
  static Expected<int> yes_or_no(Expected<bool> answer) {
    GANGRUN_TRY(answer);
    return *answer ? exit_codes::k_success : k_negative_answer;
  }
  static Expected<int> print_number(Expected<std::int64_t> number) {
    GANGRUN_TRY(number);
    return done(write_stdout(std::to_string(*number) + "\n"));
  }

  // The value's bytes exactly; a newline only for a person at a terminal.
  Expected<int> get() {
    GANGRUN_TRY_ASSIGN(value, client_.get(wire_key(command_.keys.at(0))));
    if (::isatty(STDOUT_FILENO) == 1) value->push_back('\n');
    return done(write_stdout(*value));
  }

  // SET has no reply, so a CHECK after it proves the store took it (a store
  // that refuses a value over its limit closes the connection instead).
  Expected<int> set() {
    GANGRUN_TRY_ASSIGN(value,
                       command_.value ? Expected<std::string>(*command_.value) : read_stdin());
    const std::string key = wire_key(command_.keys.at(0));
    GANGRUN_TRY(client_.set(key, *value));
    GANGRUN_TRY_CONTEXT(client_.check({key}), "the store did not confirm the SET");
    return exit_codes::k_success;
  }

  Expected<int> add() {
    return print_number(client_.add(wire_key(command_.keys.at(0)), command_.delta));
  }

  Expected<int> keys() {
    GANGRUN_TRY_ASSIGN(keys, client_.list_keys());
    std::sort(keys->begin(), keys->end());
    std::string out;
    for (const std::string& key : *keys) {
      bool strip = !command_.client.raw_keys && key.starts_with("/");
      out += strip ? key.substr(1) : key;
      out += '\n';
    }
    return done(write_stdout(out));
  }

  const config::StoreCommand& command_;
  store::Client& client_;
};

store::ClientSettings client_settings(const config::StoreClientOptions& options) {
  store::ClientSettings settings;
  settings.host = options.host;
  settings.port = options.port;
  settings.dialect = options.dialect == config::StoreDialect::legacy ? store::Dialect::legacy
                                                                     : store::Dialect::validated;
  settings.connect_timeout = options.timeout;
  settings.timeout = options.timeout;
  return settings;
}

}  // namespace

Expected<int> run_store_command(const config::StoreRequest& request) {
  logging::setup_logging(0, config::ColorMode::automatic);
  const config::StoreCommand& command = request.store;
  if (command.action == config::StoreAction::serve) return serve(command.serve);
  GANGRUN_TRY_ASSIGN(client, store::Client::connect(client_settings(command.client)));
  return ClientCommand(command, *client).run();
}

}  // namespace gangrun::commands
