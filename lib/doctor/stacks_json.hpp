// A capture of every rank's stack as the run report writes it (--report):
//
//   {"summary": ["rank 2 (node0, pid 4711): load_batch <- train", ...],
//    "file": "<run dir>/attempt_0/hang-stacks.txt" or null,
//    "groups": [[2], [0, 1, 3]] (the summary's groups' ranks, in its order; the
//              doctor's readings only, group_ranks),
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

// Each group's ranks, in the groups' order: the odd ones out first.
nlohmann::json group_ranks(const std::vector<StackGroup>& groups);

}  // namespace gangrun::doctor
