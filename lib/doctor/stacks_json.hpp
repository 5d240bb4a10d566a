// A capture of every rank's stack as the run report writes it (--report):
//
//   {"summary": ["rank 2 (node0, pid 4711): load_batch <- train", ...],
//    "file": "<run dir>/attempt_0/hang-stacks.txt" or null,
//    "ranks": [{"rank": 2, "host": "node0", "pid": 4711, "unavailable": null,
//               "stopped": null or {"state": "T", "text": "stopped (SIGSTOP or ...; state T)"},
//               "threads": [{"name": "MainThread", "thread_id": 4711, "active": false,
//                            "frames": [{"function": "load_batch", "file": "train.py",
//                                        "line": 12}, ...]}]}]}
//
// Frames are innermost first, as the stack tool gives them.
#pragma once

#include "doctor/stack_groups.hpp"

#include <nlohmann/json.hpp>

#include <optional>
#include <string>
#include <vector>

namespace gangrun::doctor {

nlohmann::json stacks_json(const std::vector<RankStacks>& ranks,
                           const std::vector<std::string>& summary,
                           const std::optional<std::string>& file);

}  // namespace gangrun::doctor
