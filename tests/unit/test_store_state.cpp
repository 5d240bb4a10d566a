#include "store/store_state.hpp"

#include <catch2/catch.hpp>

#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

namespace {

using gangrun::store::ByteAccount;
using gangrun::store::ConnectionId;
using gangrun::store::Dialect;
using gangrun::store::Effects;
using gangrun::store::Limits;
using gangrun::store::make_request;
using gangrun::store::Op;
using gangrun::store::ReplyReader;
using gangrun::store::Request;
using gangrun::store::StoreState;
using gangrun::store::Writer;

constexpr std::uint8_t k_ready = gangrun::store::k_check_ready;
constexpr std::uint8_t k_not_ready = gangrun::store::k_check_not_ready;
constexpr std::uint8_t k_stop = gangrun::store::k_wait_stop_waiting;
constexpr std::uint8_t k_canceled = gangrun::store::k_wait_canceled;

std::string byte(std::uint8_t value) {
  std::string out;
  gangrun::store::put_u8(out, value);
  return out;
}

std::string stop() { return byte(k_stop); }

// Each reply decoded whole with ReplyReader; a leftover byte fails the test.
std::int64_t as_i64(const std::string& reply) {
  ReplyReader reader(reply);
  std::optional<std::int64_t> value = reader.read_i64();
  REQUIRE(value);
  REQUIRE(reader.consumed() == reply.size());
  return *value;
}

std::string as_bytes(const std::string& reply) {
  ReplyReader reader(reply);
  std::optional<std::string> value = reader.read_bytes();
  REQUIRE(value);
  REQUIRE(reader.consumed() == reply.size());
  return *value;
}

std::uint8_t as_u8(const std::string& reply) {
  REQUIRE(reply.size() == 1);
  return static_cast<std::uint8_t>(reply[0]);
}

// Drives a StoreState the way the server does: wakeups first, then the reply,
// each appended to what that connection has received so far.
struct Store {
  explicit Store(Limits limits = {}) : state(limits) {}

  Effects& send(ConnectionId from, Request r, Dialect dialect = Dialect::validated,
                const Writer& writer = Writer{}) {
    last = Effects{};
    state.handle(from, dialect, r, last, writer);
    for (const auto& [connection, bytes] : last.wakeups) received[connection] += bytes;
    received[from] += last.reply;
    return last;
  }
  Effects& as(const Writer& writer, Request r) {
    return send(7, std::move(r), Dialect::validated, writer);
  }
  Effects& legacy(ConnectionId from, Request r) {
    return send(from, std::move(r), Dialect::legacy);
  }

  void set(ConnectionId from, const std::string& key, const std::string& value) {
    Effects& e = send(from, make_request(Op::set, {key}, {value}));
    CHECK(e.reply.empty());
    CHECK_FALSE(e.close_reason);
  }
  std::string get(const std::string& key) {
    return as_bytes(send(99, make_request(Op::get, {key})).reply);
  }

  std::vector<ConnectionId> woken() const {
    std::vector<ConnectionId> out;
    bool all_stop_waiting = true;
    for (const auto& [connection, bytes] : last.wakeups) {
      all_stop_waiting = all_stop_waiting && bytes == stop();
      out.push_back(connection);
    }
    CHECK(all_stop_waiting);
    return out;
  }

  StoreState state;
  std::map<ConnectionId, std::string> received;
  Effects last;
};

}  // namespace

TEST_CASE("store state: SET, GET and APPEND", "[store][state]") {
  Store s;
  s.set(1, "/a", "hello");
  CHECK(s.get("/a") == "hello");
  s.set(1, "/a", "bye");
  CHECK(s.get("/a") == "bye");
  CHECK(s.get("/missing").empty());  // superset: empty, not a dropped connection
  CHECK_FALSE(s.last.close_reason);

  Effects& e = s.send(1, make_request(Op::append, {"/a"}, {"-more"}));
  CHECK(e.reply.empty());
  CHECK(s.get("/a") == "bye-more");
  s.send(1, make_request(Op::append, {"/new"}, {"x"}));
  CHECK(s.get("/new") == "x");
  CHECK(s.state.key_count() == 2);
}

TEST_CASE("store state: MULTI_SET and MULTI_GET", "[store][state]") {
  Store s;
  CHECK(s.send(1, make_request(Op::multi_set, {"/a", "/b"}, {"1", "22"})).reply.empty());
  Effects& e = s.send(1, make_request(Op::multi_get, {"/b", "/nope", "/a"}));
  ReplyReader reader(e.reply);
  CHECK(reader.read_bytes() == "22");
  CHECK(reader.read_bytes() == "");
  CHECK(reader.read_bytes() == "1");
  CHECK(reader.consumed() == e.reply.size());
}

TEST_CASE("store state: ADD keeps a decimal counter", "[store][state]") {
  Store s;
  CHECK(as_i64(s.send(1, make_request(Op::add, {"init/"}, {}, 1)).reply) == 1);
  CHECK(as_i64(s.send(2, make_request(Op::add, {"init/"}, {}, 4)).reply) == 5);
  CHECK(s.get("init/") == "5");
  CHECK(as_i64(s.send(1, make_request(Op::add, {"init/"}, {}, -7)).reply) == -2);
  CHECK(s.get("init/") == "-2");
  CHECK(as_i64(s.send(1, make_request(Op::add, {"/fresh"}, {}, -3)).reply) == -3);

  SECTION("an existing value that is not a number ends the connection") {
    s.set(1, "/text", "abc");
    Effects& e = s.send(1, make_request(Op::add, {"/text"}, {}, 1));
    CHECK(e.reply.empty());
    REQUIRE(e.close_reason);
    CHECK_THAT(*e.close_reason, Catch::Contains("not a decimal integer"));
    CHECK(s.get("/text") == "abc");
    s.set(1, "/partly", "12x");
    CHECK(s.send(1, make_request(Op::add, {"/partly"}, {}, 1)).close_reason);
  }
  SECTION("an overflow ends the connection and stores nothing") {
    s.set(1, "/big", "9223372036854775807");
    Effects& e = s.send(1, make_request(Op::add, {"/big"}, {}, 1));
    CHECK(e.reply.empty());
    REQUIRE(e.close_reason);
    CHECK_THAT(*e.close_reason, Catch::Contains("overflow"));
    CHECK(s.get("/big") == "9223372036854775807");
    s.set(1, "/huge", "99999999999999999999");
    CHECK(s.send(1, make_request(Op::add, {"/huge"}, {}, 0)).close_reason);
  }
  SECTION("ADD wakes a waiter") {
    s.send(3, make_request(Op::wait, {"/counter"}));
    s.send(1, make_request(Op::add, {"/counter"}, {}, 1));
    CHECK(s.woken() == std::vector<ConnectionId>{3});
  }
}

TEST_CASE("store state: COMPARE_SET", "[store][state]") {
  Store s;
  SECTION("missing key, empty expected: stores desired") {
    Effects& e = s.send(1, make_request(Op::compare_set, {"/k"}, {"", "new"}));
    CHECK(as_bytes(e.reply) == "new");
    CHECK(s.get("/k") == "new");
  }
  SECTION("missing key, non-empty expected: answers expected, stores nothing") {
    Effects& e = s.send(1, make_request(Op::compare_set, {"/k"}, {"old", "new"}));
    CHECK(as_bytes(e.reply) == "old");
    CHECK(s.state.key_count() == 0);
  }
  SECTION("present key: replaced only when it matches") {
    s.set(1, "/k", "v1");
    CHECK(as_bytes(s.send(1, make_request(Op::compare_set, {"/k"}, {"nope", "v2"})).reply) == "v1");
    CHECK(s.get("/k") == "v1");
    CHECK(as_bytes(s.send(1, make_request(Op::compare_set, {"/k"}, {"v1", "v2"})).reply) == "v2");
    CHECK(s.get("/k") == "v2");
  }
  SECTION("a store wakes waiters; a mismatch does not") {
    s.send(2, make_request(Op::wait, {"/k"}));
    s.send(1, make_request(Op::compare_set, {"/k"}, {"x", "y"}));
    CHECK(s.last.wakeups.empty());
    CHECK(s.state.is_waiting(2));
    s.send(1, make_request(Op::compare_set, {"/k"}, {"", "y"}));
    CHECK(s.woken() == std::vector<ConnectionId>{2});
    CHECK_FALSE(s.state.is_waiting(2));
  }
}

TEST_CASE("store state: CHECK", "[store][state]") {
  Store s;
  s.set(1, "/a", "1");
  CHECK(as_u8(s.send(1, make_request(Op::check, {"/a"})).reply) == k_ready);
  CHECK(as_u8(s.send(1, make_request(Op::check, {"/a", "/b"})).reply) == k_not_ready);
  s.send(1, make_request(Op::queue_push, {"/b"}, {"item"}));
  CHECK(as_u8(s.send(1, make_request(Op::check, {"/a", "/b"})).reply) == k_ready);
  s.send(1, make_request(Op::queue_pop, {"/b"}));
  CHECK(as_u8(s.send(1, make_request(Op::check, {"/b"})).reply) == k_not_ready);
}

TEST_CASE("store state: WAIT ends only when every key exists", "[store][state]") {
  Store s;
  SECTION("keys already there: answered at once") {
    s.set(1, "/a", "1");
    CHECK(s.send(2, make_request(Op::wait, {"/a", "/a"})).reply == stop());
    CHECK_FALSE(s.state.is_waiting(2));
  }
  SECTION("two keys set in turn") {
    CHECK(s.send(2, make_request(Op::wait, {"/a", "/b"})).reply.empty());
    CHECK(s.state.is_waiting(2));
    s.set(1, "/a", "1");
    CHECK(s.last.wakeups.empty());
    s.set(1, "/a", "again");  // the same key twice does not count twice
    CHECK(s.last.wakeups.empty());
    s.set(1, "/b", "2");
    CHECK(s.woken() == std::vector<ConnectionId>{2});
    CHECK_FALSE(s.state.is_waiting(2));
    CHECK(s.received[2] == stop());
  }
  SECTION("the same key twice in the list is one missing key") {
    s.send(2, make_request(Op::wait, {"/a", "/a", "/b", "/a"}));
    s.set(1, "/b", "2");
    CHECK(s.last.wakeups.empty());
    s.set(1, "/a", "1");
    CHECK(s.woken() == std::vector<ConnectionId>{2});
  }
  SECTION("only the missing keys are waited for") {
    s.set(1, "/a", "1");
    s.send(2, make_request(Op::wait, {"/a", "/b"}));
    s.set(1, "/b", "2");
    CHECK(s.woken() == std::vector<ConnectionId>{2});
  }
  SECTION("one SET releases several waiters, in the order they waited") {
    for (ConnectionId c : {5u, 3u, 4u}) s.send(c, make_request(Op::wait, {"/go"}));
    s.send(6, make_request(Op::wait, {"/go", "/other"}));
    s.set(1, "/go", "1");
    CHECK(s.woken() == std::vector<ConnectionId>({5, 3, 4}));
    CHECK(s.state.is_waiting(6));
    s.send(1, make_request(Op::multi_set, {"/x", "/other"}, {"1", "2"}));
    CHECK(s.woken() == std::vector<ConnectionId>{6});
  }
  SECTION("APPEND and QUEUE_PUSH count as writes") {
    s.send(2, make_request(Op::wait, {"/a", "/q"}));
    s.send(1, make_request(Op::append, {"/a"}, {"x"}));
    CHECK(s.last.wakeups.empty());
    s.send(1, make_request(Op::queue_push, {"/q"}, {"x"}));
    CHECK(s.woken() == std::vector<ConnectionId>{2});
  }
  SECTION("a key deleted and set again") {
    s.set(1, "/k", "1");
    CHECK(as_i64(s.send(1, make_request(Op::delete_key, {"/k"})).reply) == 1);
    CHECK(s.send(2, make_request(Op::wait, {"/k"})).reply.empty());
    s.set(1, "/k", "2");
    CHECK(s.woken() == std::vector<ConnectionId>{2});
  }
  SECTION("DELETE_KEY does not touch a pending wait") {
    s.send(2, make_request(Op::wait, {"/a", "/b"}));
    s.set(1, "/a", "1");
    s.send(1, make_request(Op::delete_key, {"/a"}));
    CHECK(s.state.is_waiting(2));
    s.set(1, "/b", "1");
    CHECK(s.woken() == std::vector<ConnectionId>{2});
  }
  SECTION("a connection may release its own wait (validated)") {
    s.send(2, make_request(Op::wait, {"/k"}));
    Effects& e = s.send(2, make_request(Op::set, {"/k"}, {"v"}));
    CHECK(e.reply.empty());
    CHECK(s.woken() == std::vector<ConnectionId>{2});
  }
}

TEST_CASE("store state: thousands of waiters on one key", "[store][state]") {
  Store s;
  constexpr ConnectionId k_waiters = 8000;
  for (ConnectionId c = 1; c <= k_waiters; ++c) s.send(c, make_request(Op::wait, {"/go"}));
  // Half of them give up first, one at a time, as timed-out clients would.
  for (ConnectionId c = 2; c <= k_waiters; c += 2) s.state.disconnect(c);
  s.set(0, "/go", "1");
  std::vector<ConnectionId> expected;
  for (ConnectionId c = 1; c <= k_waiters; c += 2) expected.push_back(c);
  CHECK(s.woken() == expected);
  bool anyone_waiting = false;
  for (ConnectionId c = 1; c <= k_waiters; ++c) anyone_waiting |= s.state.is_waiting(c);
  CHECK_FALSE(anyone_waiting);
}

TEST_CASE("store state: legacy connections cancel a pending wait implicitly", "[store][state]") {
  for (Dialect dialect : {Dialect::legacy, Dialect::magic_prefixed}) {
    Store s;
    s.send(1, make_request(Op::wait, {"/k"}), dialect);
    CHECK(s.state.is_waiting(1));
    // The client timed out on its side and carries on with its next request.
    s.set(2, "/other", "v");
    Effects& e = s.send(1, make_request(Op::get, {"/other"}), dialect);
    CHECK(as_bytes(e.reply) == "v");
    CHECK(e.wakeups.empty());
    CHECK_FALSE(s.state.is_waiting(1));
    s.set(2, "/k", "late");
    CHECK(s.last.wakeups.empty());
    CHECK(as_bytes(s.received[1]) == "v");  // and never a stray STOP_WAITING

    // A wait that is still pending is replaced by the connection's next WAIT.
    s.send(1, make_request(Op::wait, {"/x"}), dialect);
    s.send(1, make_request(Op::wait, {"/y"}), dialect);
    s.set(2, "/x", "1");
    CHECK(s.last.wakeups.empty());
    s.set(2, "/y", "1");
    CHECK(s.woken() == std::vector<ConnectionId>{1});
  }
}

TEST_CASE("store state: legacy CANCEL_WAIT (2.1-era) still answers", "[store][state]") {
  Store s;
  s.legacy(1, make_request(Op::wait, {"/k"}));
  CHECK(as_u8(s.legacy(1, make_request(Op::cancel_wait)).reply) == k_canceled);
  s.set(2, "/k", "v");
  CHECK(s.last.wakeups.empty());
}

TEST_CASE("store state: validated waits survive other requests until CANCEL_WAIT",
          "[store][state]") {
  Store s;
  s.send(1, make_request(Op::wait, {"/k"}));
  CHECK(as_bytes(s.send(1, make_request(Op::get, {"/nothing"})).reply).empty());
  CHECK(s.state.is_waiting(1));

  SECTION("cancelled before it completes") {
    Effects& e = s.send(1, make_request(Op::cancel_wait));
    CHECK(as_u8(e.reply) == k_canceled);
    CHECK(e.wakeups.empty());
    CHECK_FALSE(s.state.is_waiting(1));
    s.set(2, "/k", "v");
    CHECK(s.last.wakeups.empty());
  }
  SECTION("cancelled after it completed: STOP_WAITING, then WAIT_CANCELED") {
    s.received[1].clear();
    s.set(2, "/k", "v");
    CHECK(s.woken() == std::vector<ConnectionId>{1});
    s.send(1, make_request(Op::cancel_wait));
    CHECK(s.received[1] == stop() + byte(k_canceled));
  }
  SECTION("CANCEL_WAIT with nothing pending still answers") {
    s.send(1, make_request(Op::cancel_wait));
    s.received[1].clear();
    CHECK(as_u8(s.send(1, make_request(Op::cancel_wait)).reply) == k_canceled);
  }
}

TEST_CASE("store state: disconnect forgets the connection's wait", "[store][state]") {
  Store s;
  s.send(1, make_request(Op::wait, {"/a", "/b"}));
  s.send(2, make_request(Op::wait, {"/a"}));
  s.state.disconnect(1);
  s.state.disconnect(77);  // never waited: nothing to do
  CHECK_FALSE(s.state.is_waiting(1));
  s.set(3, "/a", "1");
  CHECK(s.woken() == std::vector<ConnectionId>{2});
  s.set(3, "/b", "1");
  CHECK(s.last.wakeups.empty());

  // The connection id may be reused by the next client.
  s.send(1, make_request(Op::wait, {"/c"}));
  s.set(3, "/c", "1");
  CHECK(s.woken() == std::vector<ConnectionId>{1});
}

TEST_CASE("store state: queues", "[store][state]") {
  Store s;
  SECTION("push, length and pop") {
    CHECK(s.send(1, make_request(Op::queue_push, {"/q"}, {"one"})).reply.empty());
    s.send(1, make_request(Op::queue_push, {"/q"}, {"two"}));
    CHECK(as_i64(s.send(1, make_request(Op::queue_len, {"/q"})).reply) == 2);
    ReplyReader first(s.send(2, make_request(Op::queue_pop, {"/q"})).reply);
    CHECK(first.read_i64() == 2);
    CHECK(first.read_bytes() == "one");
    ReplyReader second(s.send(2, make_request(Op::queue_pop, {"/q"})).reply);
    CHECK(second.read_i64() == 1);
    CHECK(second.read_bytes() == "two");
    CHECK(second.consumed() == s.last.reply.size());
    CHECK(as_i64(s.send(1, make_request(Op::queue_len, {"/q"})).reply) == 0);
    CHECK(s.state.key_count() == 0);  // queues are not keys
  }
  SECTION("pop on an empty queue answers 0 and no value") {
    CHECK(as_i64(s.send(2, make_request(Op::queue_pop, {"/none"})).reply) == 0);
    CHECK(as_i64(s.send(2, make_request(Op::queue_len, {"/none"})).reply) == 0);
  }
  SECTION("a push wakes exactly one blocked popper, the oldest") {
    s.send(2, make_request(Op::wait, {"/q"}));
    s.send(3, make_request(Op::wait, {"/q"}));
    s.send(1, make_request(Op::queue_push, {"/q"}, {"a"}));
    CHECK(s.woken() == std::vector<ConnectionId>{2});
    CHECK(s.state.is_waiting(3));
    s.send(1, make_request(Op::queue_push, {"/q"}, {"b"}));
    CHECK(s.woken() == std::vector<ConnectionId>{3});
  }
  SECTION("a popper that gave up is skipped") {
    s.send(2, make_request(Op::wait, {"/q"}));
    s.send(3, make_request(Op::wait, {"/q"}));
    s.send(2, make_request(Op::cancel_wait));
    s.send(1, make_request(Op::queue_push, {"/q"}, {"a"}));
    CHECK(s.woken() == std::vector<ConnectionId>{3});
  }
  SECTION("a WAIT on a non-empty queue is answered at once") {
    s.send(1, make_request(Op::queue_push, {"/q"}, {"a"}));
    CHECK(s.send(2, make_request(Op::wait, {"/q"})).reply == stop());
  }
}

TEST_CASE("store state: GETNUMKEYS, DELETE_KEY and LIST_KEYS", "[store][state]") {
  Store s;
  for (const char* key : {"/c", "init/", "/a", "/b"}) s.set(1, key, "v");
  s.send(1, make_request(Op::queue_push, {"/queue"}, {"x"}));
  CHECK(as_i64(s.send(1, make_request(Op::num_keys)).reply) == 4);

  Effects& e = s.send(1, make_request(Op::list_keys));
  ReplyReader reader(e.reply);
  CHECK(reader.read_i64() == 4);
  std::vector<std::string> keys;
  for (int i = 0; i < 4; ++i) keys.push_back(reader.read_bytes().value_or("?"));
  CHECK(keys == std::vector<std::string>{"/a", "/b", "/c", "init/"});
  CHECK(reader.consumed() == e.reply.size());

  CHECK(as_i64(s.send(1, make_request(Op::delete_key, {"/b"})).reply) == 1);
  CHECK(as_i64(s.send(1, make_request(Op::delete_key, {"/b"})).reply) == 0);
  CHECK(as_i64(s.send(1, make_request(Op::delete_key, {"/queue"})).reply) == 0);
  CHECK(as_i64(s.send(1, make_request(Op::num_keys)).reply) == 3);
  CHECK(s.state.key_count() == 3);
}

TEST_CASE("store state: VALIDATE, PING and WATCH_KEY", "[store][state]") {
  Store s;
  Request validate = make_request(Op::validate);
  validate.word = gangrun::store::k_validate_magic;
  CHECK(s.send(1, validate).reply.empty());
  Request ping = make_request(Op::ping);
  ping.word = 0xDEADBEEF;
  ReplyReader pong(s.send(1, ping).reply);
  CHECK(pong.read_u32() == 0xDEADBEEFu);
  CHECK(as_u8(s.legacy(2, make_request(Op::watch_key, {"/k"})).reply) ==
        gangrun::store::k_watch_callback_registered);
  s.set(1, "/k", "v");
  CHECK(s.last.wakeups.empty());  // no updates are ever pushed
}

TEST_CASE("store state: BARRIER with three connections", "[store][state]") {
  Store s;
  CHECK(s.send(1, make_request(Op::barrier, {"/b"}, {}, 3)).reply.empty());
  CHECK(s.state.is_waiting(1));
  CHECK(s.get("/b") == "1");
  CHECK(s.send(2, make_request(Op::barrier, {"/b"}, {}, 3)).reply.empty());
  CHECK(s.last.wakeups.empty());
  CHECK(s.get("/b") == "2");
  Effects& e = s.send(3, make_request(Op::barrier, {"/b"}, {}, 3));
  CHECK(e.reply == stop());
  CHECK(s.woken() == std::vector<ConnectionId>({1, 2}));
  CHECK(s.get("/b") == "3");
  for (ConnectionId c : {1u, 2u, 3u}) {
    CHECK_FALSE(s.state.is_waiting(c));
    CHECK(s.received[c] == stop());
  }

  SECTION("CANCEL_WAIT cancels a barrier wait") {
    s.send(4, make_request(Op::barrier, {"/b2"}, {}, 2));
    CHECK(as_u8(s.send(4, make_request(Op::cancel_wait)).reply) == k_canceled);
    CHECK(s.send(5, make_request(Op::barrier, {"/b2"}, {}, 2)).reply == stop());
    CHECK(s.last.wakeups.empty());
  }
  SECTION("a counter that is not a number ends the connection") {
    s.set(4, "/text", "abc");
    CHECK(s.send(4, make_request(Op::barrier, {"/text"}, {}, 2)).close_reason);
    CHECK_FALSE(s.state.is_waiting(4));
  }
}

TEST_CASE("store state: the store-wide byte limit", "[store][state]") {
  Limits limits;
  limits.max_total_bytes = 20;
  Store s(limits);
  s.set(1, "/a", "0123456789");  // 12 bytes
  CHECK(s.state.stored_bytes() == 12);

  Effects& e = s.send(1, make_request(Op::set, {"/b"}, {"0123456789"}));
  REQUIRE(e.close_reason);
  CHECK(*e.close_reason ==
        "the store is full: 12 of 20 bytes used; this write would need 12 more (raise the limit "
        "with --max-store-bytes N)");
  CHECK(e.refused_for_bytes);
  CHECK(s.state.key_count() == 1);
  CHECK(s.state.stored_bytes() == 12);

  CHECK(s.send(1, make_request(Op::append, {"/a"}, {"0123456789"})).close_reason);
  CHECK(s.get("/a") == "0123456789");
  CHECK(s.send(1, make_request(Op::queue_push, {"/q"}, {"0123456789"})).close_reason);
  CHECK(as_i64(s.send(1, make_request(Op::queue_len, {"/q"})).reply) == 0);
  CHECK(s.send(1, make_request(Op::multi_set, {"/c", "/d"}, {"1", "0123456789"})).close_reason);
  CHECK(s.state.key_count() == 1);  // all or nothing
  CHECK(s.send(1, make_request(Op::compare_set, {"/a"}, {"0123456789", "01234567890123456789"}))
            .close_reason);
  CHECK(s.state.stored_bytes() == 12);

  // Writes that fit are still fine, an overwrite counting only the difference.
  CHECK_FALSE(s.send(1, make_request(Op::set, {"/b"}, {"12345"})).close_reason);
  CHECK(s.state.stored_bytes() == 19);
  CHECK_FALSE(s.send(1, make_request(Op::set, {"/a"}, {"0123456"})).close_reason);
  CHECK(s.state.stored_bytes() == 16);
  CHECK_FALSE(s.send(1, make_request(Op::add, {"/n"}, {}, 5)).close_reason);
  CHECK(s.state.stored_bytes() == 19);
  CHECK_FALSE(s.send(1, make_request(Op::add, {"/n"}, {}, 5)).close_reason);  // "10": exactly full
  CHECK(s.state.stored_bytes() == 20);
  CHECK(s.send(1, make_request(Op::add, {"/n"}, {}, 90)).close_reason);  // "100" is one too many
  CHECK(s.get("/n") == "10");
  // A repeated key in one MULTI_SET counts once, with its last value.
  CHECK_FALSE(
      s.send(1, make_request(Op::multi_set, {"/b", "/b"}, {"0123456789", "1234"})).close_reason);
  CHECK(s.get("/b") == "1234");
  CHECK(s.state.stored_bytes() == 19);
}

TEST_CASE("store state: each entry is charged whole to the account that wrote it last",
          "[store][state][bytes]") {
  Limits limits;
  limits.max_bytes_per_address = 0;  // counted, not limited
  Store s(limits);
  auto a = std::make_shared<ByteAccount>();
  auto b = std::make_shared<ByteAccount>();
  Writer by_a{.account = a};
  Writer by_b{.account = b};
  CHECK_FALSE(s.as(by_a, make_request(Op::set, {"/k"}, {"0123456789"})).close_reason);
  CHECK(a->bytes == 12);
  CHECK_FALSE(s.as(by_a, make_request(Op::set, {"/k"}, {"0123"})).close_reason);
  CHECK(a->bytes == 6);
  // b appends: the whole entry moves to b.
  CHECK_FALSE(s.as(by_b, make_request(Op::append, {"/k"}, {"45"})).close_reason);
  CHECK(a->bytes == 0);
  CHECK(b->bytes == 8);
  CHECK_FALSE(s.as(by_a, make_request(Op::add, {"/n"}, {}, 42)).close_reason);
  CHECK(a->bytes == 4);
  CHECK_FALSE(s.as(by_a, make_request(Op::queue_push, {"/q"}, {"xyz"})).close_reason);
  CHECK_FALSE(s.as(by_b, make_request(Op::queue_push, {"/q"}, {"uv"})).close_reason);
  CHECK(a->bytes == 4 + 2 + 3);  // the queue's key and its first item
  CHECK(b->bytes == 8 + 2);
  CHECK_FALSE(
      s.as(by_a, make_request(Op::multi_set, {"/m", "/m", "/k"}, {"1", "22", "3"})).close_reason);
  CHECK(a->bytes == 9 + 4 + 3);
  CHECK(b->bytes == 2);
  // A writer without an account (publish(), a protected connection) takes
  // the entry off its old account.
  CHECK_FALSE(s.send(1, make_request(Op::set, {"/m"}, {"x"})).close_reason);
  CHECK(a->bytes == 9 + 3);
  CHECK(as_i64(s.send(1, make_request(Op::delete_key, {"/k"})).reply) == 1);
  CHECK(a->bytes == 9);
  s.send(1, make_request(Op::queue_pop, {"/q"}));
  CHECK(a->bytes == 6);  // its item popped, the queue's key stays charged while it has items
  s.state.drop_keys();
  CHECK(a->bytes == 0);
  CHECK(b->bytes == 0);
  CHECK(s.state.stored_bytes() == 0);
}

TEST_CASE("store state: one account holds at most max_bytes_per_address", "[store][state][bytes]") {
  Limits limits;
  limits.max_bytes_per_address = 30;
  Store s(limits);
  auto a = std::make_shared<ByteAccount>();
  auto b = std::make_shared<ByteAccount>();
  Writer by_a{.account = a};
  CHECK_FALSE(s.as(by_a, make_request(Op::set, {"/a"}, {std::string(18, 'x')})).close_reason);
  Effects& refused = s.as(by_a, make_request(Op::set, {"/b"}, {std::string(18, 'x')}));
  REQUIRE(refused.close_reason);
  CHECK(refused.refused_for_bytes);
  CHECK_THAT(*refused.close_reason, Catch::Contains("--max-store-bytes-per-address"));
  CHECK(s.state.key_count() == 1);
  CHECK(a->bytes == 20);
  // Another account has its own quota; an overwrite of one's own entry counts the difference.
  CHECK_FALSE(s.as(Writer{.account = b}, make_request(Op::set, {"/b"}, {std::string(18, 'x')}))
                  .close_reason);
  CHECK_FALSE(s.as(by_a, make_request(Op::set, {"/a"}, {std::string(28, 'x')})).close_reason);
  CHECK(a->bytes == 30);
  CHECK(s.as(by_a, make_request(Op::append, {"/a"}, {"y"})).close_reason);
  // Taking over b's entry charges it whole.
  CHECK(s.as(by_a, make_request(Op::set, {"/b"}, {""})).close_reason);
  // Shrinking is always let through.
  CHECK_FALSE(s.as(by_a, make_request(Op::set, {"/a"}, {"z"})).close_reason);
  CHECK(a->bytes == 3);
}

TEST_CASE("store state: a trusted writer is never refused for bytes", "[store][state][bytes]") {
  Limits limits;
  limits.max_total_bytes = 20;
  Store s(limits);
  s.set(1, "/a", "0123456789");  // 12 bytes
  Writer agent{.account = nullptr, .trusted = true, .reserve = 10};
  // Within the limit and its reserve: no word of it.
  Effects& within = s.as(agent, make_request(Op::set, {"/r"}, {"0123456789012345"}));
  CHECK_FALSE(within.close_reason);
  CHECK_FALSE(within.overrun);
  CHECK(s.state.stored_bytes() == 30);
  // The others are refused now, even a byte, but may shrink what they hold.
  CHECK(s.send(1, make_request(Op::set, {"/b"}, {""})).close_reason);
  CHECK_FALSE(s.send(1, make_request(Op::set, {"/a"}, {"0"})).close_reason);
  CHECK(s.state.stored_bytes() == 21);
  // Past the reserve too: applied, and said.
  Effects& past = s.as(agent, make_request(Op::set, {"/s"}, {"0123456789"}));
  CHECK_FALSE(past.close_reason);
  CHECK_FALSE(past.refused_for_bytes);
  REQUIRE(past.overrun);
  CHECK_THAT(*past.overrun, Catch::Contains("the store is full"));
  CHECK(s.get("/s") == "0123456789");
  CHECK(s.state.stored_bytes() == 33);
}

TEST_CASE("store state: replies over the reply limit are refused before they are built",
          "[store][state]") {
  Limits limits;
  limits.max_reply_bytes = 40;
  Store s(limits);
  s.set(1, "/a", "0123456789");  // a MULTI_GET answer is 8 + 10 bytes per "/a"

  Effects& fits = s.send(1, make_request(Op::multi_get, {"/a", "/a"}));
  CHECK_FALSE(fits.close_reason);
  CHECK(fits.reply.size() == 36);

  Effects& over = s.send(1, make_request(Op::multi_get, {"/a", "/a", "/a"}));
  REQUIRE(over.close_reason);
  CHECK(*over.close_reason ==
        "the reply to MULTI_GET would be 54 bytes, over the 40-byte reply limit");
  CHECK(over.reply.empty());
  // Missing keys cost their length field.
  CHECK(s.send(1, make_request(Op::multi_get, std::vector<std::string>(6, "/none"))).close_reason);
  CHECK_FALSE(
      s.send(1, make_request(Op::multi_get, std::vector<std::string>(5, "/none"))).close_reason);

  // LIST_KEYS: 8 (count) + 8 + 2 per key.
  s.set(1, "/b", "x");
  s.set(1, "/c", "x");
  CHECK_FALSE(s.send(1, make_request(Op::list_keys)).close_reason);  // 38 bytes
  s.set(1, "/d", "x");
  CHECK(s.send(1, make_request(Op::list_keys)).close_reason);  // 48 bytes
  CHECK(s.send(1, make_request(Op::list_keys)).reply.empty());
}

TEST_CASE("store state: stored_bytes and key_count accounting", "[store][state]") {
  Store s;
  s.set(1, "/k", "abc");  // 2 + 3
  CHECK(s.state.stored_bytes() == 5);
  s.set(1, "/k", "abcdef");
  CHECK(s.state.stored_bytes() == 8);
  s.send(1, make_request(Op::append, {"/k"}, {"gh"}));
  CHECK(s.state.stored_bytes() == 10);
  s.send(1, make_request(Op::append, {"/j"}, {"x"}));
  CHECK(s.state.stored_bytes() == 13);
  s.send(1, make_request(Op::add, {"/n"}, {}, 100));
  CHECK(s.state.stored_bytes() == 18);
  s.send(1, make_request(Op::queue_push, {"/q"}, {"item"}));
  s.send(1, make_request(Op::queue_push, {"/q"}, {"it"}));
  CHECK(s.state.stored_bytes() == 26);
  CHECK(s.state.key_count() == 3);
  s.send(1, make_request(Op::queue_pop, {"/q"}));
  CHECK(s.state.stored_bytes() == 22);
  s.send(1, make_request(Op::queue_pop, {"/q"}));
  CHECK(s.state.stored_bytes() == 18);
  s.send(1, make_request(Op::delete_key, {"/k"}));
  CHECK(s.state.stored_bytes() == 8);
  s.send(1, make_request(Op::compare_set, {"/j"}, {"x", "xyz"}));
  CHECK(s.state.stored_bytes() == 10);
  CHECK(s.state.key_count() == 2);
}

TEST_CASE("store state: clear() starts afresh", "[store][state]") {
  Store s;
  s.set(1, "/a", "1");
  s.send(1, make_request(Op::queue_push, {"/q"}, {"x"}));
  s.send(2, make_request(Op::wait, {"/w"}));
  s.state.clear();
  CHECK(s.state.key_count() == 0);
  CHECK(s.state.stored_bytes() == 0);
  CHECK_FALSE(s.state.is_waiting(2));
  CHECK(as_i64(s.send(1, make_request(Op::queue_len, {"/q"})).reply) == 0);
  s.set(1, "/w", "1");
  CHECK(s.last.wakeups.empty());
  CHECK(as_i64(s.send(1, make_request(Op::add, {"/a"}, {}, 1)).reply) == 1);
}

TEST_CASE("store state: a request without the fields its op needs is refused", "[store][state]") {
  Store s;
  Effects& e = s.send(1, make_request(Op::compare_set, {"/k"}, {"only expected"}));
  REQUIRE(e.close_reason);
  CHECK_THAT(*e.close_reason, Catch::Contains("COMPARE_SET"));
  CHECK(s.send(1, make_request(Op::multi_set, {"/a", "/b"}, {"1"})).close_reason);
  CHECK(s.send(1, make_request(Op::get)).close_reason);
  CHECK(s.state.key_count() == 0);
}
