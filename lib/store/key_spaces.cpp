#include "store/key_spaces.hpp"

#include <algorithm>
#include <string>

namespace gangrun::store {
namespace {

// Requests that end a connection's pending wait wherever it lives, as
// StoreState ends it in its own space (the legacy dialect: every request).
bool ends_a_wait(Dialect dialect, Op op) {
  return dialect != Dialect::validated || op == Op::wait || op == Op::barrier ||
         op == Op::cancel_wait;
}

}  // namespace

KeySpaces::KeySpaces(Limits limits)
    : limits_(limits),
      run_wide_(std::make_shared<StoreState>(limits, total_)),
      current_{0, std::make_shared<StoreState>(limits, total_)} {}

void KeySpaces::begin_round(std::uint64_t round) {
  if (round == current_.round) return;
  for_each_round([](StoreState& keys) { keys.drop_keys(); });
  earlier_.push_back(current_.keys);
  current_ = {round, std::make_shared<StoreState>(limits_, total_)};
}

template <typename Visit>
void KeySpaces::for_each_round(Visit visit) const {
  std::erase_if(earlier_, [](const std::weak_ptr<StoreState>& round) { return round.expired(); });
  for (const std::weak_ptr<StoreState>& round : earlier_) {
    if (std::shared_ptr<StoreState> keys = round.lock()) visit(*keys);
  }
  visit(*current_.keys);
}

StoreState* KeySpaces::space_for(const RoundMembership& membership, const Request& request,
                                 Effects& effects) const {
  if (request.keys.empty()) return membership.keys.get();
  const bool run_wide = is_run_wide(request.keys.front());
  const bool mixed =
      std::any_of(request.keys.begin() + 1, request.keys.end(),
                  [&](const std::string& key) { return is_run_wide(key) != run_wide; });
  if (mixed) {
    effects.close_reason = std::string(op_name(request.op)) + " names run-wide keys (\"" +
                           std::string(k_run_wide_prefix) + "...\") and keys of a round together";
    return nullptr;
  }
  return run_wide ? run_wide_.get() : membership.keys.get();
}

void KeySpaces::handle(const RoundMembership& membership, ConnectionId from, Dialect dialect,
                       const Request& request, Effects& effects, Writer writer) {
  if (request.op == Op::list_keys) return list_keys(membership, effects);
  StoreState* space = space_for(membership, request, effects);
  if (!space) return;
  if (ends_a_wait(dialect, request.op)) {
    StoreState& other = space == run_wide_.get() ? *membership.keys : *run_wide_;
    other.disconnect(from);
  }
  writer.reserve = writer.trusted && space == run_wide_.get() ? limits_.reserved_run_wide_bytes : 0;
  space->handle(from, dialect, request, effects, writer);
}

void KeySpaces::list_keys(const RoundMembership& membership, Effects& effects) const {
  std::vector<std::string_view> names;
  membership.keys->append_key_names(names);
  run_wide_->append_key_names(names);
  reply_key_list(limits_, std::move(names), effects);
}

void KeySpaces::disconnect(const RoundMembership& membership, ConnectionId connection) {
  membership.keys->disconnect(connection);
  run_wide_->disconnect(connection);
}

bool KeySpaces::is_waiting(const RoundMembership& membership, ConnectionId connection) const {
  return membership.keys->is_waiting(connection) || run_wide_->is_waiting(connection);
}

std::size_t KeySpaces::key_count() const {
  std::size_t count = run_wide_->key_count();
  for_each_round([&](const StoreState& keys) { count += keys.key_count(); });
  return count;
}

}  // namespace gangrun::store
