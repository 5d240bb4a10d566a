// What the SLURM_* variables say about where gangrun runs: outside Slurm, in
// an allocation outside any step (a batch script, an salloc shell), or as a
// task of an srun step. Only the variables are read; nothing asks the
// controller, so this works wherever Slurm sets up a job's environment.
#pragma once

#include "slurm/variables.hpp"
#include "util/env.hpp"
#include "util/error.hpp"

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace gangrun::slurm {

enum class Place {
  allocation,  // SLURM_JOB_ID without SLURM_STEP_ID: a batch script or an salloc shell
  step,        // a task of an srun step
};

struct Job {
  Place place = Place::allocation;
  Read<std::string> job_id;                  // SLURM_JOB_ID (SLURM_JOBID)
  std::optional<Read<std::string>> step_id;  // SLURM_STEP_ID (SLURM_STEPID); steps only
  // The step's nodes in a step, the allocation's outside one. The step's
  // variables come first: inside a step the job's may describe more nodes
  // than the step runs on.
  Read<int> num_nodes;
  Read<std::string> node_list;  // compressed hostlist, node index order
  // Steps only.
  std::optional<Read<int>> node_id;        // SLURM_NODEID: this node's index in the step
  std::optional<Read<int>> procid;         // SLURM_PROCID: this task's rank in the step
  std::optional<Read<int>> local_id;       // SLURM_LOCALID: this task's index on its node
  std::optional<Read<int>> num_tasks;      // SLURM_STEP_NUM_TASKS
  std::optional<Read<int>> tasks_on_node;  // this node's entry of SLURM_STEP_TASKS_PER_NODE
  std::optional<Read<int>> gpus_on_node;   // SLURM_GPUS_ON_NODE, when Slurm gave GPUs
  std::optional<Read<int>> restart_count;  // SLURM_RESTART_COUNT, after a requeue
  // SLURMD_NODENAME: this node's name in Slurm, which reports and log lines
  // use (several slurmd may share a machine and its host name).
  std::optional<std::string> node_name;
  bool operator==(const Job&) const = default;
};

// The job gangrun runs in, or nullopt outside Slurm (no SLURM_JOB_ID).
// Errors (usage) name the variable and its text: a step without its node
// index, a count that is not a number, a task list that does not cover the
// node.
Expected<std::optional<Job>> read_job(const EnvMap& env);

// Slurm's run-length lists: "2(x3),1" -> {2, 2, 2, 1}.
Expected<std::vector<int>> expand_counts(std::string_view text);

// The port the store listens on under Slurm when none is given: the same on
// every node of a step, different for concurrent steps of one job and, most
// likely, for jobs sharing a head node, and below Linux's ephemeral range
// (32768-60999) so that no outgoing connection holds it:
//   20000 + (job_id * 16 + step_id) % 12000        (20000..31999)
// The batch script, which is no step, counts as step 0.
int store_port(const Job& job);

// A port in that range for a number drawn from a job's identity: 20000 + number % 12000.
// Other schedulers' jobs (schedulers/mpi_job.cpp) take their store port from it too.
int port_in_job_range(std::uint64_t number);

// Where the head node's name comes from, for messages and --dry-run -v:
// "the first host of SLURM_STEP_NODELIST=node[1-3]".
std::string head_node_origin(const Job& job);

// "JOB.STEP" (Slurm's %J), or the job id outside a step: TORCHELASTIC_RUN_ID.
std::string run_id(const Job& job);

}  // namespace gangrun::slurm
