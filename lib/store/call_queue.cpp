#include "store/call_queue.hpp"

#include "store/client_common.hpp"

#include <boost/asio/post.hpp>

#include <algorithm>

namespace gangrun::store {

namespace asio = boost::asio;

CallQueue::CallQueue(asio::io_context& io, std::string where,
                     std::function<void()> on_serving_expired)
    : io_(io), where_(std::move(where)), on_serving_expired_(std::move(on_serving_expired)) {}

CallQueue::~CallQueue() { abandon(); }

void CallQueue::push(PendingCall call) {
  Entry& entry = entries_.emplace_back(next_id_++, std::move(call), io_);
  entry.timer.expires_after(entry.call.timeout);
  // A timer that fired just before its entry finished still runs its
  // handler: the id finds nothing then.
  entry.timer.async_wait([this, alive = alive_, id = entry.id](boost::system::error_code error) {
    if (!*alive || error) return;
    expired(id);
  });
}

PendingCall* CallQueue::start_next() {
  if (entries_.empty() || entries_.front().serving) return nullptr;
  entries_.front().serving = true;
  return &entries_.front().call;
}

PendingCall* CallQueue::serving() {
  if (entries_.empty() || !entries_.front().serving) return nullptr;
  return &entries_.front().call;
}

void CallQueue::finish_serving(std::optional<Error> error) {
  if (!serving()) return;
  deliver(entries_.front(), std::move(error));
  entries_.pop_front();
}

void CallQueue::fail_all(const Error& error) {
  std::list<Entry> failed = std::move(entries_);
  entries_.clear();
  for (Entry& entry : failed) deliver(entry, error);
}

void CallQueue::abandon() {
  *alive_ = false;
  entries_.clear();  // cancels the timers; their handlers see alive_ false
}

Error CallQueue::timeout_error(const PendingCall& call) const {
  return timed_out_error(call.request, where_, call.timeout);
}

void CallQueue::expired(std::uint64_t id) {
  auto entry = std::find_if(entries_.begin(), entries_.end(),
                            [id](const Entry& candidate) { return candidate.id == id; });
  if (entry == entries_.end()) return;
  if (entry->serving) return on_serving_expired_();
  deliver(*entry, timeout_error(entry->call));
  entries_.erase(entry);
}

void CallQueue::deliver(Entry& entry, std::optional<Error> error) {
  entry.timer.cancel();
  asio::post(io_, [alive = alive_, deliver = std::move(entry.call.deliver),
                   error = std::move(error)]() mutable {
    if (*alive) deliver(std::move(error));
  });
}

}  // namespace gangrun::store
