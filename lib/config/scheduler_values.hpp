// The layer of option values that another scheduler's job gives (PBS, LSF,
// Kubeflow's PyTorchJob, SkyPilot, an MPI launcher; schedulers/job.hpp), in
// the place of Slurm's (below the config files, above the defaults), each
// value saying which variable or file it came from.
#pragma once

#include "config/hosts/hostfile.hpp"
#include "config/layering.hpp"
#include "schedulers/job.hpp"

#include <map>
#include <string>
#include <vector>

namespace gangrun::config {

// Where the scheduler starts gangrun on every node: nnodes, node_rank,
// rdzv_id, the workers per node when the system says, and on more than one
// node master_addr (the head) and master_port (when the system gives one).
// Where the job script runs on the first node only: nnodes (the hosts
// gangrun starts itself on over ssh, typed by hosts_values.cpp) and rdzv_id.
std::map<std::string, LayeredValue, std::less<>> scheduler_layer(const schedulers::Job& job);

// The job's hosts as a hostfile's entries (config/hosts/hostfile.hpp), for the
// ssh start of a job whose script runs on its first node: each host's slots
// as the scheduler gave them, or --nproc_per_node N on every host when given.
std::vector<HostfileEntry> scheduler_hosts(const schedulers::Job& job,
                                           const std::optional<ProcCount>& nproc_per_node);

}  // namespace gangrun::config
