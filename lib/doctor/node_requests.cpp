#include "doctor/node_requests.hpp"

#include "doctor/stacks_json.hpp"
#include "util/printable_within.hpp"
#include "util/strings.hpp"

#include <nlohmann/json.hpp>

namespace gangrun::doctor {

namespace {

using json = nlohmann::json;

// A field that is not what an agent writes.
struct Invalid {
  std::string what;
};

[[noreturn]] void invalid(const std::string& what) { throw Invalid{what}; }

std::string text_of(const json& object, const char* name, std::size_t max_size = 4096) {
  const json& value = object.at(name);
  if (!value.is_string()) invalid(std::string(name) + " is not a string");
  auto text = strings::printable_within(value.get_ref<const std::string&>(), max_size);
  if (!text) invalid(std::string(name) + " " + std::string(text.error()));
  return *text;
}

long integer_of(const json& value, const char* name) {
  if (!value.is_number_integer()) invalid(std::string(name) + " is not an integer");
  return value.get<long>();
}

Frame frame_of(const json& object) {
  return Frame{.function = text_of(object, "function", 1024),
               .file = text_of(object, "file", 1024),
               .line = static_cast<int>(integer_of(object.at("line"), "line"))};
}

ThreadStack thread_of(const json& object) {
  ThreadStack thread{.name = text_of(object, "name", 1024),
                     .os_thread_id = integer_of(object.at("thread_id"), "thread_id"),
                     .active = object.at("active").is_boolean() && object.at("active").get<bool>(),
                     .frames = {}};
  for (const json& frame : object.at("frames")) thread.frames.push_back(frame_of(frame));
  return thread;
}

RankStacks rank_of(const json& object) {
  RankStacks rank{.rank = static_cast<int>(integer_of(object.at("rank"), "rank")),
                  .host = text_of(object, "host", 1024),
                  .pid = integer_of(object.at("pid"), "pid"),
                  .threads = {},
                  .unavailable = std::nullopt,
                  .stopped = std::nullopt};
  if (!object.at("unavailable").is_null()) rank.unavailable = text_of(object, "unavailable");
  // The state alone is read: the words are this side's (stopped_words).
  if (auto stopped = object.find("stopped"); stopped != object.end() && !stopped->is_null()) {
    std::string state = text_of(*stopped, "state", 1);
    if (state != "T" && state != "t") invalid("stopped.state is neither T nor t");
    rank.stopped = state.front();
  }
  for (const json& thread : object.at("threads")) rank.threads.push_back(thread_of(thread));
  return rank;
}

template <typename T, typename Read>
Expected<T> parse(const std::string& text, const char* what, Read read) {
  json object = json::parse(text, nullptr, /*allow_exceptions=*/false);
  if (!object.is_object()) return fail(ErrorCode::store, std::string("a ") + what + " is not JSON");
  try {
    return read(object);
  } catch (const Invalid& bad) {
    return fail(ErrorCode::store, std::string("a ") + what + ": " + bad.what);
  } catch (const json::exception&) {
    return fail(ErrorCode::store,
                std::string("a ") + what + " lacks a field or has one of the wrong type");
  }
}

}  // namespace

std::string to_json(const NodeRequest& request) {
  const char* why = request.why == NodeRequest::Why::hang     ? "hang"
                    : request.why == NodeRequest::Why::status ? "status"
                                                              : "asked";
  return json{{"why", why}, {"silent_for_s", request.silent_for_s}, {"ask", request.ask_id}}.dump();
}

Expected<NodeRequest> node_request_from_json(const std::string& text) {
  return parse<NodeRequest>(text, "stack request", [](const json& object) {
    std::string why = text_of(object, "why", 16);
    if (why != "hang" && why != "asked" && why != "status") {
      invalid("why is none of hang, asked and status");
    }
    const json& silent = object.at("silent_for_s");
    // Only for a message: no number here decides anything, but it reaches the terminal.
    constexpr double k_a_year_s = 365.0 * 24 * 3600;
    if (!silent.is_number() || !(silent.get<double>() >= 0) || silent.get<double>() > k_a_year_s) {
      invalid("silent_for_s is not a number of seconds between 0 and a year");
    }
    NodeRequest::Why kind = why == "hang"     ? NodeRequest::Why::hang
                            : why == "status" ? NodeRequest::Why::status
                                              : NodeRequest::Why::asked;
    return NodeRequest{
        .why = kind, .silent_for_s = silent.get<double>(), .ask_id = text_of(object, "ask", 64)};
  });
}

std::string to_json(const NodeAnswer& answer) {
  json object = stacks_json(answer.ranks, {}, std::nullopt);
  object["not_at_store"] = answer.not_at_store;
  return object.dump();
}

Expected<NodeAnswer> node_answer_from_json(const std::string& text) {
  return parse<NodeAnswer>(text, "node's stacks", [](const json& object) {
    NodeAnswer answer;
    for (const json& rank : object.at("ranks")) answer.ranks.push_back(rank_of(rank));
    for (const json& rank : object.at("not_at_store")) {
      answer.not_at_store.push_back(static_cast<int>(integer_of(rank, "not_at_store")));
    }
    return answer;
  });
}

}  // namespace gangrun::doctor
