// An in-memory AsyncStore for unit tests of the store's users (the node
// agent, the rendezvous). Its data and semantics are the server's own
// (KeySpaces and StoreState, as a validated-dialect connection sees them),
// so a wait ends when another client of the same store writes the key, and
// timeouts behave as AsyncClient's do. Several clients share one store
// through another_client(). Faults for tests: fail_with() makes operations
// fail at once, go_silent() makes them never answer (they time out).
#pragma once

#include "store/async_store.hpp"

#include <boost/asio/io_context.hpp>

#include <chrono>
#include <cstdint>
#include <memory>
#include <optional>

namespace gangrun::store {

class FakeStore final : public AsyncStore {
 public:
  // A new, empty store in round 0, and its first client.
  explicit FakeStore(boost::asio::io_context& io,
                     std::chrono::milliseconds timeout = std::chrono::minutes(5));
  // Forgets its pending wait; pending callbacks are never called.
  FakeStore(const FakeStore&) = delete;
  FakeStore& operator=(const FakeStore&) = delete;
  ~FakeStore() override;

  // Another client of the same store, with its own connection and queue.
  std::unique_ptr<FakeStore> another_client() const;

  // While set, every operation this client serves fails with error.
  void fail_with(std::optional<Error> error);
  // While true, operations this client serves get no answer and time out.
  void go_silent(bool silent);
  // Server::begin_round for this store: clients created from now on join
  // round; earlier rounds' keys are deleted.
  void begin_round(std::uint64_t round);

 protected:
  void submit(PendingCall call) override;
  std::chrono::milliseconds default_timeout() const override;

 private:
  struct Shared;
  struct Impl;
  FakeStore(boost::asio::io_context& io, std::chrono::milliseconds timeout,
            std::shared_ptr<Shared> shared);
  std::unique_ptr<Impl> impl_;
};

}  // namespace gangrun::store
