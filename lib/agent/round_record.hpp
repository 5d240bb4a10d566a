// Completes the record of an attempt whose gang is done, before the agent
// decides what follows: the gang doctor's findings (a stack reading still
// under way, bounded, lands in this attempt's record), then, when
// packages_to_probe (agent/attempt_record.hpp) says so, the interpreter
// probe's answer. Both may take a while; the agent's loop goes on serving
// the store and the coordinator meanwhile.
#pragma once

#include "agent/interpreter_probe.hpp"
#include "launch/plan.hpp"
#include "report/run_record.hpp"

#include <functional>

namespace gangrun::agent {

// How the findings are read: GangDoctor::round_ended.
using FindingsReader = std::function<void(std::function<void(report::DoctorFindings found)> then)>;

// Completes record's last attempt, then calls done, from a handler. plan,
// record and probe outlive the call; attempts added to record meanwhile are
// left alone.
void complete_last_attempt(const launch::LaunchPlan& plan, report::RunRecord& record,
                           InterpreterProbe& probe, const FindingsReader& read_findings,
                           std::function<void()> done);

}  // namespace gangrun::agent
