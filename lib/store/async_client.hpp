// AsyncStore over TCP, on the caller's io_context: a client of gangrun's
// store or of any PyTorch TCPStore, in either dialect (ClientSettings).
//
// It connects when the first operation needs it, retrying with backoff until
// settings.connect_timeout (the validated dialect's VALIDATE + PING
// included); if that fails every queued operation fails with the error, and
// the next operation tries again. One request is in flight at a time.
// An operation that times out while in flight leaves the connection usable:
// a WAIT is cancelled on the server (CANCEL_WAIT, validated dialect); any
// other request, and a WAIT in the legacy dialect, closes the connection,
// which the next operation opens again. A connection that breaks fails the
// operation in flight; the next one reconnects.
//
// Names are resolved synchronously on the loop (Asio's asynchronous resolver
// runs a hidden thread): give an address literal where a slow DNS would hurt.
#pragma once

#include "store/async_store.hpp"
#include "store/client.hpp"

#include <boost/asio/io_context.hpp>

#include <memory>
#include <optional>
#include <string>

namespace gangrun::store {

class AsyncClient final : public AsyncStore {
 public:
  // Does not connect yet; nothing fails here.
  AsyncClient(boost::asio::io_context& io, ClientSettings settings);
  AsyncClient(const AsyncClient&) = delete;
  AsyncClient& operator=(const AsyncClient&) = delete;
  // Closes the connection; pending callbacks are never called. (Never throws: see the
  // definition.)
  ~AsyncClient() override;  // NOLINT(bugprone-exception-escape)

  // The numeric addresses at both ends of the last connection made (this
  // host's, then the store's); nullopt before the first one. The local one
  // is the address this host reaches the store from.
  struct Ends {
    std::string local_address;
    std::string store_address;
  };
  std::optional<Ends> connection_ends() const;

 protected:
  void submit(PendingCall call) override;
  std::chrono::milliseconds default_timeout() const override;

 private:
  struct Impl;
  std::shared_ptr<Impl> impl_;  // shared with its pending handlers
};

}  // namespace gangrun::store
