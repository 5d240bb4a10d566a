#include "store/async_store.hpp"

#include "store/client_common.hpp"

#include <memory>
#include <type_traits>
#include <utility>

namespace gangrun::store {

// Wraps a typed parser and callback into the untyped PendingCall; the parsed
// value waits in a shared slot between read_reply and deliver.
template <typename T, typename Read>
void AsyncStore::call(Request request, Read read, Done<T> done, Timeout timeout) {
  using Value = std::conditional_t<std::is_void_v<T>, bool, T>;
  auto result = std::make_shared<std::optional<Value>>();
  PendingCall pending;
  pending.request = std::move(request);
  pending.timeout = timeout.value_or(default_timeout());
  pending.read_reply = [read = std::move(read), result](ReplyReader& reader) -> Expected<bool> {
    Parsed<Value> parsed = read(reader);
    if (!parsed) return tl::unexpected(parsed.error());
    if (!*parsed) return false;
    *result = std::move(**parsed);
    return true;
  };
  pending.deliver = [done = std::move(done), result](std::optional<Error> error) {
    if (error) return done(tl::unexpected(std::move(*error)));
    if constexpr (std::is_void_v<T>) {
      done({});
    } else {
      done(std::move(**result));
    }
  };
  submit(std::move(pending));
}

namespace {

// SET and the other requests without a reply: complete on no bytes.
Parsed<bool> no_reply(ReplyReader&) { return true; }

}  // namespace

void AsyncStore::set(std::string key, std::string value, Done<void> done, Timeout timeout) {
  call<void>(make_request(Op::set, {std::move(key)}, {std::move(value)}), no_reply, std::move(done),
             timeout);
}

void AsyncStore::get(std::string key, Done<std::string> done, Timeout timeout) {
  // Callbacks run only while this store exists, so `this` is safe here.
  wait(
      {key},
      [this, key, done = std::move(done), timeout](Expected<void> ready) mutable {
        if (!ready) return done(tl::unexpected(ready.error()));
        call<std::string>(make_request(Op::get, {std::move(key)}), read_blob, std::move(done),
                          timeout);
      },
      timeout);
}

void AsyncStore::add(std::string key, std::int64_t delta, Done<std::int64_t> done,
                     Timeout timeout) {
  call<std::int64_t>(make_request(Op::add, {std::move(key)}, {}, delta), read_i64, std::move(done),
                     timeout);
}

void AsyncStore::compare_set(std::string key, std::string expected, std::string desired,
                             Done<std::string> done, Timeout timeout) {
  call<std::string>(
      make_request(Op::compare_set, {std::move(key)}, {std::move(expected), std::move(desired)}),
      read_blob, std::move(done), timeout);
}

void AsyncStore::check(std::vector<std::string> keys, Done<bool> done, Timeout timeout) {
  call<bool>(make_request(Op::check, std::move(keys)), read_check, std::move(done), timeout);
}

void AsyncStore::wait(std::vector<std::string> keys, Done<void> done, Timeout timeout) {
  call<void>(make_request(Op::wait, std::move(keys)), read_stop_waiting, std::move(done), timeout);
}

void AsyncStore::delete_key(std::string key, Done<bool> done, Timeout timeout) {
  call<bool>(make_request(Op::delete_key, {std::move(key)}), read_deleted, std::move(done),
             timeout);
}

void AsyncStore::num_keys(Done<std::int64_t> done, Timeout timeout) {
  call<std::int64_t>(make_request(Op::num_keys), read_i64, std::move(done), timeout);
}

void AsyncStore::multi_get(std::vector<std::string> keys, Done<std::vector<std::string>> done,
                           Timeout timeout) {
  wait(
      keys,
      [this, keys, done = std::move(done), timeout](Expected<void> ready) mutable {
        if (!ready) return done(tl::unexpected(ready.error()));
        const std::size_t count = keys.size();
        call<std::vector<std::string>>(
            make_request(Op::multi_get, std::move(keys)),
            [count](ReplyReader& reader) { return read_blobs(reader, count); }, std::move(done),
            timeout);
      },
      timeout);
}

}  // namespace gangrun::store
