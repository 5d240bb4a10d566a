// The run's record from its start to its report, as this node keeps it:
// what it says of the run before any round, how a multi-node job's outcome
// enters it, whether this node prints the failure summary, and the report
// file. The agent (agent/node_agent.cpp) adds each attempt
// (agent/attempt_record.hpp).
#pragma once

#include "agent/node_agent.hpp"
#include "doctor/job_registry.hpp"
#include "launch/plan.hpp"
#include "rendezvous/messages.hpp"
#include "report/run_record.hpp"

#include <nlohmann/json.hpp>

#include <optional>
#include <string>

namespace gangrun::agent {

// The record of a run that starts now: the plan, the program, and log_dir
// (nullopt: the run directory is temporary, left out of the report).
report::RunRecord new_run_record(const launch::LaunchPlan& plan,
                                 const std::optional<std::string>& log_dir);

// What `gangrun stacks` reads of this job from another terminal
// (doctor/job_registry.hpp): this process, its logs, and on many nodes the
// store where the doctor's requests go.
doctor::RegisteredJob registered_job(const launch::LaunchPlan& plan,
                                     const std::optional<std::string>& log_dir);

// Registers the job; one that cannot be registered still runs (a warning).
// metrics: the address /metrics is served at, when it is.
std::optional<doctor::Registration> register_job(const launch::LaunchPlan& plan,
                                                 const std::optional<std::string>& log_dir,
                                                 const std::optional<std::string>& metrics);

// RunRecord::job: the job's outcome, as agent_id's node reports it.
nlohmann::json job_record(const rendezvous::JobOutcome& outcome, const std::string& agent_id);

// On many nodes the coordinator, which heard every node, decides whom a
// failure is blamed on; a node's own judgement of its part is dropped.
// When the blamed ranks ran here, the summary this node prints names the
// first of them.
void blame_as_told(const rendezvous::JobOutcome& outcome, report::AttemptRecord& attempt);

// Whether this node prints the failure summary of its last attempt: it had
// a root cause, and on many nodes (job: the outcome) it is the node of the
// job's root cause, and its workers were not stopped because another node
// ended the round, unless the coordinator blamed ranks here.
bool prints_failure_summary(const report::AttemptRecord& last,
                            const std::optional<rendezvous::JobOutcome>& job,
                            const std::string& agent_id, bool stopped_for_round_end);

// Once the record is complete but for the job's outcome (job, added here):
// prints the failure summary when prints_failure_summary says so, and
// writes the report when the plan asks for one. A report asked for and not
// written is no success: returns result with k_system_failure then, unless
// the job failed already (a job's own failure keeps its code).
RunResult report_run(const launch::LaunchPlan& plan, report::RunRecord& record, RunResult result,
                     const std::optional<rendezvous::JobOutcome>& job, const std::string& agent_id,
                     bool stopped_for_round_end);

}  // namespace gangrun::agent
