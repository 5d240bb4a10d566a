// The hidden probe mode: gangrun re-executed to run one device probe.
//
// Vendor runtimes read their visibility and ordering variables once per
// process, at init, and a process can never see a second view. So gangrun
// never initialises a driver itself: probe_runner.hpp starts
// `<gangrun> --gangrun-internal-probe <name>` through the one spawner with
// the environment the probe should see, and this mode, checked in main()
// before anything else, runs the named in-process probe and writes its
// report as JSON (accel/report_json.hpp) to stdout.
#pragma once

#include "accel/device.hpp"
#include "util/env.hpp"

#include <string>
#include <string_view>

namespace gangrun::probe {

inline constexpr std::string_view k_probe_mode_flag = "--gangrun-internal-probe";

// The names of the built-in probes: accel::probe_cuda and
// accel::probe_level_zero.
inline constexpr std::string_view k_cuda_probe = "cuda";
inline constexpr std::string_view k_level_zero_probe = "level_zero";

// A probe that runs in this process and never throws for a missing driver.
using Probe = accel::BackendReport (*)(const EnvMap& env);

// Makes probe runnable in probe mode as `name`, beside the built-in ones.
// For test binaries, which re-execute themselves with probes of their own:
// call it before main() checks for the probe mode (a static initializer
// does), in every process that may run it. Not thread-safe.
void register_probe(std::string name, Probe probe);

// True when argv asks for the probe mode (argv[1] is k_probe_mode_flag).
bool is_probe_mode(int argc, char** argv);

// The probe mode: runs the probe named by argv[2] against this process's
// environment, writes its report to stdout and ends the process with _exit,
// status 0 once the report is written, 1 if writing it failed, 2 if the probe
// threw, or if argv names no probe (then with a line on stderr). Skipping exit-time
// handlers spares a vendor runtime's teardown, which only costs time here.
// While the probe runs, stdout is redirected to stderr, so that a driver
// printing to stdout cannot corrupt the report.
[[noreturn]] void run_probe_mode(int argc, char** argv);

}  // namespace gangrun::probe
