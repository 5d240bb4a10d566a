// The rendezvous end to end in one process: a real store server with the
// coordinator on one io_context, and real participants (TCP clients) on the
// same loop, each standing for a node's agent.
#include "rendezvous/coordinator.hpp"
#include "rendezvous/keys.hpp"
#include "rendezvous/participant.hpp"
#include "rendezvous/signing.hpp"
#include "store/async_client.hpp"
#include "store/server.hpp"

#include <boost/asio/io_context.hpp>
#include <catch2/catch.hpp>

#include <chrono>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

namespace gangrun::rendezvous {
namespace {

using namespace std::chrono_literals;

// A node's agent as the rendezvous sees it: records what it is told and,
// like the real agent, answers a round's end with its result.
struct TestNode {
  std::unique_ptr<Participant> participant;
  std::vector<RoundPlan> rounds;  // the rounds it was assigned
  std::vector<RoundEnd> ends;     // the ends it was told of
  std::optional<JobOutcome> outcome;
  std::optional<Error> lost;
  std::optional<Error> refused;
  bool running = false;

  // Leaves without a word, as a node that dies does.
  void leave() { participant.reset(); }

  void finish_round(bool succeeded, int exit_code = 0) {
    NodeReport report;
    report.agent = participant->me().id;
    report.host = participant->me().host;
    report.succeeded = succeeded;
    report.exit_code = exit_code;
    if (!succeeded) {
      report.rank = rounds.back().member(report.agent)->rank_offset;
      report.what = "exit code " + std::to_string(exit_code);
    }
    running = false;
    participant->report_result(report);
  }

  // Its workers were stopped because the whole gang hung (--on-hang stop
  // or restart).
  void stop_for_hang() {
    NodeReport report;
    report.agent = participant->me().id;
    report.host = participant->me().host;
    report.exit_code = 5;
    report.what = "hung";
    report.stopped_for_hang = true;
    running = false;
    participant->report_result(report);
  }

  // Its workers failed: ended lists those that ended by themselves (the
  // others are still running); final: all of its workers have ended.
  void report_failures(std::vector<RankEnd> ended, int exit_code, bool final) {
    NodeReport report;
    report.agent = participant->me().id;
    report.host = participant->me().host;
    report.exit_code = exit_code;
    report.rank = ended.front().rank;
    report.what = "exit code " + std::to_string(exit_code);
    report.ended = std::move(ended);
    if (!final) return participant->report_failure(report);
    running = false;
    participant->report_result(report);
  }
};

class Cluster {
 public:
  explicit Cluster(CoordinatorSettings settings) : settings_(settings) {
    store::ServerSettings server_settings;
    server_settings.raise_open_file_limit = false;
    server_settings.publish_only_prefixes = keys::coordinator_only_prefixes();
    server_ = store::Server::start(io_, server_settings).value();
    settings.master_addr = "127.0.0.1";
    settings.master_port = std::to_string(server_->port());
    coordinator_ = std::make_unique<Coordinator>(io_, *server_, settings);
  }

  // Joins a node named host with `workers` workers (node_rank for static).
  TestNode& join(const std::string& host, int workers, int node_rank = -1,
                 const std::string& run_id = "job") {
    return join_with_secret(host, workers, node_rank, settings_.secret, run_id);
  }

  // As join, with this secret rather than the job's.
  TestNode& join_with_secret(const std::string& host, int workers, int node_rank,
                             const std::optional<std::string>& secret,
                             const std::string& run_id = "job") {
    auto node = std::make_unique<TestNode>();
    TestNode* raw = node.get();
    ParticipantSettings settings;
    // No address: the participant takes the one its link leaves from.
    settings.me = AgentInfo{.id = host + "-id",
                            .host = host,
                            .address = "",
                            .node_rank = node_rank,
                            .local_world_size = workers,
                            .run_id = run_id};
    settings.store.port = server_->port();
    settings.store.connect_timeout = 5s;
    settings.read_timeout = 5s;
    settings.min_nodes = settings_.min_nodes;
    settings.max_nodes = settings_.max_nodes;
    settings.secret = secret;
    settings.heartbeat_interval = settings_.heartbeat_interval;
    settings.heartbeat_attempts = settings_.heartbeat_attempts;
    raw->participant = std::make_unique<Participant>(
        io_, settings,
        ParticipantEvents{.round_assigned =
                              [raw](const RoundPlan& plan, const Member&) {
                                raw->rounds.push_back(plan);
                                raw->running = true;
                              },
                          .round_ending =
                              [raw](const RoundEnd& end) {
                                raw->ends.push_back(end);
                                // The agent stops its workers, then reports.
                                if (raw->running) raw->finish_round(false, 143);
                              },
                          .job_done = [raw](const JobOutcome& outcome) { raw->outcome = outcome; },
                          .store_lost = [raw](const Error& error) { raw->lost = error; },
                          .refused = [raw](const Error& error) { raw->refused = error; }});
    raw->participant->join();
    nodes_.push_back(std::move(node));
    return *raw;
  }

  // Turns the loop until done() holds; fails the test after 10 s.
  void run_until(const std::function<bool()>& done) {
    auto deadline = std::chrono::steady_clock::now() + 10s;
    while (!done()) {
      REQUIRE(std::chrono::steady_clock::now() < deadline);
      io_.run_one_for(50ms);
    }
  }

  // A client of the store that is no agent: a stranger on the network, or
  // a fake agent that joins and then says nothing.
  std::unique_ptr<store::AsyncClient> stranger() {
    store::ClientSettings settings;
    settings.port = server_->port();
    settings.connect_timeout = 5s;
    return std::make_unique<store::AsyncClient>(io_, settings);
  }

  // Turns the loop until key exists in the store.
  void wait_for_key(const std::string& key) {
    auto client = stranger();
    std::optional<Expected<void>> done;
    client->wait({key}, [&](Expected<void> result) { done = std::move(result); });
    run_until([&] { return done.has_value(); });
    REQUIRE(*done);
  }

  // The value of key, which must exist.
  std::string read(const std::string& key) {
    wait_for_key(key);
    auto client = stranger();
    std::optional<Expected<std::string>> value;
    client->get(key, [&](Expected<std::string> got) { value = std::move(got); });
    run_until([&] { return value.has_value(); });
    REQUIRE(*value);
    return **value;
  }

  // Whether key is in the store now.
  bool exists(const std::string& key) {
    auto client = stranger();
    std::optional<Expected<bool>> found;
    client->check({key}, [&](Expected<bool> done) { found = std::move(done); });
    run_until([&] { return found.has_value(); });
    REQUIRE(*found);
    return **found;
  }

  // A signer of the job's secret bound to this job's nonce, as an agent's.
  Signer agent_signer() {
    Signer signer(settings_.secret, settings_.run_id);
    std::string sealed = read(keys::nonce());
    signer.bind_to_job(*Signer(settings_.secret, "").open(keys::nonce(), sealed));
    return signer;
  }

  // Writes key = value through client; the result once the store answered.
  Expected<void> write(store::AsyncClient& client, const std::string& key,
                       const std::string& value) {
    std::optional<Expected<void>> result;
    client.set(key, value, [&](Expected<void> done) { result = std::move(done); });
    // A SET has no reply: a CHECK after it shows whether the store kept the
    // connection (a refused write closes it).
    std::optional<Expected<bool>> after;
    client.check({key}, [&](Expected<bool> done) { after = std::move(done); });
    run_until([&] { return after.has_value(); });
    if (!*after) return tl::unexpected(after->error());
    return *result;
  }

 private:
  CoordinatorSettings settings_;
  boost::asio::io_context io_;
  std::unique_ptr<store::Server> server_;
  std::unique_ptr<Coordinator> coordinator_;
  std::vector<std::unique_ptr<TestNode>> nodes_;
};

CoordinatorSettings static_nodes(int count, int max_restarts = 0) {
  CoordinatorSettings settings;
  settings.min_nodes = settings.max_nodes = count;
  settings.static_ranks = true;
  settings.max_restarts = max_restarts;
  settings.join_timeout = 5s;
  settings.close_timeout = 5s;
  settings.run_id = "job";
  return settings;
}

CoordinatorSettings elastic_nodes(int min, int max, int max_restarts = 0) {
  CoordinatorSettings settings = static_nodes(max, max_restarts);
  settings.min_nodes = min;
  settings.static_ranks = false;
  settings.last_call_timeout = 100ms;
  return settings;
}

TEST_CASE("static: ranks follow node ranks, contiguous per node, counts may differ",
          "[rendezvous]") {
  Cluster cluster(static_nodes(3));
  // Joined out of order: node rank decides, not arrival.
  TestNode& c = cluster.join("c", 3, 2);
  TestNode& a = cluster.join("a", 2, 0);
  TestNode& b = cluster.join("b", 1, 1);
  cluster.run_until([&] { return a.running && b.running && c.running; });
  const RoundPlan& plan = a.rounds.back();
  CHECK(plan.world_size == 6);
  CHECK(plan.restart_count == 0);
  CHECK(plan.member("a-id")->rank_offset == 0);
  CHECK(plan.member("b-id")->rank_offset == 2);
  CHECK(plan.member("c-id")->rank_offset == 3);
  CHECK(plan.member("c-id")->group_rank == 2);
  for (TestNode* node : {&a, &b, &c}) node->finish_round(true);
  cluster.run_until([&] { return a.outcome && b.outcome && c.outcome; });
  for (TestNode* node : {&a, &b, &c}) CHECK(node->outcome->exit_code == 0);
}

TEST_CASE("static: one failure ends the round on every node with its exit code", "[rendezvous]") {
  Cluster cluster(static_nodes(2));
  TestNode& a = cluster.join("a", 1, 0);
  TestNode& b = cluster.join("b", 1, 1);
  cluster.run_until([&] { return a.running && b.running; });
  b.finish_round(false, 7);
  cluster.run_until([&] { return a.outcome && b.outcome; });
  REQUIRE(a.ends.size() == 1);
  CHECK(a.ends[0].reason == EndReason::failure);
  CHECK(a.ends[0].message == "rank 1 on node 1 (b, 127.0.0.1) failed (exit code 7)");
  CHECK(a.outcome->exit_code == 7);
  CHECK(b.outcome->exit_code == 7);
  CHECK(a.outcome->root_agent == "b-id");
}

TEST_CASE("static: a failure restarts every node together, one restart per failure",
          "[rendezvous]") {
  Cluster cluster(static_nodes(2, 1));
  TestNode& a = cluster.join("a", 1, 0);
  TestNode& b = cluster.join("b", 1, 1);
  cluster.run_until([&] { return a.running && b.running; });
  b.finish_round(false, 7);
  cluster.run_until([&] { return a.rounds.size() == 2 && b.rounds.size() == 2; });
  CHECK(a.rounds[1].restart_count == 1);
  CHECK(b.rounds[1].restart_count == 1);
  CHECK(a.rounds[1].round == 1);
  b.finish_round(false, 9);
  cluster.run_until([&] { return a.outcome && b.outcome; });
  CHECK(a.outcome->exit_code == 9);  // no restart left
}

TEST_CASE(
    "static: a hang ends the job with 5 on every node, whatever failed after it, and "
    "restarts are not used",
    "[rendezvous]") {
  Cluster cluster(static_nodes(2, 3));
  TestNode& a = cluster.join("a", 1, 0);
  TestNode& b = cluster.join("b", 1, 1);
  cluster.run_until([&] { return a.running && b.running; });
  // a's rank failed in its collective once b's were stopped for the hang.
  a.report_failures({RankEnd{.rank = 0, .failed = true, .ms_ago = 50}}, 1, false);
  b.stop_for_hang();
  cluster.run_until([&] { return a.outcome && b.outcome; });
  CHECK(a.rounds.size() == 1);
  CHECK(a.outcome->exit_code == 5);
  CHECK(b.outcome->exit_code == 5);
  CHECK(a.outcome->message == "node 1 (b, 127.0.0.1) failed (hung)");
}

TEST_CASE(
    "static: with --on-hang restart a hang restarts every node while restarts are left, "
    "then ends the job with 5",
    "[rendezvous]") {
  CoordinatorSettings settings = static_nodes(2, 1);
  settings.restart_on_hang = true;
  Cluster cluster(settings);
  TestNode& a = cluster.join("a", 1, 0);
  TestNode& b = cluster.join("b", 1, 1);
  cluster.run_until([&] { return a.running && b.running; });
  a.stop_for_hang();
  cluster.run_until([&] { return a.rounds.size() == 2 && b.rounds.size() == 2; });
  CHECK(b.rounds[1].restart_count == 1);
  a.stop_for_hang();
  cluster.run_until([&] { return a.outcome && b.outcome; });
  CHECK(a.outcome->exit_code == 5);
  CHECK(b.outcome->exit_code == 5);
}

TEST_CASE("static: a node whose connection closes is lost, and the others exit 3", "[rendezvous]") {
  Cluster cluster(static_nodes(2));
  TestNode& a = cluster.join("a", 1, 0);
  TestNode& b = cluster.join("b", 1, 1);
  cluster.run_until([&] { return a.running && b.running; });
  b.leave();
  cluster.run_until([&] { return a.outcome.has_value(); });
  REQUIRE(a.ends.size() == 1);
  CHECK(a.ends[0].reason == EndReason::lost_node);
  CHECK(a.outcome->exit_code == 3);
  // Named by node rank and address: host names alone may not tell nodes apart.
  CHECK_THAT(a.outcome->message, Catch::StartsWith("lost node 1 (b, 127.0.0.1): its agent died"));
}

TEST_CASE("static: a second agent with a node rank already held is turned away; the job goes on",
          "[rendezvous]") {
  Cluster cluster(static_nodes(2));
  TestNode& a = cluster.join("a", 1, 0);
  cluster.wait_for_key(keys::welcome("a-id"));
  TestNode& b = cluster.join("b", 1, 0);
  cluster.run_until([&] { return b.refused.has_value(); });
  CHECK(b.refused->exit_code() == 2);
  CHECK_THAT(b.refused->message(), Catch::Contains("node rank 0") && Catch::Contains("holds it"));
  TestNode& c = cluster.join("c", 1, 1);
  cluster.run_until([&] { return a.running && c.running; });
  a.finish_round(true);
  c.finish_round(true);
  cluster.run_until([&] { return a.outcome && c.outcome; });
  CHECK(a.outcome->exit_code == 0);
}

TEST_CASE("static: a node that joins after the job's outcome exits 3 naming it", "[rendezvous]") {
  Cluster cluster(static_nodes(1));
  TestNode& a = cluster.join("a", 1, 0);
  cluster.run_until([&] { return a.running; });
  a.finish_round(true);
  cluster.run_until([&] { return a.outcome.has_value(); });
  TestNode& late = cluster.join("late", 1, 0);
  cluster.run_until([&] { return late.outcome || late.refused; });
  // Its rank is taken (by an agent that has left, or not): either way it says so.
  if (late.refused) {
    CHECK(late.refused->exit_code() == 2);
  } else {
    CHECK(late.outcome->exit_code == 3);
    CHECK_THAT(late.outcome->message, Catch::Contains("succeeded before this node"));
  }
  CHECK(late.rounds.empty());
}

TEST_CASE("static: nodes missing after the join timeout end the job with exit 3", "[rendezvous]") {
  CoordinatorSettings settings = static_nodes(2);
  settings.join_timeout = 100ms;
  Cluster cluster(settings);
  TestNode& a = cluster.join("a", 1, 0);
  cluster.run_until([&] { return a.outcome.has_value(); });
  CHECK(a.outcome->exit_code == 3);
  CHECK(a.rounds.empty());
  CHECK(a.outcome->message.find("only 1 of the 2 nodes") != std::string::npos);
  // The node that never came is named by its rank.
  CHECK(a.outcome->message.find("(waiting for node rank 1 to join (1 of 2 joined))") !=
        std::string::npos);
  // It joined in time: it is not told that it came after the job.
  CHECK_THAT(a.outcome->message, !Catch::Contains("before this node"));
}

TEST_CASE("c10d: MIN nodes start after the last call; a newcomer grows the job without a restart",
          "[rendezvous]") {
  Cluster cluster(elastic_nodes(1, 2));
  TestNode& a = cluster.join("a", 2);
  cluster.run_until([&] { return a.running; });
  CHECK(a.rounds[0].members.size() == 1);
  TestNode& b = cluster.join("b", 1);
  cluster.run_until([&] { return a.rounds.size() == 2 && b.running; });
  REQUIRE(a.ends.size() == 1);
  CHECK(a.ends[0].reason == EndReason::scale_up);
  CHECK(a.rounds[1].members.size() == 2);
  CHECK(a.rounds[1].world_size == 3);
  CHECK(a.rounds[1].restart_count == 0);
  CHECK(b.rounds[0].round == a.rounds[1].round);
}

TEST_CASE("c10d: agents beyond MAX wait as spares and get the job's outcome", "[rendezvous]") {
  Cluster cluster(elastic_nodes(1, 1));
  TestNode& a = cluster.join("a", 1);
  cluster.run_until([&] { return a.running; });
  TestNode& spare = cluster.join("spare", 1);
  a.finish_round(true);
  cluster.run_until([&] { return a.outcome && spare.outcome; });
  CHECK(spare.rounds.empty());
  CHECK(spare.outcome->exit_code == 0);
}

TEST_CASE("c10d: a lost node shrinks the job to the nodes left, with one restart", "[rendezvous]") {
  Cluster cluster(elastic_nodes(1, 2, 1));
  TestNode& a = cluster.join("a", 1);
  TestNode& b = cluster.join("b", 1);
  cluster.run_until([&] { return a.running && b.running; });
  b.leave();
  cluster.run_until([&] { return a.rounds.size() == 2; });
  CHECK(a.rounds[1].members.size() == 1);
  CHECK(a.rounds[1].world_size == 1);
  CHECK(a.rounds[1].restart_count == 1);
  a.finish_round(true);
  cluster.run_until([&] { return a.outcome.has_value(); });
  CHECK(a.outcome->exit_code == 0);
}

TEST_CASE("c10d: below MIN after a loss, the survivors wait for a replacement", "[rendezvous]") {
  Cluster cluster(elastic_nodes(2, 3, 1));
  TestNode& a = cluster.join("a", 1);
  TestNode& b = cluster.join("b", 1);
  cluster.run_until([&] { return a.running && b.running; });
  b.leave();
  cluster.run_until([&] { return !a.ends.empty() && !a.running; });
  CHECK(a.ends[0].reason == EndReason::lost_node);
  CHECK(a.rounds.size() == 1);  // one node left, MIN is 2: no round yet
  TestNode& c = cluster.join("c", 1);
  cluster.run_until([&] { return a.rounds.size() == 2 && c.running; });
  CHECK(a.rounds[1].members.size() == 2);
  CHECK(a.rounds[1].restart_count == 1);
  CHECK(!a.outcome);
}

TEST_CASE("c10d: without a replacement within the join timeout, the survivors exit 3",
          "[rendezvous]") {
  CoordinatorSettings settings = elastic_nodes(2, 2, 1);
  settings.join_timeout = 200ms;
  Cluster cluster(settings);
  TestNode& a = cluster.join("a", 1);
  TestNode& b = cluster.join("b", 1);
  cluster.run_until([&] { return a.running && b.running; });
  b.leave();
  cluster.run_until([&] { return a.outcome.has_value(); });
  CHECK(a.outcome->exit_code == 3);
  CHECK(a.outcome->message.find("only 1 of the 2 nodes") != std::string::npos);
}

TEST_CASE("an agent of another job is turned away, and the job goes on", "[rendezvous]") {
  Cluster cluster(static_nodes(2));
  TestNode& a = cluster.join("a", 1, 0);
  TestNode& stranger = cluster.join("s", 1, 1, "other-job");
  cluster.run_until([&] { return stranger.refused.has_value(); });
  CHECK(stranger.refused->exit_code() == 2);
  CHECK(stranger.refused->message().find("--rdzv_id job") != std::string::npos);
  CHECK(stranger.refused->message().find("--rdzv_id other-job") != std::string::npos);
  TestNode& b = cluster.join("b", 1, 1);
  cluster.run_until([&] { return a.running && b.running; });
  CHECK(a.rounds[0].members.size() == 2);
}

TEST_CASE("a participant whose store goes away is told so", "[rendezvous]") {
  auto cluster = std::make_unique<Cluster>(static_nodes(2));
  // A second loop of its own, so the cluster (store and coordinator) can go.
  boost::asio::io_context io;
  ParticipantSettings settings;
  settings.me = AgentInfo{.id = "x",
                          .host = "x",
                          .address = "x",
                          .node_rank = 1,
                          .local_world_size = 1,
                          .run_id = "job"};
  settings.store.port = 1;  // nothing listens on port 1
  settings.store.connect_timeout = 200ms;
  settings.read_timeout = 200ms;
  std::optional<Error> lost;
  Participant participant(
      io, settings,
      ParticipantEvents{.round_assigned = {},
                        .round_ending = {},
                        .job_done = {},
                        .store_lost = [&](const Error& error) { lost = error; }});
  participant.join();
  auto deadline = std::chrono::steady_clock::now() + 10s;
  while (!lost && std::chrono::steady_clock::now() < deadline) io.run_one_for(50ms);
  REQUIRE(lost.has_value());
  CHECK(lost->message().find("127.0.0.1:1") != std::string::npos);
}

}  // namespace
}  // namespace gangrun::rendezvous

namespace gangrun::rendezvous {
namespace {

const std::string k_secret = "a-secret-of-this-job-0123456789";

CoordinatorSettings with_secret(CoordinatorSettings settings) {
  settings.secret = k_secret;
  return settings;
}

TEST_CASE("with a job secret, an agent without it or with another is turned away",
          "[rendezvous][security]") {
  Cluster cluster(with_secret(static_nodes(2)));
  TestNode& a = cluster.join("a", 1, 0);
  TestNode& none = cluster.join_with_secret("n", 1, 1, std::nullopt);
  TestNode& other = cluster.join_with_secret("o", 1, 1, std::string("another-secret-0123456789"));
  cluster.run_until([&] { return none.refused && other.refused; });
  CHECK_THAT(none.refused->message(), Catch::Contains("GANGRUN_JOB_SECRET"));
  CHECK_THAT(other.refused->message(), Catch::Contains("GANGRUN_JOB_SECRET"));
  TestNode& b = cluster.join("b", 1, 1);
  cluster.run_until([&] { return a.running && b.running; });
  CHECK(a.rounds[0].members.size() == 2);
  a.finish_round(true);
  b.finish_round(true);
  cluster.run_until([&] { return a.outcome && b.outcome; });
  CHECK(a.outcome->exit_code == 0);
}

TEST_CASE("a stranger can write none of the coordinator's keys nor report for an agent",
          "[rendezvous][security]") {
  Cluster cluster(static_nodes(2));  // no secret: these hold all the same
  TestNode& a = cluster.join("a", 1, 0);
  TestNode& b = cluster.join("b", 1, 1);
  cluster.run_until([&] { return a.running && b.running; });
  std::string forged_end = R"({"reason":"success","message":"forged"})";
  for (const std::string& key :
       {keys::end(0), keys::round(1), keys::round_brief(1), keys::assignment(1, "a-id"),
        keys::latest(), keys::welcome("x"), keys::nonce()}) {
    auto stranger = cluster.stranger();
    auto written = cluster.write(*stranger, key, forged_end);
    CHECK_FALSE(written);  // the store closed the connection
  }
  // Reports in the agents' names from another connection are not believed.
  auto stranger = cluster.stranger();
  NodeReport forged{.agent = "a-id", .host = "a", .succeeded = true};
  CHECK(cluster.write(*stranger, keys::result(0, "a-id"), to_json(forged)));
  CHECK(cluster.write(*stranger, keys::result(0, "b-id"), to_json(forged)));
  forged.succeeded = false;
  forged.exit_code = 0;
  CHECK(cluster.write(*stranger, keys::failed(0, "b-id"), to_json(forged)));
  // The round goes on until its real nodes end it.
  CHECK(a.ends.empty());
  CHECK(b.ends.empty());
  a.finish_round(false, 7);
  cluster.run_until([&] { return a.outcome && b.outcome; });
  CHECK(a.outcome->exit_code == 7);
  CHECK(b.outcome->exit_code == 7);
}

TEST_CASE("a fake agent that joins and then says nothing is lost within the heartbeat timeout",
          "[rendezvous][security]") {
  CoordinatorSettings settings = with_secret(static_nodes(2));
  // Short, yet long enough that a loaded machine never starves the real node's beats.
  settings.heartbeat_interval = 100ms;
  settings.heartbeat_attempts = 10;
  Cluster cluster(settings);
  TestNode& a = cluster.join("a", 1, 0);
  // Joins as node 1 with a valid MAC, as a stopped agent would have.
  auto silent = cluster.stranger();
  AgentInfo info{.id = "frozen-1-00",
                 .host = "frozen",
                 .address = "10.0.0.9",
                 .node_rank = 1,
                 .local_world_size = 1,
                 .run_id = "job"};
  Signer signer = cluster.agent_signer();
  REQUIRE(
      cluster.write(*silent, keys::join(info.id), signer.seal(keys::join(info.id), to_json(info))));
  cluster.run_until([&] { return a.outcome.has_value(); });
  REQUIRE(a.rounds.size() == 1);
  REQUIRE(a.ends.size() == 1);
  CHECK(a.ends[0].reason == EndReason::lost_node);
  CHECK_THAT(a.ends[0].message, Catch::StartsWith("lost node 1 (frozen, 10.0.0.9): ") &&
                                    Catch::Contains("no heartbeat"));
  CHECK(a.outcome->exit_code == 3);
  // Its link was closed, so that it stops its workers if it ever wakes.
  std::optional<Expected<bool>> after;
  silent->check({keys::latest()}, [&](Expected<bool> done) { after = std::move(done); });
  cluster.run_until([&] { return after.has_value(); });
  CHECK_FALSE(*after);
}

TEST_CASE("a join with a node rank outside the job, or a c10d join with one, is turned away",
          "[rendezvous][security]") {
  Cluster cluster(static_nodes(2));
  TestNode& far = cluster.join("far", 1, 5);
  cluster.run_until([&] { return far.refused.has_value(); });
  CHECK_THAT(far.refused->message(), Catch::Contains("node rank 5 is not one of 0..1"));
  Cluster elastic(elastic_nodes(1, 2));
  TestNode& ranked = elastic.join("ranked", 1, 0);
  elastic.run_until([&] { return ranked.refused.has_value(); });
  CHECK_THAT(ranked.refused->message(), Catch::Contains("c10d"));
}

TEST_CASE("c10d: the store's host's agent is rank 0, the others follow the order of joining",
          "[rendezvous][security]") {
  CoordinatorSettings settings = elastic_nodes(3, 3);
  settings.host_agent_id = "host-id";
  Cluster cluster(settings);
  TestNode& first = cluster.join("zzz", 1);
  cluster.wait_for_key(keys::welcome("zzz-id"));  // its join is in before the next
  TestNode& second = cluster.join("aaa-evil", 1);
  cluster.wait_for_key(keys::welcome("aaa-evil-id"));
  TestNode& host = cluster.join("host", 1);
  cluster.run_until([&] { return first.running && second.running && host.running; });
  // The lead (group rank 0) reads the whole plan; every other node only its own place.
  const RoundPlan& plan = host.rounds[0];
  CHECK(plan.member("host-id")->rank_offset == 0);
  CHECK(plan.member("zzz-id")->rank_offset == 1);
  CHECK(plan.member("aaa-evil-id")->rank_offset == 2);
  const RoundPlan& mine = first.rounds[0];
  CHECK(mine.nodes == 3);
  CHECK(mine.world_size == 3);
  CHECK(mine.members.size() == 1);
  CHECK(mine.member("zzz-id")->rank_offset == 1);
}

TEST_CASE("a failure is blamed on the rank the failed ranks of every node waited for",
          "[rendezvous][blame]") {
  CoordinatorSettings settings = static_nodes(2);
  settings.failure_window = 10min;  // the answers close it here
  Cluster cluster(settings);
  TestNode& a = cluster.join("a", 2, 0);
  TestNode& b = cluster.join("b", 2, 1);
  cluster.run_until([&] { return a.running && b.running; });
  // b's rank 3 timed out first, 50 ms before a's ranks; its rank 2 runs on.
  b.report_failures({{.rank = 3, .failed = true, .ms_ago = 50}}, 1, false);
  a.report_failures(
      {{.rank = 0, .failed = true, .ms_ago = 0}, {.rank = 1, .failed = true, .ms_ago = 0}}, 6,
      true);
  b.report_failures({{.rank = 3, .failed = true, .ms_ago = 60}}, 1, true);
  cluster.run_until([&] { return a.outcome && b.outcome; });
  // Both answered before the round's end: the outcome says it.
  CHECK(a.outcome->message ==
        "rank 2 on node 1 (b, 127.0.0.1) never reached the collective; ranks 0, 1, 3 timed out "
        "waiting");
  CHECK(a.outcome->waited_for == std::vector<int>{2});
  CHECK(a.outcome->root_agent == "b-id");
  // The job's code is the first failure's: b's rank 3.
  CHECK(a.outcome->exit_code == 1);
  CHECK(b.outcome->exit_code == 1);
}

TEST_CASE("without a rank left behind the first failure of all nodes is the root cause",
          "[rendezvous][blame]") {
  CoordinatorSettings settings = static_nodes(2);
  settings.failure_window = 10min;
  Cluster cluster(settings);
  TestNode& a = cluster.join("a", 1, 0);
  TestNode& b = cluster.join("b", 1, 1);
  cluster.run_until([&] { return a.running && b.running; });
  a.report_failures({{.rank = 0, .failed = true, .ms_ago = 0}}, 6, true);
  b.report_failures({{.rank = 1, .failed = true, .ms_ago = 40}}, 9, true);
  cluster.run_until([&] { return a.outcome && b.outcome; });
  CHECK(a.outcome->message == "rank 1 on node 1 (b, 127.0.0.1) failed (exit code 9)");
  CHECK(a.outcome->waited_for.empty());
  CHECK(a.outcome->exit_code == 9);
  CHECK(a.outcome->root_agent == "b-id");
}

TEST_CASE("in the failure window, a node that succeeded and one that failed end the job failed",
          "[rendezvous][blame]") {
  CoordinatorSettings settings = static_nodes(2);
  settings.failure_window = 10min;  // the answers close it
  Cluster cluster(settings);
  TestNode& a = cluster.join("a", 1, 0);
  TestNode& b = cluster.join("b", 1, 1);
  cluster.run_until([&] { return a.running && b.running; });
  a.report_failures({{.rank = 0, .failed = true, .ms_ago = 0}}, 7, true);
  b.finish_round(true);
  cluster.run_until([&] { return a.outcome && b.outcome; });
  CHECK(a.outcome->exit_code == 7);
  CHECK(a.outcome->message == "rank 0 on node 0 (a, 127.0.0.1) failed (exit code 7)");
  CHECK(b.outcome->exit_code == 7);
}

}  // namespace
}  // namespace gangrun::rendezvous

namespace gangrun::rendezvous {
namespace {

TEST_CASE("a join read from another job's store is not believed, even with its secret and run id",
          "[rendezvous][security]") {
  // Two jobs started the documented way: one secret file, the default run id.
  Cluster first(with_secret(static_nodes(2)));
  TestNode& a = first.join("a", 1, 0);
  TestNode& b = first.join("b", 1, 1);
  first.run_until([&] { return a.running && b.running; });
  std::string join = first.read(keys::join("b-id"));
  std::string beat = first.read(keys::alive("b-id"));

  Cluster second(with_secret(static_nodes(2)));
  TestNode& a2 = second.join("a2", 1, 0);
  auto stranger = second.stranger();
  // Byte for byte: the store takes it, the coordinator does not.
  REQUIRE(second.write(*stranger, keys::join("b-id"), join));
  CHECK(second.write(*stranger, keys::alive("b-id"), beat));
  TestNode& b2 = second.join("b2", 1, 1);
  second.run_until([&] { return a2.running && b2.running; });
  REQUIRE(a2.rounds.size() == 1);
  CHECK(a2.rounds[0].member("b2-id") != nullptr);
  CHECK(a2.rounds[0].member("b-id") == nullptr);
  a2.finish_round(true);
  b2.finish_round(true);
  second.run_until([&] { return a2.outcome && b2.outcome; });
  CHECK(a2.outcome->exit_code == 0);
}

TEST_CASE(
    "a stack request is the coordinator's to number: strangers can neither write nor shift one",
    "[rendezvous][security]") {
  Cluster cluster(with_secret(static_nodes(1)));
  TestNode& a = cluster.join("a", 1, 0);
  cluster.run_until([&] { return a.running; });
  for (const std::string& key :
       {keys::doctor_request(0, 1), std::string(keys::k_doctor_prefix) + "requests/0",
        keys::doctor_asked("x")}) {
    auto stranger = cluster.stranger();
    CHECK_FALSE(cluster.write(*stranger, key, R"({"why":"hang","silent_for_s":999,"ask":"x"})"));
  }
  // An ask without the job's MAC is not published.
  auto stranger = cluster.stranger();
  CHECK(cluster.write(*stranger, keys::doctor_ask(0, "forged"),
                      R"({"why":"hang","silent_for_s":999,"ask":"forged"})"));
  // One with it is, as request 1, and says which ask it was.
  Signer signer = cluster.agent_signer();
  std::string request = R"({"why":"asked","silent_for_s":0,"ask":"mine"})";
  CHECK(cluster.write(*stranger, keys::doctor_ask(0, "mine"),
                      signer.seal(keys::doctor_ask(0, "mine"), request)));
  CHECK(*signer.open(keys::doctor_asked("mine"), cluster.read(keys::doctor_asked("mine"))) == "1");
  CHECK(*signer.open(keys::doctor_request(0, 1), cluster.read(keys::doctor_request(0, 1))) ==
        request);
  // A request is a few dozen bytes: a sealed ask of kilobytes is not published.
  std::string padded =
      R"({"why":"asked","silent_for_s":0,"ask":"big","pad":")" + std::string(2000, 'x') + R"("})";
  CHECK(cluster.write(*stranger, keys::doctor_ask(0, "big"),
                      signer.seal(keys::doctor_ask(0, "big"), padded)));
  // The stacks key (what `gangrun stacks` holds) may ask too.
  Signer stacks(derived_key(k_secret, k_stacks_purpose, "job"), "job");
  stacks.bind_to_job(signer.nonce());
  std::string again = R"({"why":"asked","silent_for_s":0,"ask":"cli"})";
  CHECK(cluster.write(*stranger, keys::doctor_ask(0, "cli"),
                      stacks.seal(keys::doctor_ask(0, "cli"), again)));
  // Number 2: the padded ask before it was not taken.
  CHECK(*signer.open(keys::doctor_asked("cli"), cluster.read(keys::doctor_asked("cli"))) == "2");
  // An ask turned away leaves no key: the padded one, one sealed with another secret, one for
  // a round that is not running, and those past the burst of 10 (40 asks would take 15 s at
  // 2 a second to be all taken).
  CHECK_FALSE(cluster.exists(keys::doctor_ask(0, "big")));
  Signer other(derived_key("another secret, of nobody in this job", k_stacks_purpose, "job"),
               "job");
  CHECK(cluster.write(*stranger, keys::doctor_ask(0, "forged"),
                      other.seal(keys::doctor_ask(0, "forged"), request)));
  CHECK(cluster.write(*stranger, keys::doctor_ask(7, "late"),
                      signer.seal(keys::doctor_ask(7, "late"), request)));
  constexpr int k_asks = 40;
  for (int i = 0; i < k_asks; ++i) {
    std::string id = "burst" + std::to_string(i);
    CHECK(cluster.write(*stranger, keys::doctor_ask(0, id),
                        signer.seal(keys::doctor_ask(0, id), request)));
  }
  CHECK_FALSE(cluster.exists(keys::doctor_ask(0, "forged")));
  CHECK_FALSE(cluster.exists(keys::doctor_asked("forged")));
  CHECK_FALSE(cluster.exists(keys::doctor_ask(7, "late")));
  int taken = 0;
  for (int i = 0; i < k_asks; ++i) {
    std::string id = "burst" + std::to_string(i);
    CHECK_FALSE(cluster.exists(keys::doctor_ask(0, id)));
    taken += cluster.exists(keys::doctor_asked(id)) ? 1 : 0;
  }
  CHECK(taken < k_asks);
  a.finish_round(true);
  cluster.run_until([&] { return a.outcome.has_value(); });
}

TEST_CASE("Only the latest gang doctor's requests keep their keys in the store", "[rendezvous]") {
  CoordinatorSettings settings = with_secret(static_nodes(1));
  settings.doctor_requests_kept = 2;
  Cluster cluster(settings);
  TestNode& a = cluster.join("a", 1, 0);
  cluster.run_until([&] { return a.running; });
  Signer signer = cluster.agent_signer();
  auto client = cluster.stranger();
  for (int i = 1; i <= 4; ++i) {
    std::string id = "ask" + std::to_string(i);
    std::string request = R"({"why":"status","silent_for_s":0,"ask":")" + id + R"("})";
    CHECK(cluster.write(*client, keys::doctor_ask(0, id),
                        signer.seal(keys::doctor_ask(0, id), request)));
    CHECK(*signer.open(keys::doctor_asked(id), cluster.read(keys::doctor_asked(id))) ==
          std::to_string(i));
    // The ask became the request: it is gone at once.
    CHECK_FALSE(cluster.exists(keys::doctor_ask(0, id)));
  }
  // Requests 3 and 4 stay; 1 and 2, and the asks they were, are gone.
  CHECK_FALSE(cluster.exists(keys::doctor_request(0, 1)));
  CHECK_FALSE(cluster.exists(keys::doctor_request(0, 2)));
  CHECK_FALSE(cluster.exists(keys::doctor_asked("ask1")));
  CHECK_FALSE(cluster.exists(keys::doctor_asked("ask2")));
  CHECK(cluster.exists(keys::doctor_request(0, 3)));
  CHECK(cluster.exists(keys::doctor_request(0, 4)));
  CHECK(cluster.exists(keys::doctor_asked("ask4")));
  a.finish_round(true);
  cluster.run_until([&] { return a.outcome.has_value(); });
}

}  // namespace
}  // namespace gangrun::rendezvous
