// One reader per system, each pure over the variables as that system sets
// them (job_readers.cpp lists them in the order read_job in job.hpp asks). Each returns nullopt
// when its system's variables are absent, and a usage error naming the variable or file when they
// are there but do not describe a job gangrun can run in.
#pragma once

#include "schedulers/job.hpp"

#include <string_view>
#include <vector>

namespace gangrun::schedulers {

// PBS Pro, OpenPBS and Torque: PBS_JOBID and PBS_NODEFILE, a file with one
// host per line, repeated once per slot. The job script runs on the first
// host; gangrun starts itself on the others.
Expected<std::optional<Job>> read_pbs_job(const EnvMap& env, const Context& context);

// IBM Spectrum LSF: LSB_JOBID and LSB_MCPU_HOSTS ("hostA 4 hostB 4"), or
// LSB_HOSTS (one name per slot). The job script runs on the first host.
Expected<std::optional<Job>> read_lsf_job(const EnvMap& env, const Context& context);

// Kubeflow's PyTorchJob: in every pod MASTER_ADDR, MASTER_PORT, WORLD_SIZE
// (the pods) and RANK (this pod's index), and from newer operators the
// PET_* variables torchrun reads (gangrun reads those in a layer of their
// own, above this one). Only inside Kubernetes (KUBERNETES_SERVICE_HOST).
Expected<std::optional<Job>> read_kubeflow_job(const EnvMap& env);

// SkyPilot's run section on every node: SKYPILOT_NODE_RANK,
// SKYPILOT_NODE_IPS (one address per line, the head first),
// SKYPILOT_NUM_NODES, SKYPILOT_NUM_GPUS_PER_NODE, SKYPILOT_TASK_ID.
Expected<std::optional<Job>> read_skypilot_job(const EnvMap& env);

// The hosts of a list with one name per slot, in first-seen order, each with
// how many times it appears (a host named again later adds slots).
std::vector<Host> hosts_from_slots(const std::vector<std::string>& names);

// Checks that `hosts` names this host exactly once (its full name or the
// part before the first dot, either way round). `origin` names the list in
// the usage error, which says what to do.
Expected<void> check_this_host_listed(const std::vector<Host>& hosts, std::string_view origin,
                                      std::string_view host_name, std::string_view system);

}  // namespace gangrun::schedulers
