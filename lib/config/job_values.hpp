// The job's layer of the option values (below the config files, above the
// defaults), for every job system (schedulers/job.hpp): the node count, node
// rank, head node, store port, run id and workers per node come from the
// variables the job's system sets, so that a job script needs no
// boilerplate, each value saying which variable or file it came from. One
// entry point, job_layer(); Slurm's richer job (Job::slurm) is read by the
// Slurm part of it. Also --launcher and --launcher_args, and the job's hosts
// for the ssh start of a PBS or LSF job.
#pragma once

#include "config/hosts/hostfile.hpp"
#include "config/layering.hpp"
#include "config/options.hpp"
#include "schedulers/job.hpp"
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

// The values the job gives, by option name, each saying which variables it
// came from (Source::slurm for a Slurm job, Source::scheduler for another).
//
// Slurm, in a step: nnodes, node_rank, rdzv_id (slurm::run_id) and, when
// Slurm gave GPUs, nproc_per_node; on more than one node also master_addr
// (the first host of the step's node list) and master_port
// (slurm::store_port), while one node keeps 127.0.0.1 and a free port. With
// worker_per_task each task is a node of one worker: nnodes is the step's
// task count and node_rank the task's rank. In an allocation outside a step:
// nnodes (how many nodes srun will start gangrun on) and the GPUs. Errors: a
// node list that is not a hostlist.
//
// Another system that starts gangrun on every node: nnodes, node_rank,
// rdzv_id, the workers per node when the system says, and on more than one
// node master_addr (the head) and master_port (when the system gives one).
// One whose job script runs on the first node only: nnodes (the hosts
// gangrun starts itself on over ssh, typed by hosts_values.cpp) and rdzv_id.
Expected<LayeredValues> job_layer(const schedulers::Job& job, bool worker_per_task);

// The job's hosts as a hostfile's entries (config/hosts/hostfile.hpp), for the
// ssh start of a job whose script runs on its first node: each host's slots
// as the scheduler gave them, or --nproc_per_node N on every host when given.
std::vector<HostfileEntry> scheduler_hosts(const schedulers::Job& job,
                                           const std::optional<ProcCount>& nproc_per_node);

// Usage errors: --launcher slurm outside a Slurm job; a step with more
// tasks on this node than one, naming the fix, unless --worker-per-task.
Expected<void> check_slurm_job(const Options& options);

}  // namespace gangrun::config
