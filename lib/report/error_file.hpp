// The error file a worker writes through torch.distributed.elastic's
// @record decorator (TORCHELASTIC_ERROR_FILE).
#pragma once

#include "util/error.hpp"

#include <nlohmann/json.hpp>

#include <optional>
#include <string>

namespace gangrun::report {

// The implicit move constructor is noexcept because nlohmann::json's is; clang-tidy 14
// cannot see that json's throws nothing.
// NOLINTNEXTLINE(bugprone-exception-escape)
struct WorkerError {
  std::string message;                   // "ValueError: bad batch"
  std::optional<std::string> traceback;  // extraInfo.py_callstack
  std::optional<std::string> timestamp;  // unix seconds, as written
  nlohmann::json raw;                    // the whole document, for copying on
};

// Reads and decodes the file. Accepts both layouts torch writes and reads:
// {"message": {"message": str, "extraInfo": {"py_callstack": str, "timestamp": str}}}
// and {"message": str, "timestamp": int}. A missing file is nullopt (the
// worker wrote none); an unreadable or malformed one is an io error.
Expected<std::optional<WorkerError>> read_worker_error(const std::string& path);

// Writes the root cause's error document where gangrun's own
// TORCHELASTIC_ERROR_FILE points, with message.errorCode set to exit_code,
// as torchrun does for the agent that launched it.
Expected<void> write_parent_error(const std::string& path, const WorkerError& error, int exit_code);

}  // namespace gangrun::report
