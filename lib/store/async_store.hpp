// The store as the node agent uses it: asynchronous operations on the
// agent's io_context, each with a timeout. Two implementations: AsyncClient
// (async_client.hpp), a TCP client of any TCPStore-compatible server, and
// FakeStore (tests/unit/fake_store.hpp), an in-memory store for unit tests with the same
// semantics (it runs the server's own StoreState).
//
// Callbacks always run on the io_context, never inside the call that started
// the operation, and only while the store object exists: destroying it drops
// its pending operations without calling their callbacks. Operations of one
// store complete in the order they were started: one is served at a time, so
// a WAIT holds back whatever was started after it (use a second store object
// for traffic that must not queue behind a wait). Single-threaded: call only
// from the thread that runs the io_context.
//
// Every operation fails with ErrorCode::store when the store cannot be
// reached, breaks the connection, or does not finish within the timeout (the
// message says it timed out). A timed-out operation never disturbs the next:
// the next operation on the same store works normally.
#pragma once

#include "store/codec.hpp"
#include "util/error.hpp"

#include <chrono>
#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <vector>

namespace gangrun::store {

// One operation as an implementation sees it: the request to run, its
// timeout, and how its reply is read and handed to the caller.
struct PendingCall {
  Request request;
  std::chrono::milliseconds timeout{0};
  // Reads the reply from the bytes received so far: false while it is
  // incomplete, an error for a reply no store would send, true once the
  // result is kept for deliver. A request without a reply (SET) is complete
  // at once, on no bytes.
  std::function<Expected<bool>(ReplyReader&)> read_reply;
  // Runs the caller's callback: with the kept result, or with error.
  std::function<void(std::optional<Error>)> deliver;
};

class AsyncStore {
 public:
  template <typename T>
  using Done = std::function<void(Expected<T>)>;
  // nullopt: the store's default timeout (its settings').
  using Timeout = std::optional<std::chrono::milliseconds>;

  virtual ~AsyncStore() = default;
  AsyncStore() = default;
  AsyncStore(const AsyncStore&) = delete;
  AsyncStore& operator=(const AsyncStore&) = delete;

  void set(std::string key, std::string value, Done<void> done, Timeout timeout = std::nullopt);
  // Waits for the key, then reads it, as PyTorch's get does; the timeout
  // holds for each of the two steps.
  void get(std::string key, Done<std::string> done, Timeout timeout = std::nullopt);
  // The counter at key plus delta (a missing key counts as 0).
  void add(std::string key, std::int64_t delta, Done<std::int64_t> done,
           Timeout timeout = std::nullopt);
  // PyTorch's compare_set: the value stored afterwards (or expected, when the
  // key is missing and expected is not empty).
  void compare_set(std::string key, std::string expected, std::string desired,
                   Done<std::string> done, Timeout timeout = std::nullopt);
  // Whether every key exists now.
  void check(std::vector<std::string> keys, Done<bool> done, Timeout timeout = std::nullopt);
  // Completes once every key exists. On timeout the store forgets the wait
  // (CANCEL_WAIT, or a new connection in the legacy dialect), so a key
  // written later cannot answer a later operation.
  void wait(std::vector<std::string> keys, Done<void> done, Timeout timeout = std::nullopt);
  // Whether the key existed.
  void delete_key(std::string key, Done<bool> done, Timeout timeout = std::nullopt);
  // GETNUMKEYS: the keys of the connection's round (key_spaces.hpp).
  void num_keys(Done<std::int64_t> done, Timeout timeout = std::nullopt);
  // Waits for every key, then reads them all (not in PyTorch 1.13's server).
  void multi_get(std::vector<std::string> keys, Done<std::vector<std::string>> done,
                 Timeout timeout = std::nullopt);

 protected:
  // Starts call after the ones already started. Never delivers inline.
  virtual void submit(PendingCall call) = 0;
  virtual std::chrono::milliseconds default_timeout() const = 0;

 private:
  template <typename T, typename Read>
  void call(Request request, Read read, Done<T> done, Timeout timeout);
};

}  // namespace gangrun::store
