// --dry-run: the plan, per rank, as text or JSON. Starts nothing, opens no port.
#pragma once

#include "launch/plan.hpp"

#include <nlohmann/json.hpp>

#include <string>

namespace gangrun::launch {

// Stands for MASTER_PORT when gangrun picks a free port at launch.
inline constexpr const char* k_free_port_placeholder = "<free port chosen at launch>";

// Where worker files go when no --log_dir was given (made at launch).
std::string planned_run_dir(const LaunchPlan& plan);

// {"run_id", "host", "nnodes", "node_rank", "local_world_size", "world_size",
//  "master_addr", "master_port": int|null, "executable", "entrypoint",
//  "output": "prefix"|"inherit", "log_dir": str|null, "max_restarts",
//  "workers": [{"rank", "local_rank", "argv": [...], "env": {NAME: value},
//               "prefix"}],
//  "options": {name: {"value", "source"}},
//  "network": str|null (many nodes: launch/network_interface.hpp)}
// "env" holds exactly the variables gangrun sets (attempt 0). Print it with
// report::json_text: argv and env need not be UTF-8, and json_text writes
// each invalid byte as U+FFFD instead of throwing.
nlohmann::json plan_to_json(const LaunchPlan& plan);

// The same for people; verbose adds where every option value came from.
std::string plan_to_text(const LaunchPlan& plan, bool verbose);

}  // namespace gangrun::launch
