#include "fake_store.hpp"

#include "store/call_queue.hpp"
#include "store/key_spaces.hpp"

#include <boost/asio/post.hpp>

#include <unordered_map>

namespace gangrun::store {

namespace asio = boost::asio;

// The store itself, shared by its clients.
struct FakeStore::Shared {
  KeySpaces spaces{Limits{}};
  ConnectionId next_id = 1;
  // Each client by its connection, for delivering wakeups.
  std::unordered_map<ConnectionId, FakeStore::Impl*> clients;
};

struct FakeStore::Impl {
  Impl(asio::io_context& io_context, std::chrono::milliseconds default_timeout,
       std::shared_ptr<Shared> shared_store)
      : io(io_context),
        timeout(default_timeout),
        shared(std::move(shared_store)),
        id(shared->next_id++),
        membership(shared->spaces.join()),
        calls(io_context, "fake store", [this] { serving_expired(); }) {
    shared->clients.emplace(id, this);
  }

  Impl(const Impl&) = delete;
  Impl& operator=(const Impl&) = delete;
  ~Impl() {
    *alive = false;
    shared->spaces.disconnect(membership, id);
    shared->clients.erase(id);
  }

  asio::io_context& io;
  std::chrono::milliseconds timeout;
  std::shared_ptr<Shared> shared;
  ConnectionId id;
  RoundMembership membership;
  CallQueue calls;
  std::optional<Error> failure;
  bool silent = false;
  bool waiting = false;  // the call being served is a WAIT the store holds
  bool pump_posted = false;
  std::shared_ptr<bool> alive = std::make_shared<bool>(true);

  // Serving happens in a handler of its own, as a reply from a socket
  // would: a write that wakes another client never runs that client's next
  // call inside this one.
  void schedule_pump() {
    if (pump_posted) return;
    pump_posted = true;
    asio::post(io, [this, alive = alive] {
      if (!*alive) return;
      pump_posted = false;
      pump();
    });
  }

  void pump() {
    PendingCall* call = calls.start_next();
    if (!call) return;
    if (failure) {
      calls.finish_serving(failure);
      return schedule_pump();
    }
    if (silent) return;  // its deadline will end it
    Effects effects;
    shared->spaces.handle(membership, id, Dialect::validated, call->request, effects);
    for (auto& [connection, bytes] : effects.wakeups) {
      auto client = shared->clients.find(connection);
      if (client != shared->clients.end()) client->second->woken(bytes);
    }
    if (effects.close_reason) {
      shared->spaces.disconnect(membership, id);
      calls.finish_serving(Error(ErrorCode::store,
                                 "the fake store closed the connection: " + *effects.close_reason));
      return schedule_pump();
    }
    if (!take_reply(effects.reply)) waiting = true;
  }

  // Reads a reply into the call being served; false while it is incomplete
  // (a WAIT that waits).
  bool take_reply(const std::string& bytes) {
    PendingCall* call = calls.serving();
    if (!call) return true;
    ReplyReader reader(bytes);
    Expected<bool> complete = call->read_reply(reader);
    if (complete && !*complete) return false;
    calls.finish_serving(complete ? std::nullopt : std::optional<Error>(complete.error()));
    schedule_pump();
    return true;
  }

  void woken(const std::string& bytes) {
    if (!waiting) return;
    waiting = false;
    take_reply(bytes);
  }

  void serving_expired() {
    PendingCall* call = calls.serving();
    Error error = calls.timeout_error(*call);
    if (waiting) {
      waiting = false;
      Effects ignored;
      shared->spaces.handle(membership, id, Dialect::validated, make_request(Op::cancel_wait),
                            ignored);
    }
    calls.finish_serving(std::move(error));
    schedule_pump();
  }
};

FakeStore::FakeStore(asio::io_context& io, std::chrono::milliseconds timeout)
    : FakeStore(io, timeout, std::make_shared<Shared>()) {}

FakeStore::FakeStore(asio::io_context& io, std::chrono::milliseconds timeout,
                     std::shared_ptr<Shared> shared)
    : impl_(std::make_unique<Impl>(io, timeout, std::move(shared))) {}

FakeStore::~FakeStore() = default;

std::unique_ptr<FakeStore> FakeStore::another_client() const {
  return std::unique_ptr<FakeStore>(new FakeStore(impl_->io, impl_->timeout, impl_->shared));
}

void FakeStore::fail_with(std::optional<Error> error) { impl_->failure = std::move(error); }

void FakeStore::go_silent(bool silent) { impl_->silent = silent; }

void FakeStore::begin_round(std::uint64_t round) { impl_->shared->spaces.begin_round(round); }

void FakeStore::submit(PendingCall call) {
  impl_->calls.push(std::move(call));
  impl_->schedule_pump();
}

std::chrono::milliseconds FakeStore::default_timeout() const { return impl_->timeout; }

}  // namespace gangrun::store
