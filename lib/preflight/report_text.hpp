// gangrun preflight's output: the table for people and the JSON for tools,
// both from the checks (checks.hpp) and the facts they were made from.
#pragma once

#include "preflight/checks.hpp"

#include <nlohmann/json.hpp>

#include <string>
#include <vector>

namespace gangrun::preflight {

// One line per node (host, Python, torch, devices), then one row per check:
// CHECK  WHERE  RESULT  DETAIL, with each fix on the line after its row.
std::string checks_table(const nlohmann::json& facts, const std::vector<Check>& checks);

// {"passed": ..., "checks": [...], "facts": ...}.
nlohmann::json checks_json(const nlohmann::json& facts, const std::vector<Check>& checks);

}  // namespace gangrun::preflight
