#include "observe/node_status.hpp"

#include <nlohmann/json.hpp>

namespace gangrun::observe {

const char* to_string(RankState state) {
  switch (state) {
    case RankState::running:
      return "running";
    case RankState::stopped:
      return "stopped";
    case RankState::zombie:
      return "zombie";
    case RankState::starting:
      return "starting";
  }
  return "starting";
}

std::optional<RankState> rank_state_from(const std::string& text) {
  for (RankState state : k_rank_states) {
    if (text == to_string(state)) return state;
  }
  return std::nullopt;
}

namespace {

template <typename T>
void put_optional(nlohmann::json& into, const char* key, const std::optional<T>& value) {
  into[key] = value ? nlohmann::json(*value) : nlohmann::json(nullptr);
}

template <typename T>
std::optional<T> get_optional(const nlohmann::json& from, const char* key) {
  auto found = from.find(key);
  if (found == from.end() || found->is_null()) return std::nullopt;
  return found->get<T>();
}

nlohmann::json rank_json(const RankStatus& rank) {
  nlohmann::json json = {{"rank", rank.rank},
                         {"local_rank", rank.local_rank},
                         {"pid", rank.pid},
                         {"state", to_string(rank.state)},
                         {"cpu_seconds", rank.cpu_seconds},
                         {"rss_kib", rank.rss_kib},
                         {"seconds_since_progress", rank.seconds_since_progress},
                         {"hung", rank.hung},
                         {"slow", rank.slow}};
  put_optional(json, "seconds_since_output", rank.seconds_since_output);
  put_optional(json, "steps_per_second", rank.steps_per_second);
  put_optional(json, "gpu_utilization", rank.gpu_utilization);
  put_optional(json, "gpu_memory_bytes", rank.gpu_memory_bytes);
  return json;
}

std::optional<RankStatus> rank_from(const nlohmann::json& json) {
  auto state = rank_state_from(json.at("state").get<std::string>());
  if (!state) return std::nullopt;
  RankStatus rank;
  rank.rank = json.at("rank").get<int>();
  rank.local_rank = json.at("local_rank").get<int>();
  rank.pid = json.at("pid").get<long>();
  rank.state = *state;
  rank.cpu_seconds = json.at("cpu_seconds").get<double>();
  rank.rss_kib = json.at("rss_kib").get<long>();
  rank.seconds_since_progress = json.at("seconds_since_progress").get<double>();
  rank.hung = json.at("hung").get<bool>();
  rank.slow = json.at("slow").get<bool>();
  rank.seconds_since_output = get_optional<double>(json, "seconds_since_output");
  rank.steps_per_second = get_optional<double>(json, "steps_per_second");
  rank.gpu_utilization = get_optional<double>(json, "gpu_utilization");
  rank.gpu_memory_bytes = get_optional<std::uint64_t>(json, "gpu_memory_bytes");
  return rank;
}

nlohmann::json store_json(const StoreStatus& store) {
  nlohmann::json json = {{"connections", store.connections},
                         {"connections_accepted", store.connections_accepted},
                         {"connections_refused", store.connections_refused},
                         {"connections_closed_for_errors", store.connections_closed_for_errors},
                         {"requests", store.requests},
                         {"bytes_received", store.bytes_received},
                         {"bytes_sent", store.bytes_sent},
                         {"stored_bytes", store.stored_bytes},
                         {"keys", store.keys}};
  put_optional(json, "seconds_since_request", store.seconds_since_request);
  return json;
}

StoreStatus store_from(const nlohmann::json& json) {
  StoreStatus store;
  store.connections = json.at("connections").get<std::uint64_t>();
  store.connections_accepted = json.at("connections_accepted").get<std::uint64_t>();
  store.connections_refused = json.at("connections_refused").get<std::uint64_t>();
  store.connections_closed_for_errors =
      json.at("connections_closed_for_errors").get<std::uint64_t>();
  store.requests = json.at("requests").get<std::uint64_t>();
  store.bytes_received = json.at("bytes_received").get<std::uint64_t>();
  store.bytes_sent = json.at("bytes_sent").get<std::uint64_t>();
  store.stored_bytes = json.at("stored_bytes").get<std::uint64_t>();
  store.keys = json.at("keys").get<std::uint64_t>();
  store.seconds_since_request = get_optional<double>(json, "seconds_since_request");
  return store;
}

}  // namespace

nlohmann::json to_json(const NodeStatus& status) {
  nlohmann::json ranks = nlohmann::json::array();
  for (const RankStatus& rank : status.ranks) ranks.push_back(rank_json(rank));
  nlohmann::json json = {{"run_id", status.run_id},
                         {"node", status.node},
                         {"node_rank", status.node_rank},
                         {"agent_state", status.agent_state},
                         {"collected_at", status.collected_at},
                         {"rounds", status.rounds},
                         {"restarts", status.restarts},
                         {"nodes_in_round", status.nodes_in_round},
                         {"local_world_size", status.local_world_size},
                         {"hangs", status.hangs},
                         {"stragglers_named", status.stragglers_named},
                         {"ranks", std::move(ranks)}};
  json["store"] = status.store ? store_json(*status.store) : nlohmann::json(nullptr);
  return json;
}

std::optional<NodeStatus> node_status_from_json(const nlohmann::json& json) {
  try {
    NodeStatus status;
    status.run_id = json.at("run_id").get<std::string>();
    status.node = json.at("node").get<std::string>();
    status.node_rank = json.at("node_rank").get<int>();
    status.agent_state = json.at("agent_state").get<std::string>();
    status.collected_at = json.at("collected_at").get<double>();
    status.rounds = json.at("rounds").get<std::uint64_t>();
    status.restarts = json.at("restarts").get<int>();
    status.nodes_in_round = json.at("nodes_in_round").get<int>();
    status.local_world_size = json.at("local_world_size").get<int>();
    status.hangs = json.at("hangs").get<std::uint64_t>();
    status.stragglers_named = json.at("stragglers_named").get<std::uint64_t>();
    for (const nlohmann::json& rank : json.at("ranks")) {
      auto read = rank_from(rank);
      if (!read) return std::nullopt;
      status.ranks.push_back(std::move(*read));
    }
    if (auto store = json.find("store"); store != json.end() && !store->is_null()) {
      status.store = store_from(*store);
    }
    return status;
  } catch (const nlohmann::json::exception&) {
    return std::nullopt;
  }
}

}  // namespace gangrun::observe
