// The messages of the gang doctor between nodes (doctor/node_requests.hpp):
// what one agent writes, another reads back; what no agent writes is refused.
#include "doctor/node_requests.hpp"

#include <catch2/catch.hpp>

namespace gangrun::doctor {
namespace {

RankStacks a_rank(int number, const std::string& function) {
  return RankStacks{.rank = number,
                    .host = "node1",
                    .pid = 4711 + number,
                    .threads = {ThreadStack{
                        .name = "MainThread",
                        .os_thread_id = 4711 + number,
                        .active = false,
                        .frames = {Frame{.function = function, .file = "train.py", .line = 12},
                                   Frame{.function = "<module>", .file = "train.py", .line = 40}}}},
                    .unavailable = std::nullopt,
                    .stopped = std::nullopt};
}

TEST_CASE("a node's request and answer read back as they were written", "[doctor]") {
  auto request = node_request_from_json(
      to_json(NodeRequest{.why = NodeRequest::Why::hang, .silent_for_s = 3.5, .ask_id = "ab12"}));
  REQUIRE(request);
  CHECK(request->why == NodeRequest::Why::hang);
  CHECK(request->silent_for_s == 3.5);
  CHECK(request->ask_id == "ab12");
  // gangrun top's kind, which the agents answer with their snapshot.
  auto status = node_request_from_json(
      to_json(NodeRequest{.why = NodeRequest::Why::status, .silent_for_s = 0, .ask_id = "cd34"}));
  REQUIRE(status);
  CHECK(status->why == NodeRequest::Why::status);
  CHECK_FALSE(node_request_from_json(R"({"why":"dance","ask":"x","silent_for_s":0})"));
  // A silence reaches the terminal: a number of seconds within reason, or nothing.
  for (const char* silence : {"-1", "1e300", "\"999\""}) {
    CHECK_FALSE(node_request_from_json(std::string(R"({"why":"hang","ask":"x","silent_for_s":)") +
                                       silence + "}"));
  }

  RankStacks unreadable{.rank = 3,
                        .host = "node1",
                        .pid = 99,
                        .threads = {},
                        .unavailable = "py-spy not found",
                        .stopped = std::nullopt};
  RankStacks stopped = a_rank(1, "all_reduce");
  stopped.stopped = 't';
  NodeAnswer answer{.ranks = {a_rank(2, "load_batch"), unreadable, stopped}, .not_at_store = {3}};
  auto back = node_answer_from_json(to_json(answer));
  REQUIRE(back);
  REQUIRE(back->ranks.size() == 3);
  CHECK(back->ranks[0].threads == answer.ranks[0].threads);
  CHECK(back->ranks[0].pid == 4713);
  CHECK_FALSE(back->ranks[0].stopped);
  CHECK(back->ranks[1].unavailable == "py-spy not found");
  CHECK(back->ranks[2].stopped == 't');
  CHECK(back->not_at_store == std::vector<int>{3});
}

TEST_CASE("what no agent writes is refused, and text comes back printable", "[doctor]") {
  CHECK_FALSE(node_request_from_json("not json"));
  CHECK_FALSE(node_request_from_json(R"({"why": "curiosity", "silent_for_s": 0})"));
  CHECK_FALSE(node_request_from_json(R"({"why": "hang"})"));
  CHECK_FALSE(node_answer_from_json(R"({"ranks": [{"rank": "two"}], "not_at_store": []})"));
  CHECK_FALSE(node_answer_from_json(R"({"ranks": []})"));
  // A stopped rank's state is one of the two that name a stop.
  const std::string rank_head = R"({"not_at_store": [], "ranks": [{"rank": 0, "host": "h", )"
                                R"("pid": 7, "unavailable": null, "threads": [], "stopped": )";
  CHECK(node_answer_from_json(rank_head + R"({"state": "T", "text": "any"}}]})"));
  CHECK(node_answer_from_json(rank_head + "null}]}"));
  CHECK_FALSE(node_answer_from_json(rank_head + R"({"state": "S"}}]})"));
  CHECK_FALSE(node_answer_from_json(rank_head + R"("T"}]})"));

  NodeAnswer answer{.ranks = {a_rank(0, "evil\x1b[2Jname")}, .not_at_store = {}};
  auto back = node_answer_from_json(to_json(answer));
  REQUIRE(back);
  CHECK(back->ranks[0].threads[0].frames[0].function.find('\x1b') == std::string::npos);

  // A function name within the 1024-byte limit that escapes to 4096 bytes is refused, so that
  // what is kept reads back the same.
  NodeAnswer escaping{.ranks = {a_rank(0, std::string(1024, '\x7f'))}, .not_at_store = {}};
  CHECK_FALSE(node_answer_from_json(to_json(escaping)));
}

}  // namespace
}  // namespace gangrun::doctor
