#include "rendezvous/messages.hpp"

#include "report/node_name.hpp"
#include "util/printable_within.hpp"
#include "util/strings.hpp"

#include <nlohmann/json.hpp>

namespace gangrun::rendezvous {
namespace {

using nlohmann::json;

const char* reason_name(EndReason reason) {
  switch (reason) {
    case EndReason::success:
      return "success";
    case EndReason::failure:
      return "failure";
    case EndReason::signal:
      return "signal";
    case EndReason::lost_node:
      return "lost_node";
    case EndReason::scale_up:
      return "scale_up";
    case EndReason::shutdown:
      return "shutdown";
  }
  return "failure";
}

std::optional<EndReason> reason_from_name(const std::string& name) {
  for (EndReason reason : {EndReason::success, EndReason::failure, EndReason::signal,
                           EndReason::lost_node, EndReason::scale_up, EndReason::shutdown}) {
    if (name == reason_name(reason)) return reason;
  }
  return std::nullopt;
}

json optional_int(const std::optional<int>& value) { return value ? json(*value) : json(nullptr); }

// Every field is read as what it must be and within what it can be: a
// message comes over the network, and a float, a string or a number out of
// range must not reach an int conversion, a signal or a rank.
[[noreturn]] void invalid(const char* name, const std::string& why) {
  throw std::runtime_error(std::string("\"") + name + "\" " + why);
}

int read_int(const json& object, const char* name, std::int64_t min, std::int64_t max) {
  const json& value = object.at(name);
  if (!value.is_number_integer()) invalid(name, "is not an integer");
  if (value.is_number_unsigned() && value.get<std::uint64_t>() > static_cast<std::uint64_t>(max))
    invalid(name, "is out of range");
  std::int64_t number = value.get<std::int64_t>();
  if (number < min || number > max) invalid(name, "is out of range");
  return static_cast<int>(number);
}

std::uint64_t read_round(const json& object, const char* name) {
  const json& value = object.at(name);
  if (!value.is_number_unsigned() && !(value.is_number_integer() && value.get<std::int64_t>() >= 0))
    invalid(name, "is not a round number");
  return value.get<std::uint64_t>();
}

std::optional<int> read_optional_int(const json& object, const char* name, std::int64_t min,
                                     std::int64_t max) {
  auto found = object.find(name);
  if (found == object.end() || found->is_null()) return std::nullopt;
  return read_int(object, name, min, max);
}

std::string read_text(const json& object, const char* name, std::size_t max_size = 4096) {
  const json& value = object.at(name);
  if (!value.is_string()) invalid(name, "is not a string");
  // What other nodes wrote ends up in log lines and reports.
  auto text = strings::printable_within(value.get_ref<const std::string&>(), max_size);
  if (!text) invalid(name, std::string(text.error()));
  return *text;
}

bool read_bool(const json& object, const char* name) {
  const json& value = object.at(name);
  if (!value.is_boolean()) invalid(name, "is not true or false");
  return value.get<bool>();
}

// An agent id goes into store keys and log lines: host-name characters only.
std::string read_agent_id(const json& object, const char* name, bool may_be_empty = false) {
  std::string id = read_text(object, name, 256);
  if (id.empty() && !may_be_empty) invalid(name, "is empty");
  for (char c : id) {
    bool fine = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
                c == '-' || c == '.' || c == '_';
    if (!fine) invalid(name, "has a character an agent id never has");
  }
  return id;
}

// A list of integers within min..max, at most max_count of them.
std::vector<int> read_int_list(const json& object, const char* name, std::int64_t min,
                               std::int64_t max, std::size_t max_count) {
  auto found = object.find(name);
  if (found == object.end()) return {};
  if (!found->is_array() || found->size() > max_count) invalid(name, "is not a list of ranks");
  std::vector<int> values;
  for (const json& value : *found) {
    json wrapped{{name, value}};
    values.push_back(read_int(wrapped, name, min, max));
  }
  return values;
}

// [[rank, failed, ms_ago], ...]: compact, since a node may hold 8 or more.
std::vector<RankEnd> read_rank_ends(const json& object) {
  auto found = object.find("ended");
  if (found == object.end()) return {};
  if (!found->is_array() || found->size() > static_cast<std::size_t>(k_max_local_world_size))
    invalid("ended", "is not a list of workers");
  std::vector<RankEnd> ends;
  for (const json& entry : *found) {
    if (!entry.is_array() || entry.size() != 3) invalid("ended", "is not a list of workers");
    json fields{{"rank", entry[0]}, {"failed", entry[1]}, {"ms_ago", entry[2]}};
    ends.push_back(RankEnd{.rank = read_int(fields, "rank", 0, k_max_ranks),
                           .failed = read_bool(fields, "failed"),
                           .ms_ago = read_int(fields, "ms_ago", 0, 1 << 30)});
  }
  return ends;
}

constexpr std::int64_t k_max_signal = 64;
constexpr std::int64_t k_max_exit_code = 255;

// Parses text and hands the object to read; a malformed message is a store
// error naming what it was meant to be.
template <typename T, typename Read>
Expected<T> parse(const std::string& text, const char* what, Read read) {
  try {
    json object = json::parse(text);
    if (!object.is_object()) throw std::runtime_error("not a JSON object");
    return read(object);
  } catch (const std::exception& error) {
    return fail(ErrorCode::store, std::string("a rendezvous ") + what +
                                      " in the store is not one gangrun wrote (" + error.what() +
                                      ")");
  }
}

Member read_member(const json& member) {
  if (!member.is_object()) invalid("member", "is not a node");
  return Member{
      .id = read_agent_id(member, "id"),
      .host = read_text(member, "host", 1024),
      .address = read_text(member, "address", 1024),
      .group_rank = read_int(member, "group_rank", 0, k_max_ranks),
      .rank_offset = read_int(member, "rank_offset", 0, k_max_ranks),
      .local_world_size = read_int(member, "local_world_size", 1, k_max_local_world_size)};
}

json member_json(const Member& member) {
  return {{"id", member.id},
          {"host", member.host},
          {"address", member.address},
          {"group_rank", member.group_rank},
          {"rank_offset", member.rank_offset},
          {"local_world_size", member.local_world_size}};
}

RoundPlan read_round_plan(const json& object) {
  RoundPlan plan;
  plan.round = read_round(object, "round");
  plan.restart_count = read_int(object, "restart_count", 0, k_max_ranks);
  plan.world_size = read_int(object, "world_size", 1, k_max_ranks);
  plan.master_addr = read_text(object, "master_addr", 1024);
  plan.master_port = read_text(object, "master_port", 5);
  const json& members = object.at("members");
  if (!members.is_array() || members.empty()) invalid("members", "is not a list of nodes");
  int offset = 0;
  for (const json& member : members) {
    if (!member.is_object()) invalid("members", "is not a list of nodes");
    Member next = read_member(member);
    // Ranks are dense, node after node: anything else is not a round the
    // coordinator made.
    if (next.group_rank != static_cast<int>(plan.members.size()) || next.rank_offset != offset)
      invalid("members", "do not number their ranks one after another");
    offset += next.local_world_size;
    plan.members.push_back(std::move(next));
  }
  if (offset != plan.world_size) invalid("world_size", "is not the sum of the nodes' workers");
  plan.nodes = static_cast<int>(plan.members.size());
  return plan;
}

JobOutcome read_outcome(const json& object) {
  JobOutcome outcome{
      .exit_code = read_int(object, "exit_code", 0, k_max_exit_code),
      .message = read_text(object, "message"),
      .root_agent = read_agent_id(object, "root_agent", true),
      .stop_signal = read_optional_int(object, "stop_signal", 1, k_max_signal),
      .waited_for = read_int_list(object, "waited_for", 0, k_max_ranks, k_max_ranks)};
  // Success has no root cause and no signal.
  if (outcome.exit_code == 0 &&
      (!outcome.root_agent.empty() || outcome.stop_signal || !outcome.waited_for.empty()))
    invalid("exit_code", "is 0 for a job that did not succeed");
  return outcome;
}

}  // namespace

const Member* RoundPlan::member(const std::string& agent_id) const {
  for (const Member& candidate : members) {
    if (candidate.id == agent_id) return &candidate;
  }
  return nullptr;
}

std::string node_name(const Member& member) {
  return report::node_name(member.group_rank, member.host, member.address);
}

std::string to_json(const AgentInfo& info) {
  return json{{"id", info.id},
              {"host", info.host},
              {"address", info.address},
              {"node_rank", info.node_rank},
              {"local_world_size", info.local_world_size},
              {"run_id", info.run_id}}
      .dump();
}

std::string to_json(const Next& next) {
  if (const auto* plan = std::get_if<RoundPlan>(&next)) {
    json members = json::array();
    for (const Member& member : plan->members) members.push_back(member_json(member));
    return json{{"kind", "round"},
                {"round", plan->round},
                {"restart_count", plan->restart_count},
                {"members", members},
                {"world_size", plan->world_size},
                {"master_addr", plan->master_addr},
                {"master_port", plan->master_port}}
        .dump();
  }
  const auto& outcome = std::get<JobOutcome>(next);
  return json{{"kind", "done"},
              {"exit_code", outcome.exit_code},
              {"message", outcome.message},
              {"root_agent", outcome.root_agent},
              {"stop_signal", optional_int(outcome.stop_signal)},
              {"waited_for", outcome.waited_for}}
      .dump();
}

Assignment assignment_of(const RoundPlan& plan, const Member& member) {
  return Assignment{.round = plan.round,
                    .restart_count = plan.restart_count,
                    .nodes = static_cast<int>(plan.members.size()),
                    .world_size = plan.world_size,
                    .master_addr = plan.master_addr,
                    .master_port = plan.master_port,
                    .me = member};
}

RoundPlan plan_of(const Assignment& assignment) {
  return RoundPlan{.round = assignment.round,
                   .restart_count = assignment.restart_count,
                   .members = {assignment.me},
                   .nodes = assignment.nodes,
                   .world_size = assignment.world_size,
                   .master_addr = assignment.master_addr,
                   .master_port = assignment.master_port};
}

std::string to_json(const Assignment& assignment) {
  return json{{"kind", "assignment"},
              {"round", assignment.round},
              {"restart_count", assignment.restart_count},
              {"nodes", assignment.nodes},
              {"world_size", assignment.world_size},
              {"master_addr", assignment.master_addr},
              {"master_port", assignment.master_port},
              {"me", member_json(assignment.me)}}
      .dump();
}

std::string to_json(const Brief& brief) {
  if (const auto* formed = std::get_if<RoundFormed>(&brief)) {
    return json{{"kind", "formed"}, {"round", formed->round}}.dump();
  }
  return to_json(Next{std::get<JobOutcome>(brief)});
}

std::string to_json(const NodeReport& report) {
  json ended = json::array();
  for (const RankEnd& end : report.ended) ended.push_back({end.rank, end.failed, end.ms_ago});
  return json{{"agent", report.agent},
              {"host", report.host},
              {"succeeded", report.succeeded},
              {"rank", optional_int(report.rank)},
              {"exit_code", report.exit_code},
              {"what", report.what},
              {"stop_signal", optional_int(report.stop_signal)},
              {"stopped_for_round_end", report.stopped_for_round_end},
              {"stopped_for_hang", report.stopped_for_hang},
              {"ended", ended}}
      .dump();
}

std::string to_json(const RoundEnd& end) {
  return json{{"reason", reason_name(end.reason)}, {"message", end.message}}.dump();
}

Expected<AgentInfo> agent_info_from_json(const std::string& text) {
  return parse<AgentInfo>(text, "join", [](const json& object) {
    return AgentInfo{
        .id = read_agent_id(object, "id"),
        .host = read_text(object, "host", 1024),
        .address = read_text(object, "address", 1024),
        .node_rank = read_int(object, "node_rank", -1, k_max_ranks),
        .local_world_size = read_int(object, "local_world_size", 1, k_max_local_world_size),
        .run_id = read_text(object, "run_id", 1024)};
  });
}

Expected<Next> next_from_json(const std::string& text) {
  return parse<Next>(text, "round", [](const json& object) -> Next {
    std::string kind = read_text(object, "kind", 16);
    if (kind == "done") return read_outcome(object);
    if (kind != "round") invalid("kind", "is neither round nor done");
    return read_round_plan(object);
  });
}

Expected<Assignment> assignment_from_json(const std::string& text) {
  return parse<Assignment>(text, "assignment", [](const json& object) {
    if (read_text(object, "kind", 16) != "assignment") invalid("kind", "is not assignment");
    Assignment assignment{.round = read_round(object, "round"),
                          .restart_count = read_int(object, "restart_count", 0, k_max_ranks),
                          .nodes = read_int(object, "nodes", 1, k_max_ranks),
                          .world_size = read_int(object, "world_size", 1, k_max_ranks),
                          .master_addr = read_text(object, "master_addr", 1024),
                          .master_port = read_text(object, "master_port", 5),
                          .me = read_member(object.at("me"))};
    if (assignment.me.group_rank >= assignment.nodes)
      invalid("me", "has a group rank outside the round's nodes");
    if (assignment.me.rank_offset + assignment.me.local_world_size > assignment.world_size)
      invalid("me", "has ranks outside the round's world");
    return assignment;
  });
}

Expected<Brief> brief_from_json(const std::string& text) {
  return parse<Brief>(text, "round", [](const json& object) -> Brief {
    std::string kind = read_text(object, "kind", 16);
    if (kind == "done") return read_outcome(object);
    if (kind != "formed") invalid("kind", "is neither formed nor done");
    return RoundFormed{.round = read_round(object, "round")};
  });
}

Expected<NodeReport> node_report_from_json(const std::string& text) {
  return parse<NodeReport>(text, "node report", [](const json& object) {
    return NodeReport{.agent = read_agent_id(object, "agent"),
                      .host = read_text(object, "host", 1024),
                      .succeeded = read_bool(object, "succeeded"),
                      .rank = read_optional_int(object, "rank", 0, k_max_ranks),
                      .exit_code = read_int(object, "exit_code", 0, k_max_exit_code),
                      .what = read_text(object, "what"),
                      .stop_signal = read_optional_int(object, "stop_signal", 1, k_max_signal),
                      .stopped_for_round_end = read_bool(object, "stopped_for_round_end"),
                      .stopped_for_hang = read_bool(object, "stopped_for_hang"),
                      .ended = read_rank_ends(object)};
  });
}

Expected<RoundEnd> round_end_from_json(const std::string& text) {
  return parse<RoundEnd>(text, "round end", [](const json& object) {
    auto reason = reason_from_name(read_text(object, "reason", 32));
    if (!reason) invalid("reason", "is not a reason a round ends for");
    return RoundEnd{.reason = *reason, .message = read_text(object, "message")};
  });
}

}  // namespace gangrun::rendezvous
