// gangrun_swarm: many simulated nodes of one gangrun job in one process, for
// the scale tests and benchmarks (issue 40). Each node is the real agent's own
// rendezvous::Participant, with the settings agent::participant_settings()
// derives from a plan, over its own two TCP connections to a real gangrun
// head's store; only the workers are stand-ins (no processes). All nodes share
// one Asio loop on one thread, so 1,024 of them fit where 1,024 agents do not.
//
//   gangrun_swarm --store HOST:PORT --nnodes N|MIN:MAX --count K [--first-node F]
//                 [--run-id ID] [--local-world-size L] [--rdzv static|c10d]
//                 [--heartbeat-attempts K] [--hang-timeout S]
//
// Nodes F .. F+K-1 (F defaults to 1: node 0 is the head). Static: node rank F+i;
// c10d: node rank -1, as a c10d agent's. GANGRUN_JOB_SECRET or
// GANGRUN_JOB_SECRET_FILE is read as a real agent reads it. --heartbeat-attempts:
// as a real agent's --rdzv_conf keep_alive_max_attempt=K (give the head the same).
//
// Each node also has the gang doctor's link that every agent of several nodes
// has (doctor/watch/doctor_link.hpp: two more connections), and answers the
// lead's and `gangrun stacks`' requests at once with a stand-in stack for each
// of its ranks (wait_for_work, as scripts/bench/stand_in_stack_tool gives a
// real agent); `gangrun top`'s status
// requests go unanswered. --hang-timeout S: as a real agent's, every node tells
// the lead its ranks' silence each tick, counted from the round's start (the
// stand-ins print nothing). The lead must be the head (static: node 0): a
// swarm node that leads a round watches nothing.
//
// stdin, one command a line:
//   fail K [CODE]  node K's local rank 0 exits CODE (default 1): the node
//                  reports the failure, then its result, as an agent whose
//                  other workers it stopped at once (failure window 0)
//   succeed        every node in a round: its workers exit 0, it reports
//   leave K        node K's participant is destroyed: its connections close,
//                  as a killed agent's do
//   quit           every node leaves; the swarm exits
// stdout, one JSON line per event, flushed, t in CLOCK_MONOTONIC seconds:
//   {"event": "assigned"|"ending"|"failed"|"done"|"lost"|"refused"|"left"|"answered",
//    "node": K, "round": R, "t": T, ...}   ("answered": "request": n, "why": hang|asked)
//   and {"event": "all_assigned"|"all_ending"|"all_done", "round": R, "t": T} once every
//   node still in the job (not lost, refused or left) has seen that round's event
//   ("failed" counts as its node's "ending").
// Exit: 2 usage (or too few file descriptors), 3 a node lost the store, else the
// job's exit code as the nodes were told it.

#include "agent/node_link.hpp"
#include "agent/rendezvous_setup.hpp"
#include "doctor/watch/doctor_link.hpp"
#include "doctor/watch/silence_exchange.hpp"
#include "launch/job_secret.hpp"
#include "launch/plan.hpp"
#include "logging/logging.hpp"
#include "rendezvous/participant.hpp"
#include "supervise/gang.hpp"
#include "util/env.hpp"
#include "util/strings.hpp"

#include <boost/asio/io_context.hpp>
#include <boost/asio/posix/stream_descriptor.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/read_until.hpp>
#include <boost/asio/streambuf.hpp>
#include <nlohmann/json.hpp>

#include <sys/resource.h>
#include <time.h>
#include <unistd.h>

#include <charconv>
#include <chrono>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <functional>
#include <iostream>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <sstream>
#include <string>
#include <vector>

namespace {

using namespace gangrun;
namespace asio = boost::asio;

constexpr int k_usage = 2;
constexpr int k_lost = 3;
// Each node's connections: the participant's link and its waits, the doctor link's two.
constexpr rlim_t k_connections_per_node = 4;
// Descriptors beside the nodes' own: stdio, the loop's epoll and its eventfd, libsodium's.
constexpr rlim_t k_spare_descriptors = 64;

struct SwarmOptions {
  std::string store_host;
  int store_port = 0;
  int nnodes = 0;
  int min_nnodes = 0;
  int count = 0;
  int first_node = 1;
  std::string run_id = "none";
  int local_world_size = 1;
  bool c10d = false;
  std::optional<int> heartbeat_attempts;
  std::optional<double> hang_timeout_s;
};

double monotonic_seconds() {
  timespec now{};
  ::clock_gettime(CLOCK_MONOTONIC, &now);
  return static_cast<double>(now.tv_sec) + static_cast<double>(now.tv_nsec) / 1e9;
}

void print_line(nlohmann::json line) {
  line["t"] = monotonic_seconds();
  std::cout << line.dump() << '\n' << std::flush;
}

[[noreturn]] void usage_error(const std::string& message) {
  std::cerr << "gangrun_swarm: " << message << '\n';
  std::exit(k_usage);
}

std::optional<int> to_int(std::string_view text) {
  int value = 0;
  auto [end, error] = std::from_chars(text.data(), text.data() + text.size(), value);
  if (error != std::errc() || end != text.data() + text.size()) return std::nullopt;
  return value;
}

int int_of(const std::string& flag, const std::string& text, int low) {
  auto value = to_int(text);
  if (!value || *value < low) {
    usage_error(flag + " " + strings::printable(text) + ": give a whole number of at least " +
                std::to_string(low));
  }
  return *value;
}

SwarmOptions parse_options(int argc, char** argv) {
  SwarmOptions options;
  std::string nnodes;
  for (int i = 1; i < argc; ++i) {
    std::string flag = argv[i];
    if (i + 1 >= argc) usage_error(flag + " needs a value");
    std::string value = argv[++i];
    if (flag == "--store") {
      auto colon = value.rfind(':');
      if (colon == std::string::npos) usage_error("--store " + value + ": give HOST:PORT");
      options.store_host = value.substr(0, colon);
      options.store_port = int_of("--store's port", value.substr(colon + 1), 1);
    } else if (flag == "--nnodes") {
      nnodes = value;
    } else if (flag == "--count") {
      options.count = int_of(flag, value, 1);
    } else if (flag == "--first-node") {
      options.first_node = int_of(flag, value, 0);
    } else if (flag == "--run-id") {
      options.run_id = value;
    } else if (flag == "--local-world-size") {
      options.local_world_size = int_of(flag, value, 1);
    } else if (flag == "--heartbeat-attempts") {
      options.heartbeat_attempts = int_of(flag, value, 1);
    } else if (flag == "--hang-timeout") {
      char* end = nullptr;
      double seconds = std::strtod(value.c_str(), &end);
      if (end == value.c_str() || *end != '\0' || !(seconds > 0)) {
        usage_error("--hang-timeout " + strings::printable(value) + ": give seconds above 0");
      }
      options.hang_timeout_s = seconds;
    } else if (flag == "--rdzv") {
      if (value != "static" && value != "c10d") usage_error("--rdzv " + value + ": static or c10d");
      options.c10d = value == "c10d";
    } else {
      usage_error("unknown flag " + strings::printable(flag) +
                  " (see the comment at the top of tests/helpers/swarm.cpp)");
    }
  }
  if (options.store_host.empty() || nnodes.empty() || options.count == 0) {
    usage_error("give --store HOST:PORT, --nnodes N|MIN:MAX and --count K");
  }
  auto colon = nnodes.find(':');
  options.nnodes =
      int_of("--nnodes", colon == std::string::npos ? nnodes : nnodes.substr(colon + 1), 1);
  options.min_nnodes =
      colon == std::string::npos ? options.nnodes : int_of("--nnodes", nnodes.substr(0, colon), 1);
  if (colon != std::string::npos && !options.c10d)
    usage_error("--nnodes MIN:MAX needs --rdzv c10d");
  if (!options.c10d && options.first_node + options.count > options.nnodes) {
    usage_error("nodes " + std::to_string(options.first_node) + ".." +
                std::to_string(options.first_node + options.count - 1) +
                " do not fit a static job of --nnodes " + std::to_string(options.nnodes));
  }
  return options;
}

void raise_descriptor_limit(int count) {
  rlimit limit{};
  ::getrlimit(RLIMIT_NOFILE, &limit);
  rlim_t needed = k_connections_per_node * static_cast<rlim_t>(count) + k_spare_descriptors;
  if (limit.rlim_max != RLIM_INFINITY && limit.rlim_max < needed) {
    usage_error(std::to_string(count) + " nodes need " + std::to_string(needed) +
                " file descriptors, and the hard limit (ulimit -Hn) is " +
                std::to_string(limit.rlim_max) + ": raise it, or run fewer nodes per swarm");
  }
  limit.rlim_cur = limit.rlim_max;
  if (::setrlimit(RLIMIT_NOFILE, &limit) != 0) {
    usage_error("cannot raise the file descriptor limit to the hard limit");
  }
}

// The plan of a real agent on node `node`, as far as participant_settings()
// reads it; everything else (the rendezvous' timeouts, the heartbeat) keeps
// the defaults a real agent's plan has.
// Node K's host name, as its plan and its stand-in stacks give it.
std::string host_of(int node) { return "swarm" + std::to_string(node); }

launch::LaunchPlan plan_of(const SwarmOptions& options, int node,
                           const std::optional<std::string>& secret) {
  launch::LaunchPlan plan;
  plan.host = host_of(node);
  plan.run_id = options.run_id;
  plan.nnodes = options.nnodes;
  plan.min_nnodes = options.min_nnodes;
  plan.node_rank = node;
  plan.c10d = options.c10d;
  plan.local_world_size = options.local_world_size;
  plan.master_addr = options.store_host;
  plan.master_port = options.store_port;
  plan.job_secret = secret;
  if (options.heartbeat_attempts) {
    plan.rendezvous.keep_alive_max_attempt = *options.heartbeat_attempts;
  }
  return plan;
}

// The stand-in workers of one node in a round, as its gang would report them.
supervise::AttemptOutcome stand_in_workers(const rendezvous::Member& me) {
  supervise::AttemptOutcome outcome;
  for (int local = 0; local < me.local_world_size; ++local) {
    supervise::WorkerOutcome worker;
    worker.rank = me.rank_offset + local;
    worker.local_rank = local;
    worker.pid = 0;  // a stand-in: no process
    worker.started_at = std::chrono::system_clock::now();
    outcome.workers.push_back(worker);
  }
  return outcome;
}

void end_worker(supervise::AttemptOutcome& outcome, std::size_t index, supervise::ExitStatus status,
                bool stopped) {
  supervise::WorkerOutcome& worker = outcome.workers.at(index);
  worker.status = status;
  worker.stopped_by_gangrun = stopped;
  worker.ended_at = std::chrono::system_clock::now();
  outcome.end_order.push_back(index);
}

class Swarm;

// What a stand-in rank's stack reads as: the same for all, as in a gang that
// waits in one collective, and the same as scripts/bench/stand_in_stack_tool
// answers for a real agent's workers, so that the head's ranks group with them.
doctor::RankStacks stand_in_stack(int rank, const std::string& host) {
  doctor::ThreadStack main_thread{
      .name = "MainThread",
      .os_thread_id = 0,
      .active = false,
      .frames = {{.function = "wait_for_work", .file = "idle_worker.py", .line = 9},
                 {.function = "serve", .file = "idle_worker.py", .line = 19},
                 {.function = "<module>", .file = "idle_worker.py", .line = 22}}};
  return {.rank = rank,
          .host = host,
          .pid = 0,
          .threads = {main_thread},
          .unavailable = {},
          .stopped = {}};
}

// One simulated node: a participant, its doctor link and its stand-in workers.
struct Node {
  int number = 0;
  std::unique_ptr<rendezvous::Participant> participant;
  std::unique_ptr<doctor::DoctorLink> doctor;
  doctor::DoctorRound doctor_round;                 // as a non-lead agent's doctor keeps it
  std::optional<doctor::SilenceExchange> silences;  // --hang-timeout
  std::optional<rendezvous::Member> me;             // in the current round
  std::uint64_t round = 0;
  bool running = false;   // its stand-ins run in `round` and have not reported
  bool finished = false;  // done, lost, refused or left
  bool gone = false;      // lost, refused or left: no longer counted
};

class Swarm {
 public:
  Swarm(asio::io_context& io, const SwarmOptions& options, std::optional<std::string> secret)
      : io_(io), options_(options), secret_(std::move(secret)), input_(io) {}

  void start() {
    for (int i = 0; i < options_.count; ++i) {
      int number = options_.first_node + i;
      Node& node = nodes_[number];
      node.number = number;
      launch::LaunchPlan plan = plan_of(options_, number, secret_);
      rendezvous::ParticipantSettings settings = agent::participant_settings(plan);
      node.doctor = std::make_unique<doctor::DoctorLink>(
          io_, agent::doctor_link_settings(plan, settings.me.id),
          [this, &node](std::int64_t request, const doctor::NodeRequest& what) {
            answer(node, request, what);
          });
      node.participant =
          std::make_unique<rendezvous::Participant>(io_, std::move(settings), events_of(node));
      node.doctor_round.hang_watched = options_.hang_timeout_s.has_value();
      if (options_.hang_timeout_s) {
        node.silences.emplace(
            io_,
            doctor::SilenceExchange::Channel{
                .tell =
                    [&node](std::chrono::milliseconds silent) {
                      node.doctor->publish_silence(silent);
                    },
                .read =
                    [](const std::function<void(doctor::SilenceExchange::Silences)>& done) {
                      done({});
                    }},
            doctor::SilenceExchange::tick_for(*options_.hang_timeout_s), node.doctor_round,
            [&node] { return node.doctor_round.start; });
      }
    }
    for (auto& [number, node] : nodes_) node.participant->join();
    read_commands();
  }

  int exit_code() const { return exit_code_; }

 private:
  rendezvous::ParticipantEvents events_of(Node& node) {
    return rendezvous::ParticipantEvents{
        .round_assigned = [this, &node](const rendezvous::RoundPlan& plan,
                                        const rendezvous::Member& me) { assigned(node, plan, me); },
        .round_ending = [this, &node](const rendezvous::RoundEnd&) { ending(node); },
        .job_done = [this, &node](const rendezvous::JobOutcome& outcome) { done(node, outcome); },
        .store_lost = [this, &node](const Error& error) { lost(node, "lost", error, k_lost); },
        .refused =
            [this, &node](const Error& error) { lost(node, "refused", error, error.exit_code()); }};
  }

  nlohmann::json event(const char* name, const Node& node) const {
    return {{"event", name}, {"node", node.number}, {"round", node.round}};
  }

  void assigned(Node& node, const rendezvous::RoundPlan& plan, const rendezvous::Member& me) {
    node.round = plan.round;
    node.me = me;
    node.running = true;
    node.doctor_round.start = std::chrono::steady_clock::now();
    const std::string& nonce = node.participant->job_nonce();
    node.doctor_round.nodes = doctor::NodeRound{.round = plan.round,
                                                .members = {me.id},
                                                .node_count = plan.nodes,
                                                .names = {},
                                                .lead = false,
                                                .job_nonce = nonce};
    node.doctor_round.over = false;
    node.doctor_round.goes_on = false;
    node.doctor->round_started(plan.round, {me.id}, nonce);
    if (node.silences) node.silences->round_started();
    nlohmann::json line = event("assigned", node);
    line["group_rank"] = me.group_rank;
    line["restart_count"] = plan.restart_count;
    print_line(line);
    assigned_[plan.round].insert(node.number);
    check_aggregates();
  }

  // Another node failed or left, or one joins: the stand-ins get SIGTERM and
  // are gone at once, and the node reports as an agent after its teardown.
  void ending(Node& node) {
    print_line(event("ending", node));
    round_over(node, /*goes_on=*/false);
    ended_[node.round].insert(node.number);
    if (node.running && node.me) {
      supervise::AttemptOutcome outcome = stand_in_workers(*node.me);
      for (std::size_t i = 0; i < outcome.workers.size(); ++i) {
        end_worker(outcome, i, supervise::ExitStatus::killed_by(SIGTERM), true);
      }
      node.running = false;
      node.participant->report_result(
          agent::round_report(node.participant->me(), outcome, /*stopped_for_round_end=*/true));
    }
    check_aggregates();
  }

  void done(Node& node, const rendezvous::JobOutcome& outcome) {
    nlohmann::json line = event("done", node);
    line["exit_code"] = outcome.exit_code;
    line["message"] = strings::printable(outcome.message);
    print_line(line);
    if (outcome.exit_code != 0 && exit_code_ == 0) exit_code_ = outcome.exit_code;
    finish(node, /*gone=*/false);
  }

  void lost(Node& node, const char* what, const Error& error, int code) {
    nlohmann::json line = event(what, node);
    line["message"] = strings::printable(error.message());
    print_line(line);
    if (exit_code_ == 0 || code == k_usage) exit_code_ = code;
    finish(node, /*gone=*/true);
  }

  // Leaving closes the node's connections, as a real agent does at its end.
  // Posted: the participant is inside its own callback now.
  void finish(Node& node, bool gone) {
    if (!node.finished) ++finished_;
    if (gone && !node.gone) ++gone_;
    node.finished = true;
    node.gone = gone;
    node.running = false;
    round_over(node, /*goes_on=*/false);
    asio::post(io_, [this, &node] {
      close(node);
      check_aggregates();
    });
  }

  // This node's stand-ins are done; goes_on: the round goes on elsewhere, and
  // the node still answers (with no ranks) until the coordinator ends it.
  void round_over(Node& node, bool goes_on) {
    node.doctor_round.over = true;
    node.doctor_round.goes_on = goes_on;
    if (node.silences) node.silences->stop();
    if (!goes_on && node.doctor) node.doctor->round_ended();
  }

  void close(Node& node) {
    node.silences.reset();
    node.doctor.reset();
    node.participant.reset();
  }

  // A request of the round: answered at once, as an agent whose ranks' stacks
  // read instantly; a node whose ranks are done answers with none.
  void answer(Node& node, std::int64_t request, const doctor::NodeRequest& what) {
    if (what.why == doctor::NodeRequest::Why::status) return;
    const doctor::DoctorRound& round = node.doctor_round;
    if (!round.nodes || (round.over && !round.goes_on)) return;
    doctor::NodeAnswer mine;
    if (node.running && node.me) {
      for (int local = 0; local < node.me->local_world_size; ++local) {
        mine.ranks.push_back(stand_in_stack(node.me->rank_offset + local, host_of(node.number)));
      }
    }
    node.doctor->answer(request, mine);
    nlohmann::json line = event("answered", node);
    line["request"] = request;
    line["why"] = what.why == doctor::NodeRequest::Why::hang ? "hang" : "asked";
    print_line(line);
  }

  // ---- commands -----------------------------------------------------------------

  void read_commands() {
    int fd = ::dup(STDIN_FILENO);
    boost::system::error_code error;
    input_.assign(fd, error);
    if (error) {
      ::close(fd);
      std::cerr << "gangrun_swarm: stdin cannot be watched (" << error.message()
                << "): no commands will be read\n";
      return;
    }
    next_command();
  }

  void next_command() {
    asio::async_read_until(input_, buffer_, '\n',
                           [this](const boost::system::error_code& error, std::size_t) {
                             if (error) return;  // end of input: no more commands
                             std::istream in(&buffer_);
                             std::string line;
                             std::getline(in, line);
                             command(line);
                             if (!stopped_) next_command();
                           });
  }

  Node* node_named(const std::string& word, const std::string& line) {
    auto number = to_int(word);
    auto found = number ? nodes_.find(*number) : nodes_.end();
    if (found == nodes_.end()) {
      std::cerr << "gangrun_swarm: " << strings::printable(line) << ": no node " << word
                << " here (nodes " << options_.first_node << ".."
                << options_.first_node + options_.count - 1 << ")\n";
      return nullptr;
    }
    return &found->second;
  }

  void command(const std::string& line) {
    std::istringstream words(line);
    std::string verb;
    std::string argument;
    std::string code_text;
    words >> verb >> argument >> code_text;
    if (verb.empty()) return;
    if (verb == "fail") {
      if (Node* node = node_named(argument, line))
        fail(*node, code_text.empty() ? 1 : to_int(code_text).value_or(1));
    } else if (verb == "succeed") {
      for (auto& [number, node] : nodes_) succeed(node);
    } else if (verb == "leave") {
      if (Node* node = node_named(argument, line)) leave(*node);
    } else if (verb == "quit") {
      for (auto& [number, node] : nodes_) close(node);
      stop();
    } else {
      std::cerr << "gangrun_swarm: unknown command " << strings::printable(line)
                << " (fail K [CODE], succeed, leave K, quit)\n";
    }
  }

  // Local rank 0 fails; the others are stopped at once, so the node's first
  // failure and its result go out one after the other, as a real agent's do
  // with failure window 0.
  void fail(Node& node, int code) {
    if (!node.running || !node.me) {
      std::cerr << "gangrun_swarm: node " << node.number << " runs no round now\n";
      return;
    }
    supervise::AttemptOutcome outcome = stand_in_workers(*node.me);
    end_worker(outcome, 0, supervise::ExitStatus::exited_with(code), false);
    outcome.first_failure = outcome.root_cause = 0;
    node.participant->report_failure(agent::failure_report(node.participant->me(), outcome));
    for (std::size_t i = 1; i < outcome.workers.size(); ++i) {
      end_worker(outcome, i, supervise::ExitStatus::killed_by(SIGTERM), true);
    }
    node.running = false;
    round_over(node, /*goes_on=*/true);
    node.participant->report_result(
        agent::round_report(node.participant->me(), outcome, /*stopped_for_round_end=*/false));
    print_line(event("failed", node));
    ended_[node.round].insert(node.number);
    check_aggregates();
  }

  void succeed(Node& node) {
    if (!node.running || !node.me) return;
    supervise::AttemptOutcome outcome = stand_in_workers(*node.me);
    for (std::size_t i = 0; i < outcome.workers.size(); ++i) {
      end_worker(outcome, i, supervise::ExitStatus::exited_with(0), false);
    }
    node.running = false;
    round_over(node, /*goes_on=*/true);
    node.participant->report_result(
        agent::round_report(node.participant->me(), outcome, /*stopped_for_round_end=*/false));
  }

  void leave(Node& node) {
    if (node.finished) return;
    close(node);
    ++finished_;
    if (!node.gone) ++gone_;
    node.finished = node.gone = true;
    node.running = false;
    print_line(event("left", node));
    check_aggregates();
  }

  // ---- aggregates ---------------------------------------------------------------

  // Every node still in the job is in `seen`.
  bool everyone_in(const std::set<int>& seen) const {
    // Checked on every event: fewer seen than nodes still in needs no walk,
    // which would cost the swarm N per event, N² per round.
    if (seen.size() + gone_ < nodes_.size()) return false;
    for (const auto& [number, node] : nodes_) {
      if (!node.gone && !seen.contains(number)) return false;
    }
    return true;
  }

  void aggregate(const char* name, std::map<std::uint64_t, std::set<int>>& seen,
                 std::set<std::uint64_t>& said) {
    for (auto& [round, nodes] : seen) {
      if (said.contains(round) || !everyone_in(nodes)) continue;
      said.insert(round);
      print_line({{"event", name}, {"round", round}});
    }
  }

  void check_aggregates() {
    aggregate("all_assigned", assigned_, said_assigned_);
    aggregate("all_ending", ended_, said_ending_);
    if (finished_ < nodes_.size()) return;  // no walk of every node per event
    bool all_finished = true;
    bool any_done = false;
    for (const auto& [number, node] : nodes_) {
      all_finished = all_finished && node.finished && !node.participant;
      any_done = any_done || (node.finished && !node.gone);
    }
    if (!all_finished) return;
    if (any_done && !said_done_) {
      said_done_ = true;
      std::uint64_t last = 0;
      for (const auto& [number, node] : nodes_) last = std::max(last, node.round);
      print_line({{"event", "all_done"}, {"round", last}});
    }
    stop();
  }

  void stop() {
    stopped_ = true;
    io_.stop();
  }

  asio::io_context& io_;
  SwarmOptions options_;
  std::optional<std::string> secret_;
  std::map<int, Node> nodes_;  // by node number; never resized after start()
  asio::posix::stream_descriptor input_;
  asio::streambuf buffer_;
  std::map<std::uint64_t, std::set<int>> assigned_;  // per round, the nodes that saw it assigned
  std::map<std::uint64_t, std::set<int>> ended_;     // ... that saw it end (or failed in it)
  std::set<std::uint64_t> said_assigned_;
  std::set<std::uint64_t> said_ending_;
  std::size_t gone_ = 0;      // nodes lost, refused or left
  std::size_t finished_ = 0;  // ... or done
  bool said_done_ = false;
  bool stopped_ = false;
  int exit_code_ = 0;
};

}  // namespace

int main(int argc, char** argv) {
  // The participants' warnings go to stderr, as an agent's do: stdout is the events' JSON lines.
  logging::setup_default_logging();
  SwarmOptions options = parse_options(argc, argv);
  raise_descriptor_limit(options.count);
  auto secret = launch::read_job_secret(current_environment());
  if (!secret) usage_error(secret.error().message());
  std::optional<std::string> value;
  if (*secret) value = (*secret)->value;
  // A harness that closes our stdout must not kill us in the middle of a line.
  std::signal(SIGPIPE, SIG_IGN);
  asio::io_context io;
  Swarm swarm(io, options, value);
  swarm.start();
  io.run();
  return swarm.exit_code();
}
