// What each rank uses of its GPUs, for the node's snapshot (`gangrun top`,
// /metrics): one NVML sampler per agent (accel/nvml_usage.hpp), started
// only when the job gives its ranks CUDA GPUs, so a CPU job never opens
// NVML; each rank's GPUs are the UUIDs behind the tokens of its mask.
#pragma once

#include "accel/nvml_usage.hpp"
#include "launch/plan.hpp"
#include "observe/node_status.hpp"

#include <memory>
#include <string>
#include <vector>

namespace gangrun::agent {

// A sampler reading every second, or null for a job without CUDA GPUs.
std::unique_ptr<accel::GpuSampler> gpu_sampler_for(const launch::LaunchPlan& plan);

// The UUIDs of the GPUs local rank `local_rank` sees (empty: none known).
std::vector<std::string> rank_gpu_uuids(const launch::LaunchPlan& plan, int local_rank);

// Each rank's GPU fields from the sampler's latest reading; none without one.
void add_gpu_usage(observe::NodeStatus& status, const accel::GpuSampler* sampler,
                   const launch::LaunchPlan& plan);

}  // namespace gangrun::agent
