// The launches of one round: the run-fixed plan and the round's assignment
// made into what the gang starts (argv, environment, output routes).
#pragma once

#include "launch/plan.hpp"
#include "supervise/gang.hpp"

#include <string>
#include <vector>

namespace gangrun::agent {

// One WorkerLaunch per local worker, in local-rank order, with its files in
// run_dir (launch/run_directory.hpp).
std::vector<supervise::WorkerLaunch> make_launches(const launch::LaunchPlan& plan,
                                                   const launch::RoundAssignment& round,
                                                   const std::string& run_dir);

}  // namespace gangrun::agent
