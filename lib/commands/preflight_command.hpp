// gangrun preflight: a short job with the launch's options whose workers are
// preflight's own (lib/preflight), on this node or, through the same
// rendezvous, on every node; then the verdict of each check. --preflight
// runs it before a launch of one node.
#pragma once

#include "config/cli.hpp"
#include "util/env.hpp"
#include "util/error.hpp"

namespace gangrun::commands {

Expected<int> run_preflight_command(const config::PreflightRequest& request, const EnvMap& env);

// The checks of a launch's options on this node, before its job starts (on
// a job of many nodes, of this node alone, before it joins):
// exit_codes::k_success when none failed, else the code to end with (the
// table said why).
Expected<int> preflight_before_launch(const config::Options& options, const EnvMap& env);

}  // namespace gangrun::commands
