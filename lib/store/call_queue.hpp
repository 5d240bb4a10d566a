// The operations of one AsyncStore implementation in the order they were
// started, each with its deadline timer (async_store.hpp). The front call is
// the one being served; the implementation takes it with start_next() and
// ends it with finish_serving(). Internal to the store module.
//
// A call whose deadline passes while it waits its turn is dropped and fails
// with a timeout at once. One whose deadline passes while it is served is
// the implementation's business (its connection may be out of step): the
// queue calls on_serving_expired, which puts things right and then calls
// finish_serving with timeout_error(). Deliveries are posted to the
// io_context, never run inline, and are dropped once abandon() was called.
#pragma once

#include "store/async_store.hpp"

#include <boost/asio/io_context.hpp>
#include <boost/asio/steady_timer.hpp>

#include <cstdint>
#include <functional>
#include <list>
#include <memory>
#include <optional>
#include <string>

namespace gangrun::store {

class CallQueue {
 public:
  // where: the store named in timeout errors ("127.0.0.1:29500").
  CallQueue(boost::asio::io_context& io, std::string where,
            std::function<void()> on_serving_expired);
  ~CallQueue();  // abandons
  CallQueue(const CallQueue&) = delete;
  CallQueue& operator=(const CallQueue&) = delete;

  void push(PendingCall call);
  bool empty() const { return entries_.empty(); }
  // Marks the front call as being served and returns it; nullptr when the
  // queue is empty or its front is served already.
  PendingCall* start_next();
  // The call being served, if any.
  PendingCall* serving();
  // Ends the call being served: delivers its result (error: the failure).
  void finish_serving(std::optional<Error> error);
  // Fails every call, served or waiting, with error.
  void fail_all(const Error& error);
  // Drops every call without delivering anything, now and later (the store
  // object is going away).
  void abandon();

  // The timeout error of call: what it was, where, and after how long.
  Error timeout_error(const PendingCall& call) const;

 private:
  struct Entry {
    Entry(std::uint64_t entry_id, PendingCall pending, boost::asio::io_context& io)
        : id(entry_id), call(std::move(pending)), timer(io) {}
    std::uint64_t id;
    PendingCall call;
    boost::asio::steady_timer timer;
    bool serving = false;
  };

  void expired(std::uint64_t id);
  void deliver(Entry& entry, std::optional<Error> error);

  boost::asio::io_context& io_;
  std::string where_;
  std::function<void()> on_serving_expired_;
  std::list<Entry> entries_;
  std::uint64_t next_id_ = 0;
  // False once abandoned: posted deliveries and timer handlers then do nothing.
  std::shared_ptr<bool> alive_ = std::make_shared<bool>(true);
};

}  // namespace gangrun::store
