#include "agent/rank_gpus.hpp"

#include "util/strings.hpp"

namespace gangrun::agent {

namespace {

constexpr std::chrono::milliseconds k_gpu_interval{1000};

bool has_cuda_gpus(const launch::LaunchPlan& plan) {
  return plan.devices && plan.devices->kind == accel::DeviceKind::cuda && plan.devices->view &&
         !plan.devices->view->visible.empty();
}

}  // namespace

std::unique_ptr<accel::GpuSampler> gpu_sampler_for(const launch::LaunchPlan& plan) {
  if (!has_cuda_gpus(plan)) return nullptr;
  return std::make_unique<accel::GpuSampler>(plan.host_env, k_gpu_interval);
}

std::vector<std::string> rank_gpu_uuids(const launch::LaunchPlan& plan, int local_rank) {
  if (!has_cuda_gpus(plan)) return {};
  const placement::NodeView& view = *plan.devices->view;
  std::vector<std::string> uuids;
  auto add = [&](const placement::Candidate& candidate) {
    if (!candidate.device.uuid.empty()) uuids.push_back(candidate.device.uuid);
  };
  const launch::WorkerPlan* worker = nullptr;
  for (const launch::WorkerPlan& each : plan.workers) {
    if (each.local_rank == local_rank) worker = &each;
  }
  auto mask = worker ? worker->device_env.find(view.variable) : EnvMap::const_iterator{};
  if (!worker || mask == worker->device_env.end()) {
    // No mask of its own: it sees what gangrun sees.
    for (const placement::Candidate& candidate : view.visible) add(candidate);
    return uuids;
  }
  for (const std::string& token : strings::split(mask->second, ',')) {
    for (const placement::Candidate& candidate : view.visible) {
      if (candidate.token == token) add(candidate);
    }
  }
  return uuids;
}

void add_gpu_usage(observe::NodeStatus& status, const accel::GpuSampler* sampler,
                   const launch::LaunchPlan& plan) {
  if (!sampler) return;
  std::optional<accel::GpuReading> reading = sampler->latest();
  if (!reading || !reading->unavailable.empty()) return;
  for (observe::RankStatus& rank : status.ranks) {
    accel::RankGpuUsage usage =
        accel::usage_of_rank(reading->gpus, static_cast<pid_t>(rank.pid),
                             rank_gpu_uuids(plan, rank.local_rank), !plan.per_rank_visibility);
    if (usage.utilization_pct) rank.gpu_utilization = *usage.utilization_pct;
    rank.gpu_memory_bytes = usage.memory_bytes;
  }
}

}  // namespace gangrun::agent
