// gangrun top: a live view of a job running on this host, from any of its
// nodes. Every second it asks every node's agent for its snapshot
// (top_of_nodes.hpp; a job of one node: top_of_one_node.hpp) and draws a frame (top_frame.hpp)
// fitted to the terminal; q quits, so do SIGINT, SIGTERM and SIGHUP, with the terminal restored;
// the job's end ends it, saying how the job ended.
// --once prints one frame (no escape codes), --json one snapshot.
#pragma once

#include "config/cli.hpp"
#include "util/env.hpp"
#include "util/error.hpp"

namespace gangrun::commands {

Expected<int> run_top_command(const config::TopRequest& request, const EnvMap& env);

}  // namespace gangrun::commands
