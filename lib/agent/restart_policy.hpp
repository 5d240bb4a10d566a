// What the node agent does once a round has ended, and the code the run
// ends with: decisions only, from the plan and what the round left, so that
// each is tested without a gang, a store or a signal. The agent
// (agent/node_agent.cpp) carries them out and logs what they say.
#pragma once

#include "agent/node_agent.hpp"
#include "launch/plan.hpp"
#include "rendezvous/messages.hpp"
#include "report/run_record.hpp"
#include "supervise/gang.hpp"
#include "util/exit_codes.hpp"

#include <string>
#include <vector>

namespace gangrun::agent {

// The code of a job that lost its store, its node or its nodes.
inline constexpr int k_lost_rendezvous = exit_codes::k_store;

// What follows a round on a single node (on many nodes the coordinator
// decides, and the agent only reports the round).
struct AfterRound {
  enum class Kind {
    restart,   // begin round restart_count + 1; warning says why
    finish,    // the run ends with the last attempt's code (finished_result)
    hung_out,  // the gang hung and is not restarted: the run ends with k_hang
  };
  Kind kind = Kind::finish;
  std::string warning;  // logged before a restart; empty otherwise
};

// restart_count: the round's own (0 for the first). A hang restarts only
// with --on-hang restart; a signal to gangrun never restarts; a failure
// restarts while plan.max_restarts allows. still_starting: the doctor
// stopped the gang for --start-timeout, not for silence (the warning says
// which).
AfterRound after_single_node_round(const launch::LaunchPlan& plan, int restart_count,
                                   const supervise::AttemptOutcome& outcome,
                                   bool still_starting = false);

// The run's result once its last attempt is the final one: the signal that
// stopped gangrun (to re-raise), else the first failure's shell code, else
// so_far unchanged.
RunResult finished_result(RunResult so_far, const report::AttemptRecord& last);

// The store is gone: this node's own root cause, when it had one
// (failed_here), is the job's code here (the head cannot say otherwise any
// more), else k_lost_rendezvous.
int lost_store_code(const report::RunRecord& record, bool failed_here);

// This node's workers failed in its last round, or were stopped by a
// signal to this agent (not because another node ended the round).
bool last_round_failed_here(const report::AttemptRecord& last, bool stopped_for_round_end);

// What the coordinator's word that the job is done means for this node.
struct JobEndHere {
  RunResult result;
  // What this node logs as errors, in order: that the job was reported a
  // success although this node's workers did not all succeed (it exits with
  // k_lost_rendezvous instead), and the job's message when it names a
  // failure elsewhere or nodes missing (its own are in its own summary).
  std::vector<std::string> errors;
};

// agent_id: this agent's; stop_signal: the teardown signal this agent
// received, if any; last: its last attempt (nullptr: it ran none). Only a
// signal this agent was stopped by itself is raised again: a number from
// the network is never a signal to raise.
JobEndHere job_end_here(RunResult so_far, const rendezvous::JobOutcome& outcome,
                        const std::string& agent_id, std::optional<int> stop_signal,
                        const report::AttemptRecord* last, bool stopped_for_round_end);

}  // namespace gangrun::agent
