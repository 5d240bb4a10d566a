// Runs a device probe in a short-lived forked child. Vendor runtimes read
// their visibility and ordering variables once per process, at init, and a
// process can never see a second view; probing in a child keeps gangrun
// itself free of any driver and lets it ask for several views (as the user
// set them, and unfiltered).
#pragma once

#include "accel/device.hpp"
#include "util/env.hpp"

#include <chrono>
#include <string_view>

namespace gangrun::accel {

// A probe that runs in this process and never throws for a missing driver.
using Probe = BackendReport (*)(const EnvMap& env);

// Forks; the child's whole environment becomes env_for_child, it runs
// probe(env_for_child) and sends the report back as JSON through a pipe, and
// ends with _exit. A child that does not answer within timeout is killed
// (SIGKILL) and reported as unavailable; so is one that dies or sends an
// unreadable report. `what` names the backend in those messages ("CUDA").
//
// Call it before gangrun starts any thread: the child, forked without exec,
// calls dlopen and malloc, which is only safe when no other thread held
// their locks at fork time. It reaps the child itself (waitpid on its pid),
// so no SIGCHLD handler may reap with waitpid(-1) meanwhile. Blocks for up
// to timeout.
BackendReport probe_in_child(Probe probe, DeviceKind kind, std::string_view what,
                             const EnvMap& env_for_child, std::chrono::milliseconds timeout);

}  // namespace gangrun::accel
