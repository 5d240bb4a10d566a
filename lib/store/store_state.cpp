#include "store/store_state.hpp"

#include "util/strings.hpp"

#include <algorithm>
#include <string_view>
#include <unordered_set>

namespace gangrun::store {
namespace {

// Keys are arbitrary bytes; a close reason ends up in a log line.
std::string printable(std::string_view key) {
  constexpr std::size_t k_shown = 64;
  std::string out = "\"";
  for (char c : key.substr(0, k_shown)) {
    bool plain = c >= 0x20 && c < 0x7f && c != '"' && c != '\\';
    out += plain ? c : '?';
  }
  out += key.size() > k_shown ? "\"..." : "\"";
  return out;
}

std::string one_byte(std::uint8_t value) { return std::string(1, static_cast<char>(value)); }

// The fields each op reads (codec.hpp's Request). The decoder only produces
// these shapes; checking costs little and turns a decoder bug into a closed
// connection instead of an out-of-range read.
bool well_formed(const Request& request) {
  std::size_t keys = request.keys.size();
  std::size_t values = request.values.size();
  switch (request.op) {
    case Op::set:
    case Op::append:
    case Op::queue_push:
      return keys == 1 && values == 1;
    case Op::compare_set:
      return keys == 1 && values == 2;
    case Op::get:
    case Op::delete_key:
    case Op::watch_key:
    case Op::queue_pop:
    case Op::queue_len:
    case Op::add:
    case Op::barrier:
      return keys == 1;
    case Op::multi_set:
      return keys == values;
    default:
      return true;
  }
}

}  // namespace

StoreState::StoreState(Limits limits, std::shared_ptr<StoredTotal> total)
    : limits_(limits), total_(total ? std::move(total) : std::make_shared<StoredTotal>()) {}

StoreState::~StoreState() { drop_keys(); }

void StoreState::handle(ConnectionId from, Dialect dialect, const Request& request,
                        Effects& effects, const Writer& writer) {
  if (dialect != Dialect::validated) cancel_wait(from);
  if (!well_formed(request)) {
    effects.close_reason = "malformed " + std::string(op_name(request.op)) + " request";
    return;
  }

  switch (request.op) {
    case Op::set:
    case Op::append:
    case Op::multi_set:
    case Op::compare_set:
    case Op::delete_key:
      return handle_write(request, writer, effects);
    case Op::get:
    case Op::multi_get:
    case Op::check:
    case Op::num_keys:
    case Op::list_keys:
      return handle_read(request, effects);
    case Op::add:
    case Op::barrier:
      return handle_counter(from, request, writer, effects);
    case Op::queue_push:
    case Op::queue_pop:
    case Op::queue_len:
      return handle_queue(request, writer, effects);
    case Op::wait:
    case Op::cancel_wait:
      return handle_wait(from, request, effects);
    case Op::validate:
      return;  // the codec checked the magic; PyTorch sends no reply
    case Op::ping:
      return put_u32(effects.reply, request.word);
    case Op::watch_key:
      // Only 1.13's idle second connection sends this and nothing in init or
      // torchrun relies on the callbacks, so we acknowledge the registration
      // and never send the unsolicited update messages.
      return put_u8(effects.reply, k_watch_callback_registered);
  }
}

void StoreState::handle_write(const Request& request, const Writer& writer, Effects& effects) {
  const std::vector<std::string>& keys = request.keys;
  const std::vector<std::string>& values = request.values;
  switch (request.op) {
    case Op::set: {
      if (!admit(replacing(keys[0], values[0].size(), writer), writer, effects)) return;
      put_value(keys[0], values[0], writer.account);
      return wake_all(keys[0], effects);
    }
    case Op::append: {
      // The whole entry moves to its last writer, as a SET of the joined value would.
      auto it = values_.find(keys[0]);
      if (it == values_.end()) {
        if (!admit(replacing(keys[0], values[0].size(), writer), writer, effects)) return;
        put_value(keys[0], values[0], writer.account);
        return wake_all(keys[0], effects);
      }
      Entry& entry = it->second;
      std::size_t joined = entry.bytes.size() + values[0].size();
      if (!admit(replacing(keys[0], joined, writer), writer, effects)) return;
      remove_bytes(keys[0].size() + entry.bytes.size(), entry.owner);
      entry.bytes.append(values[0]);
      entry.owner = writer.account;
      add_bytes(keys[0].size() + entry.bytes.size(), entry.owner);
      return wake_all(keys[0], effects);
    }
    case Op::multi_set: {
      // All or nothing against the byte limits, so work out the final sizes
      // first; a key may repeat within one request, the last value winning.
      Change change{.after = stored_bytes_};
      std::unordered_map<std::string_view, std::size_t> earlier;
      for (std::size_t i = 0; i < keys.size(); ++i) {
        std::size_t entry = keys[i].size() + values[i].size();
        auto [seen, first_time] = earlier.try_emplace(keys[i], entry);
        if (!first_time) {
          change.after = change.after - seen->second + entry;
          change.gained = change.gained - seen->second + entry;
          seen->second = entry;
          continue;
        }
        Change one = replacing(keys[i], values[i].size(), writer);
        change.after = change.after - stored_bytes_ + one.after;
        change.gained += one.gained;
        change.lost += one.lost;
      }
      if (!admit(change, writer, effects)) return;
      for (std::size_t i = 0; i < keys.size(); ++i) {
        put_value(keys[i], values[i], writer.account);
        wake_all(keys[i], effects);
      }
      return;
    }
    case Op::compare_set: {
      const std::string& expected = values[0];
      const std::string& desired = values[1];
      auto it = values_.find(keys[0]);
      bool matches = it == values_.end() ? expected.empty() : it->second.bytes == expected;
      if (!matches) {
        return put_bytes(effects.reply, it == values_.end() ? expected : it->second.bytes);
      }
      if (!admit(replacing(keys[0], desired.size(), writer), writer, effects)) return;
      put_value(keys[0], desired, writer.account);
      put_bytes(effects.reply, desired);
      // PyTorch's libuv server wakes here, its older server does not; waking
      // is the superset (a waiter only ever wants to know the key exists).
      return wake_all(keys[0], effects);
    }
    case Op::delete_key: {
      // Pending waits on the key stay as they are, as in PyTorch.
      auto it = values_.find(keys[0]);
      if (it == values_.end()) return put_i64(effects.reply, 0);
      remove_bytes(it->first.size() + it->second.bytes.size(), it->second.owner);
      values_.erase(it);
      return put_i64(effects.reply, 1);
    }
    default:
      return;
  }
}

void StoreState::handle_read(const Request& request, Effects& effects) {
  switch (request.op) {
    case Op::get: {
      // PyTorch's older server drops the connection on a missing key and the
      // libuv one answers empty; clients always WAIT first, so either is safe.
      auto it = values_.find(request.keys[0]);
      return put_bytes(effects.reply, it == values_.end() ? std::string_view()
                                                          : std::string_view(it->second.bytes));
    }
    case Op::multi_get: {
      // Sized first: one key may be asked for many times, so a small request
      // can ask for gigabytes.
      std::vector<std::string_view> found;
      found.reserve(request.keys.size());
      std::size_t size = 0;
      for (const std::string& key : request.keys) {
        auto it = values_.find(key);
        found.push_back(it == values_.end() ? std::string_view()
                                            : std::string_view(it->second.bytes));
        size += sizeof(std::uint64_t) + found.back().size();
      }
      if (!reply_fits(limits_, request.op, size, effects)) return;
      effects.reply.reserve(effects.reply.size() + size);
      for (std::string_view value : found) put_bytes(effects.reply, value);
      return;
    }
    case Op::check: {
      bool ready = std::all_of(request.keys.begin(), request.keys.end(),
                               [this](const std::string& key) { return exists(key); });
      return put_u8(effects.reply, ready ? k_check_ready : k_check_not_ready);
    }
    case Op::num_keys:
      return put_i64(effects.reply, static_cast<std::int64_t>(values_.size()));
    case Op::list_keys: {
      std::vector<std::string_view> keys;
      append_key_names(keys);
      return reply_key_list(limits_, std::move(keys), effects);
    }
    default:
      return;
  }
}

void StoreState::handle_counter(ConnectionId from, const Request& request, const Writer& writer,
                                Effects& effects) {
  const std::string& key = request.keys[0];
  if (request.op == Op::add) {
    std::optional<std::int64_t> value = add_to_counter(key, request.number, writer, effects);
    if (!value) return;
    put_i64(effects.reply, *value);
    return wake_all(key, effects);
  }

  // BARRIER as PyTorch's servers implement it (TCPStoreBackend.cpp
  // barrierHandler, TCPStoreLibUvBackend.cpp LibUVStoreDaemon::barrier): add
  // 1 to the counter at key; the arrival that reaches world_size is answered
  // at once and releases everything waiting on key, exactly like a write of
  // it; an earlier arrival waits on key as if for one missing key and wakes
  // nobody. So a later SET of the key releases barrier waiters too, and a
  // plain WAIT on the key ends only when the barrier completes.
  cancel_wait(from);  // a connection has at most one pending wait
  std::optional<std::int64_t> count = add_to_counter(key, 1, writer, effects);
  if (!count) return;
  if (*count >= request.number) {
    put_u8(effects.reply, k_wait_stop_waiting);
    return wake_all(key, effects);
  }
  register_waiter(from, {key});
}

void StoreState::handle_queue(const Request& request, const Writer& writer, Effects& effects) {
  const std::string& key = request.keys[0];
  auto it = queues_.find(key);
  switch (request.op) {
    case Op::queue_push: {
      std::size_t added = request.values[0].size() + (it == queues_.end() ? key.size() : 0);
      if (!admit({.after = stored_bytes_ + added, .gained = added}, writer, effects)) return;
      Queue& queue = queues_[key];
      if (it == queues_.end()) {
        queue.key_owner = writer.account;
        add_bytes(key.size(), writer.account);
      }
      queue.items.push_back({request.values[0], writer.account});
      add_bytes(request.values[0].size(), writer.account);
      // One item for one popper: a blocked pop is a WAIT on the key followed
      // by QUEUE_POP, so waking them all would only make the rest find the
      // queue empty again.
      return wake_oldest(key, effects);
    }
    case Op::queue_pop: {
      if (it == queues_.end()) return put_i64(effects.reply, 0);
      std::deque<Entry>& items = it->second.items;
      put_i64(effects.reply, static_cast<std::int64_t>(items.size()));
      put_bytes(effects.reply, items.front().bytes);
      remove_bytes(items.front().bytes.size(), items.front().owner);
      items.pop_front();
      if (items.empty()) {
        remove_bytes(it->first.size(), it->second.key_owner);
        queues_.erase(it);
      }
      return;
    }
    case Op::queue_len:
      return put_i64(effects.reply,
                     it == queues_.end() ? 0 : static_cast<std::int64_t>(it->second.items.size()));
    default:
      return;
  }
}

void StoreState::handle_wait(ConnectionId from, const Request& request, Effects& effects) {
  // A 2.x client sends CANCEL_WAIT after its own timeout. If the wait
  // completed meanwhile it has STOP_WAITING on the wire already and reads on
  // until WAIT_CANCELED, so the answer is the same either way.
  cancel_wait(from);
  if (request.op == Op::cancel_wait) return put_u8(effects.reply, k_wait_canceled);

  std::vector<std::string> missing;
  if (request.keys.size() == 1) {
    if (!exists(request.keys[0])) missing.push_back(request.keys[0]);
  } else {
    std::unordered_set<std::string_view> seen;
    for (const std::string& key : request.keys) {
      if (!exists(key) && seen.insert(key).second) missing.push_back(key);
    }
  }
  if (missing.empty()) return put_u8(effects.reply, k_wait_stop_waiting);
  register_waiter(from, std::move(missing));
}

void StoreState::disconnect(ConnectionId connection) { cancel_wait(connection); }

void StoreState::clear() {
  drop_keys();
  waiters_by_key_.clear();
  waiters_.clear();
}

void StoreState::drop_keys() {
  // Each entry's account outlives it (its connections may hold it), so
  // every one is given back its bytes.
  for (const auto& [key, entry] : values_) {
    if (entry.owner) entry.owner->bytes -= key.size() + entry.bytes.size();
  }
  for (const auto& [key, queue] : queues_) {
    if (queue.key_owner) queue.key_owner->bytes -= key.size();
    for (const Entry& item : queue.items) {
      if (item.owner) item.owner->bytes -= item.bytes.size();
    }
  }
  values_.clear();
  queues_.clear();
  total_->bytes -= stored_bytes_;
  stored_bytes_ = 0;
}

std::size_t StoreState::key_count() const { return values_.size(); }

std::size_t StoreState::stored_bytes() const { return stored_bytes_; }

bool StoreState::is_waiting(ConnectionId connection) const {
  return waiters_.find(connection) != waiters_.end();
}

void StoreState::append_key_names(std::vector<std::string_view>& names) const {
  for (const auto& entry : values_) names.push_back(entry.first);
}

std::optional<std::string> StoreState::value_of(const std::string& key) const {
  auto found = values_.find(key);
  if (found == values_.end()) return std::nullopt;
  return found->second.bytes;
}

bool StoreState::exists(const std::string& key) const {
  return values_.find(key) != values_.end() || queues_.find(key) != queues_.end();
}

void reply_key_list(const Limits& limits, std::vector<std::string_view> keys, Effects& effects) {
  std::size_t size = sizeof(std::int64_t);
  for (std::string_view key : keys) size += sizeof(std::uint64_t) + key.size();
  if (!reply_fits(limits, Op::list_keys, size, effects)) return;
  // Sorted so that the answer does not depend on hashing.
  std::sort(keys.begin(), keys.end());
  put_i64(effects.reply, static_cast<std::int64_t>(keys.size()));
  for (std::string_view key : keys) put_bytes(effects.reply, key);
}

bool reply_fits(const Limits& limits, Op op, std::size_t bytes, Effects& effects) {
  if (bytes <= limits.max_reply_bytes) return true;
  effects.close_reason = "the reply to " + std::string(op_name(op)) + " would be " +
                         std::to_string(bytes) + " bytes, over the " +
                         std::to_string(limits.max_reply_bytes) + "-byte reply limit";
  return false;
}

StoreState::Change StoreState::replacing(const std::string& key, std::size_t value_size,
                                         const Writer& writer) const {
  Change change{.after = stored_bytes_ + key.size() + value_size,
                .gained = key.size() + value_size};
  auto it = values_.find(key);
  if (it == values_.end()) return change;
  std::size_t old = key.size() + it->second.bytes.size();
  change.after -= old;
  if (writer.account && it->second.owner == writer.account) change.lost = old;
  return change;
}

bool StoreState::admit(const Change& change, const Writer& writer, Effects& effects) const {
  // Every state sharing the tally counts: change.after - stored_bytes_ is
  // this write's change, which may be negative. A change that does not grow
  // what a limit counts is let through even over it: a trusted writer may
  // have taken the store past max_total_bytes into its reserve.
  std::size_t total_after = total_->bytes - stored_bytes_ + change.after;
  std::size_t store_limit = limits_.max_total_bytes + writer.reserve;
  std::string reason;
  if (change.after > stored_bytes_ && total_after > store_limit) {
    reason = "the store is full: " + std::to_string(total_->bytes) + " of " +
             std::to_string(limits_.max_total_bytes) + " bytes used";
    if (writer.reserve > 0) {
      reason += ", and " + std::to_string(writer.reserve) + " more reserved for the agents' keys";
    }
    reason += "; this write would need " + std::to_string(total_after - total_->bytes) +
              " more (raise the limit with --max-store-bytes N)";
  } else if (writer.account && limits_.max_bytes_per_address > 0 && change.gained > change.lost &&
             writer.account->bytes + change.gained - change.lost > limits_.max_bytes_per_address) {
    reason = "the keys written from its address would hold " +
             std::to_string(writer.account->bytes + change.gained - change.lost) +
             " bytes, over the " + std::to_string(limits_.max_bytes_per_address) +
             "-byte limit per address (raise it with --max-store-bytes-per-address N, 0 for no "
             "limit)";
  } else {
    return true;
  }
  if (writer.trusted) {
    effects.overrun = std::move(reason);
    return true;
  }
  effects.close_reason = std::move(reason);
  effects.refused_for_bytes = true;
  return false;
}

void StoreState::add_bytes(std::size_t bytes, const std::shared_ptr<ByteAccount>& owner) {
  stored_bytes_ += bytes;
  total_->bytes += bytes;
  if (owner) owner->bytes += bytes;
}

void StoreState::remove_bytes(std::size_t bytes, const std::shared_ptr<ByteAccount>& owner) {
  stored_bytes_ -= bytes;
  total_->bytes -= bytes;
  if (owner) owner->bytes -= bytes;
}

void StoreState::put_value(const std::string& key, std::string value,
                           const std::shared_ptr<ByteAccount>& owner) {
  auto [it, inserted] = values_.try_emplace(key);
  if (!inserted) remove_bytes(key.size() + it->second.bytes.size(), it->second.owner);
  it->second.bytes = std::move(value);
  it->second.owner = owner;
  add_bytes(key.size() + it->second.bytes.size(), owner);
}

std::optional<std::int64_t> StoreState::add_to_counter(const std::string& key, std::int64_t delta,
                                                       const Writer& writer, Effects& effects) {
  // PyTorch's server keeps counters as decimal text and throws (dropping the
  // connection) when std::stoll cannot read the stored value.
  std::int64_t current = 0;
  auto it = values_.find(key);
  if (it != values_.end()) {
    std::optional<std::int64_t> parsed = strings::parse_int(it->second.bytes);
    if (!parsed) {
      effects.close_reason =
          "cannot add to key " + printable(key) + ": its value is not a decimal integer";
      return std::nullopt;
    }
    current = *parsed;
  }
  std::int64_t next = 0;
  if (__builtin_add_overflow(current, delta, &next)) {
    effects.close_reason = "cannot add " + std::to_string(delta) + " to key " + printable(key) +
                           ": " + std::to_string(current) + " would overflow a 64-bit integer";
    return std::nullopt;
  }
  std::string text = std::to_string(next);
  if (!admit(replacing(key, text.size(), writer), writer, effects)) return std::nullopt;
  put_value(key, std::move(text), writer.account);
  return next;
}

// ---- waiting -----------------------------------------------------------------

void StoreState::register_waiter(ConnectionId connection, std::vector<std::string> keys) {
  std::uint64_t ticket = ++next_ticket_;
  for (const std::string& key : keys) {
    waiters_by_key_[key].registrations.push_back({connection, ticket});
  }
  std::size_t missing = keys.size();
  waiters_[connection] = Waiter{ticket, missing, std::move(keys)};
}

void StoreState::cancel_wait(ConnectionId connection) {
  auto it = waiters_.find(connection);
  if (it == waiters_.end()) return;
  std::vector<std::string> keys = std::move(it->second.keys);
  waiters_.erase(it);
  // Its registrations are stale now. Removing each from its key's list would
  // cost the list's length (8000 long when a whole job waits on one key);
  // counting them and compacting once they are half the list costs O(1) per
  // registration over time. The count may be high: a key already written
  // took the registration with it.
  for (const std::string& key : keys) {
    auto key_waiters = waiters_by_key_.find(key);
    if (key_waiters == waiters_by_key_.end()) continue;
    KeyWaiters& list = key_waiters->second;
    if (++list.stale * 2 > list.registrations.size()) drop_stale(key_waiters);
  }
}

void StoreState::wake_all(const std::string& key, Effects& effects) {
  auto key_waiters = waiters_by_key_.find(key);
  if (key_waiters == waiters_by_key_.end()) return;
  std::deque<Registration> registrations = std::move(key_waiters->second.registrations);
  waiters_by_key_.erase(key_waiters);
  for (const Registration& registration : registrations) {
    auto waiter = waiters_.find(registration.connection);
    if (waiter == waiters_.end() || waiter->second.ticket != registration.ticket) continue;
    if (--waiter->second.missing == 0) release(waiter, effects);
  }
}

void StoreState::wake_oldest(const std::string& key, Effects& effects) {
  auto key_waiters = waiters_by_key_.find(key);
  if (key_waiters == waiters_by_key_.end()) return;
  KeyWaiters& list = key_waiters->second;
  // The oldest live registration takes this write, whether or not that is
  // the last key its waiter needs. (PyTorch's libuv server instead counts
  // the write against every waiter until one is released, and keeps them
  // all registered; it only ever sees one waiter per popper.)
  while (!list.registrations.empty()) {
    Registration registration = list.registrations.front();
    list.registrations.pop_front();
    if (!is_live(registration)) {
      if (list.stale > 0) --list.stale;
      continue;
    }
    auto waiter = waiters_.find(registration.connection);
    if (--waiter->second.missing == 0) release(waiter, effects);
    break;
  }
  if (list.registrations.empty()) waiters_by_key_.erase(key_waiters);
}

void StoreState::release(std::unordered_map<ConnectionId, Waiter>::iterator waiter,
                         Effects& effects) {
  // Every key it waited for was written, and each write took its
  // registration along, so nothing of it is left in waiters_by_key_.
  effects.wakeups.emplace_back(waiter->first, one_byte(k_wait_stop_waiting));
  waiters_.erase(waiter);
}

bool StoreState::is_live(const Registration& registration) const {
  auto waiter = waiters_.find(registration.connection);
  return waiter != waiters_.end() && waiter->second.ticket == registration.ticket;
}

void StoreState::drop_stale(std::unordered_map<std::string, KeyWaiters>::iterator key_waiters) {
  KeyWaiters& list = key_waiters->second;
  std::erase_if(list.registrations,
                [this](const Registration& registration) { return !is_live(registration); });
  list.stale = 0;
  if (list.registrations.empty()) waiters_by_key_.erase(key_waiters);
}

}  // namespace gangrun::store
