#include "report/error_file.hpp"

#include <cerrno>
#include <fstream>
#include <sstream>

namespace gangrun::report {
namespace {

std::optional<std::string> string_field(const nlohmann::json& object, const char* key) {
  if (!object.is_object()) return std::nullopt;
  auto it = object.find(key);
  if (it == object.end()) return std::nullopt;
  if (it->is_string()) return it->get<std::string>();
  if (it->is_number()) return it->dump();
  return std::nullopt;
}

}  // namespace

Expected<std::optional<WorkerError>> read_worker_error(const std::string& path) {
  std::ifstream file(path);
  if (!file) {
    if (errno == ENOENT) return std::optional<WorkerError>();
    return fail(ErrorCode::io, "cannot read error file " + path + ": " + errno_text(errno));
  }
  std::stringstream content;
  content << file.rdbuf();
  nlohmann::json document = nlohmann::json::parse(content.str(), nullptr, false);
  if (document.is_discarded() || !document.is_object() || !document.contains("message")) {
    return fail(ErrorCode::io, "error file " + path + " is not a torchelastic error document");
  }
  WorkerError error;
  error.raw = document;
  const nlohmann::json& message = document["message"];
  if (message.is_string()) {
    error.message = message.get<std::string>();
    error.timestamp = string_field(document, "timestamp");
  } else if (message.is_object()) {
    error.message = string_field(message, "message").value_or("");
    if (auto info = message.find("extraInfo"); info != message.end()) {
      error.traceback = string_field(*info, "py_callstack");
      error.timestamp = string_field(*info, "timestamp");
    }
  } else {
    return fail(ErrorCode::io, "error file " + path + " has a \"message\" of an unexpected type");
  }
  return std::optional<WorkerError>(std::move(error));
}

Expected<void> write_parent_error(const std::string& path, const WorkerError& error,
                                  int exit_code) {
  nlohmann::json document = error.raw;
  if (document["message"].is_object()) {
    document["message"]["errorCode"] = exit_code;
  } else {
    document["errorCode"] = exit_code;
  }
  std::ofstream file(path, std::ios::trunc);
  if (!file) return fail(ErrorCode::io, "cannot write " + path + ": " + errno_text(errno));
  file << document.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace) << '\n';
  if (!file) return fail(ErrorCode::io, "cannot write " + path + ": " + errno_text(errno));
  return {};
}

}  // namespace gangrun::report
