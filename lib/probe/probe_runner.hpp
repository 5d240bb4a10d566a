// Device probes in a short-lived child: gangrun re-executed in its hidden
// probe mode (probe_mode.hpp) through the one spawner
// (supervise::run_to_completion), with exactly the environment the vendor
// runtime should see. So gangrun itself never initialises a driver, can ask
// for several views (as the user set them, and unfiltered), and may probe
// with other threads running.
//
// Nothing here fails: a child that cannot start, does not answer within its
// timeout (it is then killed, with its whole tree), dies of a signal, exits
// non-zero or sends an unreadable report gives a report with no devices and
// `unavailable` saying why. Each call blocks for up to its timeout; any
// thread may call.
#pragma once

#include "accel/cuda_backend.hpp"
#include "accel/device.hpp"
#include "accel/level_zero_backend.hpp"
#include "util/env.hpp"

#include <chrono>
#include <string_view>

namespace gangrun::probe {

// Runs the probe registered as probe_name (probe_mode.hpp) in a child whose
// whole environment is env_for_child. kind is the report's kind when the
// child gives none; `what` names the backend in the reasons ("CUDA").
accel::BackendReport probe_in_child(std::string_view probe_name, accel::DeviceKind kind,
                                    std::string_view what, const EnvMap& env_for_child,
                                    std::chrono::milliseconds timeout);

// accel::probe_cuda(env_for_child) in a child.
accel::BackendReport probe_cuda_in_child(
    const EnvMap& env_for_child, std::chrono::milliseconds timeout = accel::k_cuda_probe_timeout);

// accel::probe_level_zero(env_for_child) in a child.
accel::BackendReport probe_level_zero_in_child(
    const EnvMap& env_for_child,
    std::chrono::milliseconds timeout = accel::k_level_zero_probe_timeout);

}  // namespace gangrun::probe
