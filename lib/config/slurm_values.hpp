// The Slurm layer of the option values (below the config file, above the
// defaults): inside an srun step the node count, node rank, head node, store
// port, run id and GPUs per node come from the SLURM_* variables, so that a
// job script needs no boilerplate. Also --launcher and --launcher_args.
#pragma once

#include "config/layering.hpp"
#include "config/options.hpp"
#include "slurm/job_environment.hpp"
#include "util/error.hpp"

#include <map>
#include <string>
#include <vector>

namespace gangrun::config {

// auto|local|slurm (any case). deepspeed's other launchers (pdsh, openmpi,
// mvapich, impi, mpich) are refused with what to use instead.
Expected<Options::Launcher> parse_launcher(std::string_view text);

// --launcher_args: words split at white space, single and double quotes
// grouping ("--comment 'a b'" is two words).
Expected<std::vector<std::string>> parse_launcher_args(std::string_view text);

// The values Slurm gives, by option name, each saying which variables it
// came from. In a step: nnodes, node_rank, rdzv_id (slurm::run_id) and,
// when Slurm gave GPUs, nproc_per_node; on more than one node also
// master_addr (the first host of the step's node list) and master_port
// (slurm::store_port), while one node keeps 127.0.0.1 and a free port. With
// worker_per_task each task is a node of one worker: nnodes is the step's
// task count and node_rank the task's rank. In an allocation outside a step:
// nnodes (how many nodes srun will start gangrun on) and the GPUs. Errors: a
// node list that is not a hostlist.
Expected<std::map<std::string, LayeredValue, std::less<>>> slurm_layer(const slurm::Job& job,
                                                                       bool worker_per_task);

// Usage errors: --launcher slurm outside a Slurm job; a step with more
// tasks on this node than one, naming the fix, unless --worker-per-task.
Expected<void> check_slurm_job(const Options& options);

}  // namespace gangrun::config
