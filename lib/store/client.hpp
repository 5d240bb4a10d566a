// A synchronous TCP store client, speaking either dialect, for gangrun itself,
// `gangrun store`, the tests and the benchmarks. Not thread-safe: one thread
// uses a Client at a time (like PyTorch's client, one request in flight).
//
// Keys are sent exactly as given. PyTorch's TCPStore prepends "/" to user
// keys; a caller that wants to meet PyTorch programs' keys adds it itself.
#pragma once

#include "store/default_port.hpp"
#include "store/keep_alive.hpp"
#include "store/protocol.hpp"
#include "util/error.hpp"

#include <chrono>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

namespace gangrun::store {

struct ClientSettings {
  std::string host = "127.0.0.1";
  int port = k_default_port;
  // validated: VALIDATE + PING at connect (PyTorch 2.x); legacy: PyTorch 1.13.
  Dialect dialect = Dialect::validated;
  // Connecting is retried with exponential backoff (and jitter) until this
  // much time has passed; then ErrorCode::store naming host:port.
  std::chrono::milliseconds connect_timeout{30000};
  // Every operation (and every WAIT) must finish within this; on expiry it
  // fails with ErrorCode::store and the message says it timed out.
  std::chrono::milliseconds timeout{300000};
  // Set on the connection when given (the node agents' links to the store).
  std::optional<KeepAlive> keep_alive;
};

class Client {
 public:
  static Expected<Client> connect(const ClientSettings& settings);
  Client(Client&&) noexcept;
  Client& operator=(Client&&) noexcept;
  Client(const Client&) = delete;
  Client& operator=(const Client&) = delete;
  ~Client();

  Expected<void> set(const std::string& key, const std::string& value);
  // Waits (up to the timeout) for the key, then reads it, as PyTorch's get does.
  Expected<std::string> get(const std::string& key);
  Expected<std::int64_t> add(const std::string& key, std::int64_t delta);
  // PyTorch's compare_set: returns the value now stored (or expected, when
  // the key is missing and expected is not empty).
  Expected<std::string> compare_set(const std::string& key, const std::string& expected,
                                    const std::string& desired);
  Expected<bool> check(const std::vector<std::string>& keys);
  // Waits until every key exists. On timeout the validated dialect cancels
  // the wait on the server (CANCEL_WAIT); the legacy dialect reconnects,
  // because the server may still answer the abandoned wait on that socket.
  // timeout nullopt: the settings' timeout.
  Expected<void> wait(const std::vector<std::string>& keys,
                      std::optional<std::chrono::milliseconds> timeout = std::nullopt);
  Expected<std::int64_t> num_keys();
  Expected<bool> delete_key(const std::string& key);
  // The queries below are newer than PyTorch 1.13: a 1.13 server closes the
  // connection on them. list_keys and ping exist only in the validated
  // dialect; asking for them in legacy is a usage error.
  Expected<void> append(const std::string& key, const std::string& value);
  Expected<std::vector<std::string>> multi_get(const std::vector<std::string>& keys);
  Expected<void> multi_set(const std::vector<std::string>& keys,
                           const std::vector<std::string>& values);
  Expected<std::vector<std::string>> list_keys();
  Expected<std::uint32_t> ping(std::uint32_t nonce);

 private:
  struct Impl;
  explicit Client(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

}  // namespace gangrun::store
