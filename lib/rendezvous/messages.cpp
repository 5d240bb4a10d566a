#include "rendezvous/messages.hpp"

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

std::optional<int> read_optional_int(const json& object, const char* name) {
  auto found = object.find(name);
  if (found == object.end() || found->is_null()) return std::nullopt;
  return found->get<int>();
}

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

}  // namespace

const Member* RoundPlan::member(const std::string& agent_id) const {
  for (const Member& candidate : members) {
    if (candidate.id == agent_id) return &candidate;
  }
  return nullptr;
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
    for (const Member& member : plan->members) {
      members.push_back({{"id", member.id},
                         {"host", member.host},
                         {"group_rank", member.group_rank},
                         {"rank_offset", member.rank_offset},
                         {"local_world_size", member.local_world_size}});
    }
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
              {"stop_signal", optional_int(outcome.stop_signal)}}
      .dump();
}

std::string to_json(const NodeReport& report) {
  return json{{"agent", report.agent},
              {"host", report.host},
              {"succeeded", report.succeeded},
              {"rank", optional_int(report.rank)},
              {"exit_code", report.exit_code},
              {"what", report.what},
              {"stop_signal", optional_int(report.stop_signal)},
              {"stopped_for_round_end", report.stopped_for_round_end}}
      .dump();
}

std::string to_json(const RoundEnd& end) {
  return json{{"reason", reason_name(end.reason)}, {"message", end.message}}.dump();
}

Expected<AgentInfo> agent_info_from_json(const std::string& text) {
  return parse<AgentInfo>(text, "join", [](const json& object) {
    return AgentInfo{.id = object.at("id").get<std::string>(),
                     .host = object.at("host").get<std::string>(),
                     .address = object.at("address").get<std::string>(),
                     .node_rank = object.at("node_rank").get<int>(),
                     .local_world_size = object.at("local_world_size").get<int>(),
                     .run_id = object.at("run_id").get<std::string>()};
  });
}

Expected<Next> next_from_json(const std::string& text) {
  return parse<Next>(text, "round", [](const json& object) -> Next {
    if (object.at("kind").get<std::string>() == "done") {
      return JobOutcome{.exit_code = object.at("exit_code").get<int>(),
                        .message = object.at("message").get<std::string>(),
                        .root_agent = object.at("root_agent").get<std::string>(),
                        .stop_signal = read_optional_int(object, "stop_signal")};
    }
    RoundPlan plan;
    plan.round = object.at("round").get<std::uint64_t>();
    plan.restart_count = object.at("restart_count").get<int>();
    plan.world_size = object.at("world_size").get<int>();
    plan.master_addr = object.at("master_addr").get<std::string>();
    plan.master_port = object.at("master_port").get<std::string>();
    for (const json& member : object.at("members")) {
      plan.members.push_back(Member{.id = member.at("id").get<std::string>(),
                                    .host = member.at("host").get<std::string>(),
                                    .group_rank = member.at("group_rank").get<int>(),
                                    .rank_offset = member.at("rank_offset").get<int>(),
                                    .local_world_size = member.at("local_world_size").get<int>()});
    }
    return plan;
  });
}

Expected<NodeReport> node_report_from_json(const std::string& text) {
  return parse<NodeReport>(text, "node report", [](const json& object) {
    return NodeReport{.agent = object.at("agent").get<std::string>(),
                      .host = object.at("host").get<std::string>(),
                      .succeeded = object.at("succeeded").get<bool>(),
                      .rank = read_optional_int(object, "rank"),
                      .exit_code = object.at("exit_code").get<int>(),
                      .what = object.at("what").get<std::string>(),
                      .stop_signal = read_optional_int(object, "stop_signal"),
                      .stopped_for_round_end = object.at("stopped_for_round_end").get<bool>()};
  });
}

Expected<RoundEnd> round_end_from_json(const std::string& text) {
  return parse<RoundEnd>(text, "round end", [](const json& object) {
    auto reason = reason_from_name(object.at("reason").get<std::string>());
    if (!reason) throw std::runtime_error("unknown reason");
    return RoundEnd{.reason = *reason, .message = object.at("message").get<std::string>()};
  });
}

}  // namespace gangrun::rendezvous
