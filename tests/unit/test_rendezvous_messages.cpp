// What the rendezvous believes of a message from the store: its MAC
// (signing.hpp) and every field's type and range (messages.hpp).
#include "rendezvous/messages.hpp"
#include "rendezvous/signing.hpp"

#include <catch2/catch.hpp>

#include <string>

namespace gangrun::rendezvous {
namespace {

const std::string k_secret = "0123456789abcdef0123456789abcdef";

TEST_CASE("a sealed message opens only under its key, job and secret", "[rendezvous]") {
  Signer signer(k_secret, "job");
  std::string value = signer.seal("gangrun/run/rdzv/end/0", R"({"reason":"success"})");
  CHECK(value.size() == 64 + 1 + 20);
  CHECK(signer.open("gangrun/run/rdzv/end/0", value).value() == R"({"reason":"success"})");
  // Replayed under another key, round or job, or made with another secret.
  CHECK_FALSE(signer.open("gangrun/run/rdzv/end/1", value));
  CHECK_FALSE(Signer(k_secret, "other-job").open("gangrun/run/rdzv/end/0", value));
  CHECK_FALSE(Signer(k_secret + "x", "job").open("gangrun/run/rdzv/end/0", value));
  // A changed message, or none at all.
  std::string changed = value;
  changed.back() = '!';
  CHECK_FALSE(signer.open("gangrun/run/rdzv/end/0", changed));
  auto unsigned_value = signer.open("gangrun/run/rdzv/end/0", R"({"reason":"success"})");
  REQUIRE_FALSE(unsigned_value);
  CHECK_THAT(unsigned_value.error().message(), Catch::Contains("no MAC"));
}

TEST_CASE("without a secret messages are stored as they are", "[rendezvous]") {
  Signer open_signer(std::nullopt, "job");
  CHECK_FALSE(open_signer.authenticated());
  CHECK(open_signer.seal("k", "{}") == "{}");
  CHECK(open_signer.open("k", "{}").value() == "{}");
  // A sealed value from a side that has a secret: its message, unchecked.
  CHECK(open_signer.open("k", Signer(k_secret, "job").seal("k", "{}")).value() == "{}");
  // A message whose own colon falls where a MAC's would end is read whole.
  std::string message = R"({"agent":")" + std::string(53, 'a') + R"(":1})";
  REQUIRE(message[64] == ':');
  CHECK(open_signer.open("k", message).value() == message);
}

TEST_CASE("a node report and an outcome carry the ranks that ended and the blamed ones",
          "[rendezvous][blame]") {
  NodeReport report{.agent = "a-1",
                    .host = "a",
                    .succeeded = false,
                    .rank = 3,
                    .exit_code = 1,
                    .what = "exit code 1",
                    .stop_signal = std::nullopt,
                    .stopped_for_round_end = false,
                    .ended = {{.rank = 3, .failed = true, .ms_ago = 12},
                              {.rank = 2, .failed = false, .ms_ago = 0}}};
  auto read = node_report_from_json(to_json(report));
  REQUIRE(read);
  REQUIRE(read->ended.size() == 2);
  CHECK(read->ended[0].rank == 3);
  CHECK(read->ended[0].failed);
  CHECK(read->ended[0].ms_ago == 12);
  CHECK_FALSE(read->ended[1].failed);
  CHECK_FALSE(node_report_from_json(R"({"agent":"a","host":"a","succeeded":false,"rank":null,)"
                                    R"("exit_code":1,"what":"","stop_signal":null,)"
                                    R"("stopped_for_round_end":false,"ended":[[1.5,true,0]]})"));
  JobOutcome outcome{.exit_code = 1,
                     .message = "m",
                     .root_agent = "a-1",
                     .stop_signal = std::nullopt,
                     .waited_for = {2}};
  auto next = next_from_json(to_json(Next{outcome}));
  REQUIRE(next);
  CHECK(std::get<JobOutcome>(*next).waited_for == std::vector<int>{2});
  // Success blames nobody.
  CHECK_FALSE(next_from_json(R"({"kind":"done","exit_code":0,"message":"","root_agent":"",)"
                             R"("stop_signal":null,"waited_for":[2]})"));
}

TEST_CASE("new job secrets are long and differ", "[rendezvous]") {
  std::string a = new_job_secret();
  CHECK(a.size() == 64);
  CHECK(a != new_job_secret());
}

TEST_CASE("a join's fields are integers within range", "[rendezvous]") {
  auto join = [](const std::string& node_rank, const std::string& workers) {
    return agent_info_from_json(R"({"id":"h-1-ab","host":"h","address":"h","node_rank":)" +
                                node_rank + R"(,"local_world_size":)" + workers +
                                R"(,"run_id":"job"})");
  };
  CHECK(join("1", "8").value().node_rank == 1);
  CHECK_FALSE(join("99999999999999999999", "8"));
  CHECK_FALSE(join("1.5", "8"));
  CHECK_FALSE(join("\"1\"", "8"));
  CHECK_FALSE(join("-2", "8"));
  CHECK_FALSE(join("1", "0"));
  CHECK_FALSE(join("1", "-2147483648"));
  CHECK_FALSE(join("1", "1e9"));
  CHECK_FALSE(agent_info_from_json(
      R"({"id":"a/b","host":"h","address":"h","node_rank":0,"local_world_size":1,"run_id":"j"})"));
}

// Round 4 of nodes a (ranks 0-1) and b (rank 2).
RoundPlan round_of_a_and_b() {
  RoundPlan plan;
  plan.round = 4;
  plan.restart_count = 1;
  plan.world_size = 3;
  plan.master_addr = "10.0.0.1";
  plan.master_port = "29500";
  plan.members = {
      {.id = "a", .host = "a", .group_rank = 0, .rank_offset = 0, .local_world_size = 2},
      {.id = "b", .host = "b", .group_rank = 1, .rank_offset = 2, .local_world_size = 1}};
  plan.nodes = 2;
  return plan;
}

TEST_CASE("a round numbers its ranks node after node and adds up", "[rendezvous]") {
  RoundPlan plan = round_of_a_and_b();
  REQUIRE(next_from_json(to_json(Next{plan})));
  RoundPlan wrong = plan;
  wrong.world_size = 64;
  CHECK_FALSE(next_from_json(to_json(Next{wrong})));
  wrong = plan;
  wrong.members[1].rank_offset = 37;
  CHECK_FALSE(next_from_json(to_json(Next{wrong})));
}

TEST_CASE("a node's assignment carries the round's shared facts and its own place only",
          "[rendezvous]") {
  RoundPlan plan = round_of_a_and_b();
  std::string text = to_json(assignment_of(plan, plan.members[1]));
  CHECK(text.find("\"a\"") == std::string::npos);  // no word of the other node
  auto read = assignment_from_json(text);
  REQUIRE(read);
  RoundPlan mine = plan_of(*read);
  CHECK(mine.round == 4);
  CHECK(mine.restart_count == 1);
  CHECK(mine.nodes == 2);
  CHECK(mine.world_size == 3);
  CHECK(mine.master_addr == "10.0.0.1");
  REQUIRE(mine.members.size() == 1);
  CHECK(mine.member("b")->rank_offset == 2);
  CHECK_FALSE(mine.member("a"));

  // A place outside the round's nodes or world is no assignment the coordinator made.
  Assignment wrong = assignment_of(plan, plan.members[1]);
  wrong.me.group_rank = 2;
  CHECK_FALSE(assignment_from_json(to_json(wrong)));
  wrong = assignment_of(plan, plan.members[1]);
  wrong.me.rank_offset = 3;
  CHECK_FALSE(assignment_from_json(to_json(wrong)));
  CHECK_FALSE(assignment_from_json(to_json(Next{plan})));  // a plan is not an assignment
}

TEST_CASE("a round's brief says it formed, or carries the job's outcome", "[rendezvous]") {
  auto formed = brief_from_json(to_json(Brief{RoundFormed{.round = 9}}));
  REQUIRE(formed);
  CHECK(std::get<RoundFormed>(*formed).round == 9);
  auto done = brief_from_json(
      to_json(Brief{JobOutcome{.exit_code = 1, .message = "rank 3 failed", .root_agent = "a"}}));
  REQUIRE(done);
  CHECK(std::get<JobOutcome>(*done).exit_code == 1);
  CHECK_FALSE(brief_from_json(R"({"kind":"round","round":1})"));
}

TEST_CASE("a round carries each node's address, which messages name it by", "[rendezvous]") {
  RoundPlan plan;
  plan.world_size = 2;
  plan.master_addr = "10.0.0.1";
  plan.master_port = "29500";
  plan.members = {
      {.id = "a", .host = "vm", .address = "10.0.0.1", .group_rank = 0},
      {.id = "b", .host = "vm", .address = "10.0.0.2", .group_rank = 1, .rank_offset = 1}};
  auto read = next_from_json(to_json(Next{plan}));
  REQUIRE(read);
  const auto& members = std::get<RoundPlan>(*read).members;
  REQUIRE(members.size() == 2);
  CHECK(members[1].host == "vm");
  CHECK(members[1].address == "10.0.0.2");
}

TEST_CASE("an outcome's exit code and signal are in range, and success has no root cause",
          "[rendezvous]") {
  CHECK(next_from_json(R"({"kind":"done","exit_code":7,"message":"m","root_agent":"a",)"
                       R"("stop_signal":null})"));
  CHECK_FALSE(next_from_json(R"({"kind":"done","exit_code":0,"message":"","root_agent":"a",)"
                             R"("stop_signal":null})"));
  CHECK_FALSE(next_from_json(R"({"kind":"done","exit_code":143,"message":"","root_agent":"a",)"
                             R"("stop_signal":99})"));
  CHECK_FALSE(next_from_json(R"({"kind":"done","exit_code":256,"message":"","root_agent":"a",)"
                             R"("stop_signal":null})"));
}

TEST_CASE("text from the store comes back printable", "[rendezvous]") {
  auto end = round_end_from_json(R"({"reason":"failure","message":"x\u001b[2Jy"})");
  REQUIRE(end);
  CHECK(end->message == "x\\x1b[2Jy");
}

TEST_CASE("the length limit holds for the printable text kept, so it reads back the same",
          "[rendezvous]") {
  // 2000 DEL characters fit the 4096-byte limit but escape to 8000 bytes.
  std::string dels(2000, '\x7f');
  std::string written = R"({"reason":"failure","message":")" + dels + R"("})";
  auto end = round_end_from_json(written);
  REQUIRE_FALSE(end);
  CHECK(end.error().message().find("once made printable") != std::string::npos);
  auto fits =
      round_end_from_json(R"({"reason":"failure","message":")" + dels.substr(0, 1024) + R"("})");
  REQUIRE(fits);
  CHECK(round_end_from_json(to_json(*fits)));
}

}  // namespace
}  // namespace gangrun::rendezvous
