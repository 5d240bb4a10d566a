// The batch form under Slurm: in an allocation, outside any srun step,
// gangrun starts itself on every node through srun, one task per node, as
// mpirun does under Slurm. Each copy then finds itself in a step and runs
// the node agent with the step's values (config/job_values.hpp). The
// gangrun that called srun only passes signals on and ends with srun's code.
#pragma once

#include "config/options.hpp"
#include "util/env.hpp"
#include "util/error.hpp"

#include <string>
#include <vector>

namespace gangrun::remote {

// Whether options ask for the batch form: in a Slurm allocation outside a
// step, with --launcher slurm, or with --launcher auto when the allocation
// has several nodes and the user placed no node (no --node_rank,
// --master_addr, --rdzv_endpoint or --standalone of their own). A usage
// error when --launcher slurm meets such an option, or runs inside a step.
Expected<bool> starts_through_srun(const config::Options& options);

// The srun command line, argv[0] = srun's path: one task on each node
// (--nodes from --nnodes when the user gave it, else every node of the
// allocation), the whole environment exported, every CPU and GPU of the
// allocation's nodes given to the step, then --launcher_args, then gangrun
// (`self`, the same path on every node) with `arguments` unchanged.
// srun's own kill-on-bad-exit stays off: the agents stop each other, and
// srun killing the others first would turn the job's exit code into 143.
std::vector<std::string> srun_command(const config::Options& options, const std::string& srun,
                                      const std::string& self,
                                      const std::vector<std::string>& arguments);

// "would start gangrun on every node of the allocation: srun ..." for
// --dry-run; the step's own dry run is `srun ... gangrun --dry-run ...`.
std::string srun_dry_run_text(const std::vector<std::string>& command);

// srun_dry_run_text() of srun_command() with the bare names srun and
// gangrun, as the line would be typed inside the allocation. Never fails;
// Expected for RemoteStart (remote_start.hpp).
Expected<std::string> srun_dry_run_for(const config::Options& options,
                                       const std::vector<std::string>& arguments,
                                       const EnvMap& env);

// Runs srun (found on PATH) with srun_command(), passing TERM, INT, HUP and
// QUIT on as TERM (srun forwards it to every task; its own answer to one
// INT is only a status line), USR1 and USR2 as they are (preemption
// notices for the training scripts). Returns srun's exit code, or 128+S if
// srun was killed by S. Errors: srun or gangrun's own path not found,
// srun not started. Call from the main thread.
Expected<int> run_through_srun(const config::Options& options,
                               const std::vector<std::string>& arguments, const EnvMap& env);

}  // namespace gangrun::remote
