#include "doctor/stacks.hpp"

#include <nlohmann/json.hpp>

#include <algorithm>
#include <type_traits>

namespace gangrun::doctor {

namespace {

// The field's value when it has the expected type; py-spy writes null for
// what it does not know (a thread's name, a native frame's line).
template <typename T>
T field_or(const nlohmann::json& object, const char* key, T fallback) {
  auto it = object.find(key);
  if (it == object.end()) return fallback;
  if constexpr (std::is_same_v<T, bool>) {
    return it->is_boolean() ? it->get<bool>() : fallback;
  } else if constexpr (std::is_arithmetic_v<T>) {
    return it->is_number_integer() ? it->get<T>() : fallback;
  } else {
    return it->is_string() ? it->get<T>() : fallback;
  }
}

// The tool's file name for a frame: the short form (package-relative), else
// the full path, else "" for a native frame.
std::string frame_file(const nlohmann::json& frame) {
  for (const char* key : {"short_filename", "filename"}) {
    auto it = frame.find(key);
    if (it != frame.end() && it->is_string()) return it->get<std::string>();
  }
  return "";
}

Expected<ThreadStack> thread_from_json(const nlohmann::json& thread) {
  if (!thread.is_object() || !thread.contains("frames") || !thread["frames"].is_array()) {
    return fail(ErrorCode::io, "the stack tool's thread record has no frames");
  }
  ThreadStack stack;
  stack.name = field_or(thread, "thread_name", std::string());
  stack.os_thread_id = field_or(thread, "os_thread_id", 0L);
  stack.active = field_or(thread, "active", false);
  for (const nlohmann::json& frame : thread["frames"]) {
    if (!frame.is_object()) return fail(ErrorCode::io, "the stack tool's frame is not an object");
    stack.frames.push_back(Frame{field_or(frame, "name", std::string("?")), frame_file(frame),
                                 field_or(frame, "line", 0)});
  }
  return stack;
}

}  // namespace

Expected<std::vector<ThreadStack>> parse_py_spy_json(std::string_view json) {
  nlohmann::json parsed = nlohmann::json::parse(json, nullptr, /*allow_exceptions=*/false);
  if (parsed.is_discarded() || !parsed.is_array()) {
    return fail(ErrorCode::io, "the stack tool did not print a JSON list of threads");
  }
  std::vector<ThreadStack> threads;
  for (const nlohmann::json& thread : parsed) {
    GANGRUN_TRY_ASSIGN(stack, thread_from_json(thread));
    threads.push_back(std::move(*stack));
  }
  return threads;
}

const ThreadStack* main_thread(const std::vector<ThreadStack>& threads, long pid) {
  auto by_id = std::find_if(threads.begin(), threads.end(),
                            [pid](const ThreadStack& t) { return t.os_thread_id == pid; });
  if (by_id != threads.end()) return &*by_id;
  auto by_name = std::find_if(threads.begin(), threads.end(),
                              [](const ThreadStack& t) { return t.name == "MainThread"; });
  if (by_name != threads.end()) return &*by_name;
  return threads.empty() ? nullptr : &threads.front();
}

}  // namespace gangrun::doctor
