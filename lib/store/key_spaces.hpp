// The store's key spaces: one per round, and one for the whole run.
//
// A run is a sequence of rounds (restart attempts, rendezvous rounds). Every
// connection belongs to the round that was current when it was accepted, and
// sees only that round's keys: GETNUMKEYS, LIST_KEYS, WAIT, ADD... all act on
// the round's own StoreState. begin_round() makes a new round current and
// deletes the keys of every earlier round at once, without closing any
// connection: a straggler of an old round keeps working on a key space that
// nobody else sees, and its waiters are never woken by a newer round.
//
// Keys that start with k_run_wide_prefix belong to no round: they live in one
// run-wide space, visible from every round and kept across rounds. PyTorch's
// TCPStore puts "/" in front of every user key (its one raw key is "init/"),
// so workers cannot reach that space; it is for gangrun's agents. A request
// naming keys of both kinds (CHECK, WAIT, MULTI_GET, MULTI_SET) is refused
// and its connection closed. Run-wide keys are not counted by GETNUMKEYS,
// which describes the connection's round; LIST_KEYS lists the round's keys
// and the run-wide ones (an operator sees the rendezvous' state that way).
//
// max_total_bytes holds for all spaces together, for every writer but the
// node agents' run-wide keys: those written by a trusted writer (a protected
// connection, Server::protect) may go reserved_run_wide_bytes past it, room
// the workers' keys can never take. max_bytes_per_address holds for the
// entries charged to one writer's account (store_state.hpp's Writer), in
// every space together. Single-threaded, like the server that owns it.
#pragma once

#include "store/codec.hpp"
#include "store/protocol.hpp"
#include "store/store_state.hpp"

#include <cstdint>
#include <memory>
#include <string_view>
#include <vector>

namespace gangrun::store {

// Keys starting with this belong to the run, not to a round.
inline constexpr std::string_view k_run_wide_prefix = "gangrun/run/";

// A connection's place: the round it joined. Held by the connection; an old
// round's keys are freed with its last connection.
struct RoundMembership {
  std::uint64_t round = 0;
  std::shared_ptr<StoreState> keys;
};

class KeySpaces {
 public:
  explicit KeySpaces(Limits limits);

  // Makes `round` current for connections accepted from now on and deletes
  // the keys of every other round (their waiters stay, unanswered unless a
  // straggler of that round writes the key again). Rounds need not be
  // consecutive; beginning the current round again changes nothing.
  void begin_round(std::uint64_t round);
  std::uint64_t current_round() const { return current_.round; }

  // What a newly accepted connection joins: the current round.
  RoundMembership join() const { return current_; }

  // Applies one request of connection `from`, a member of `membership`, to
  // the space its keys name (StoreState::handle). A connection has at most
  // one pending wait across spaces: whatever would cancel a wait in the space
  // it lives in (a legacy request, WAIT, BARRIER, CANCEL_WAIT) cancels it in
  // the other one too.
  // writer: as StoreState::handle takes it; a trusted writer's run-wide keys
  // get Limits::reserved_run_wide_bytes as their reserve here.
  void handle(const RoundMembership& membership, ConnectionId from, Dialect dialect,
              const Request& request, Effects& effects, Writer writer = Writer{});

  // The connection is gone: forget its waits in every space.
  void disconnect(const RoundMembership& membership, ConnectionId connection);
  bool is_waiting(const RoundMembership& membership, ConnectionId connection) const;

  // Keys held now, in every space: the current round, the run-wide space and
  // whatever stragglers wrote into earlier rounds since those began.
  std::size_t key_count() const;
  // Keys in the run-wide space.
  std::size_t run_wide_key_count() const { return run_wide_->key_count(); }
  // The value of a run-wide key; nullopt when it has none.
  std::optional<std::string> run_wide_value(const std::string& key) const {
    return run_wide_->value_of(key);
  }
  // Bytes of every space together, against max_total_bytes.
  std::size_t stored_bytes() const { return total_->bytes; }

 private:
  // LIST_KEYS: the connection's round and the run-wide space, sorted.
  void list_keys(const RoundMembership& membership, Effects& effects) const;
  // The space a request's keys name; nullptr (with close_reason set) when
  // they name both kinds.
  StoreState* space_for(const RoundMembership& membership, const Request& request,
                        Effects& effects) const;
  // Rounds still held by their connections, current one included.
  template <typename Visit>
  void for_each_round(Visit visit) const;

  Limits limits_;
  std::shared_ptr<StoredTotal> total_ = std::make_shared<StoredTotal>();
  std::shared_ptr<StoreState> run_wide_;
  RoundMembership current_;
  // Earlier rounds, alive while a connection of theirs is open.
  mutable std::vector<std::weak_ptr<StoreState>> earlier_;
};

// True when key is in the run-wide space.
inline bool is_run_wide(std::string_view key) { return key.starts_with(k_run_wide_prefix); }

}  // namespace gangrun::store
