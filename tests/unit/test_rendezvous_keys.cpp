// The store keys' grammar (rendezvous/keys.hpp): every key a client writes
// reads back as what it was built from, and a key that does not fit its
// kind's grammar keeps its kind with the part that does not read unset.
#include "rendezvous/keys.hpp"

#include <catch2/catch.hpp>

#include <string>

namespace gangrun::rendezvous::keys {
namespace {

TEST_CASE("every key a client writes parses back to what built it", "[rendezvous][keys]") {
  CHECK(parse(join("a1b2")) == ParsedKey{.kind = Kind::join, .agent = "a1b2"});
  CHECK(parse(alive("a1b2")) == ParsedKey{.kind = Kind::alive, .agent = "a1b2"});
  CHECK(parse(connection("a1b2", "t0k3n")) ==
        ParsedKey{.kind = Kind::connection, .agent = "a1b2", .token = "t0k3n"});
  CHECK(parse(failed(7, "a1b2")) == ParsedKey{.kind = Kind::failed, .agent = "a1b2", .round = 7});
  CHECK(parse(result(0, "a1b2")) == ParsedKey{.kind = Kind::result, .agent = "a1b2", .round = 0});
  CHECK(parse(doctor_ask(12345678901234ULL, "ask9")) ==
        ParsedKey{.kind = Kind::doctor_ask, .agent = "ask9", .round = 12345678901234ULL});
}

TEST_CASE("the coordinator's own keys and strangers' keys parse as what they are",
          "[rendezvous][keys]") {
  for (const std::string& key :
       {welcome("a"), nonce(), latest(), round(3), end(3), waiting(), std::string(k_prefix)}) {
    CHECK(parse(key).kind == Kind::other_rdzv);
  }
  CHECK(parse(doctor_asked("ask9")).kind == Kind::other_doctor);
  CHECK(parse(doctor_request(1, 2)).kind == Kind::other_doctor);
  CHECK(parse("/user/key").kind == Kind::foreign);
  CHECK(parse("gangrun/run/other").kind == Kind::foreign);
  // A kind's name without its slash is no key of that kind.
  CHECK(parse(std::string(k_prefix) + "join").kind == Kind::other_rdzv);
  CHECK(parse(std::string(k_prefix) + "joiner/x").kind == Kind::other_rdzv);
}

TEST_CASE("a key that does not fit its kind's grammar says which part is missing",
          "[rendezvous][keys]") {
  std::string rdzv(k_prefix);
  // A join claims whatever follows, slashes and nothing included.
  CHECK(parse(rdzv + "join/").agent.empty());
  CHECK(parse(rdzv + "join/a/b").agent == "a/b");
  // A connection without a token; a token may hold slashes.
  CHECK(parse(rdzv + "conn/a1") == ParsedKey{.kind = Kind::connection, .agent = "a1"});
  CHECK(parse(rdzv + "conn/a1/t/u").token == "t/u");
  // A round that is not decimal digits, or none at all.
  for (std::string bad : {"failed/x/a", "failed//a", "failed/7", "result/-1/a", "result/1a/a"}) {
    ParsedKey parsed = parse(rdzv + bad);
    CHECK_FALSE(parsed.round);
    CHECK(parsed.agent.empty());
  }
  CHECK(parse(rdzv + "failed/7/").agent.empty());
  CHECK(parse(rdzv + "failed/7/").round == 7);
  ParsedKey ask = parse(std::string(k_doctor_prefix) + "ask/r/x");
  CHECK(ask.kind == Kind::doctor_ask);
  CHECK_FALSE(ask.round);
}

}  // namespace
}  // namespace gangrun::rendezvous::keys
