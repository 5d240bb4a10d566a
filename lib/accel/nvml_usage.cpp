#include "accel/nvml_usage.hpp"

#include "accel/nvml_api.hpp"
#include "util/dynamic_library.hpp"

#include <algorithm>
#include <array>
#include <cstring>
#include <set>

namespace gangrun::accel {

namespace nv = nvml_api;

namespace {

// How long a sampler being destroyed waits for a reading under way.
constexpr std::chrono::seconds k_stop_limit{2};

}  // namespace

struct NvmlSession::Api {
  DynamicLibrary library;
  nv::nvmlShutdown_fn* shutdown = nullptr;
  nv::nvmlErrorString_fn* error_string = nullptr;
  nv::nvmlDeviceGetCount_v2_fn* device_count = nullptr;
  nv::nvmlDeviceGetHandleByIndex_v2_fn* handle_by_index = nullptr;
  nv::nvmlDeviceGetUUID_fn* uuid = nullptr;
  nv::nvmlDeviceGetUtilizationRates_fn* utilization = nullptr;
  nv::nvmlDeviceGetMemoryInfo_fn* memory = nullptr;
  // The newest process list the library has; the last is for drivers
  // before 11.x, whose list has the two-field layout.
  nv::nvmlDeviceGetComputeRunningProcesses_v2_fn* processes_v2 = nullptr;
  nv::nvmlDeviceGetComputeRunningProcesses_v1_fn* processes_v1 = nullptr;

  std::string describe(nv::nvmlReturn_t rc) const {
    const char* text = error_string ? error_string(rc) : nullptr;
    std::string words = text ? std::string(text, strnlen(text, 200)) : "error";
    return words + " (" + std::to_string(rc) + ")";
  }

  std::vector<GpuProcess> processes(nv::nvmlDevice_t device) const {
    // The list can grow between the call that sizes it and the one that
    // fills it: a few tries, then what fit.
    std::vector<GpuProcess> found;
    unsigned count = 16;
    for (int attempt = 0; attempt < 3; ++attempt) {
      unsigned capacity = count;
      nv::nvmlReturn_t rc = nv::NVML_ERROR_NOT_SUPPORTED;
      found.clear();
      if (processes_v2) {
        std::vector<nv::nvmlProcessInfo_v2_t> infos(capacity);
        rc = processes_v2(device, &count, infos.data());
        if (rc == nv::NVML_SUCCESS) {
          for (unsigned i = 0; i < std::min(count, capacity); ++i)
            found.push_back({static_cast<pid_t>(infos[i].pid), bytes_of(infos[i].usedGpuMemory)});
        }
      } else if (processes_v1) {
        std::vector<nv::nvmlProcessInfo_v1_t> infos(capacity);
        rc = processes_v1(device, &count, infos.data());
        if (rc == nv::NVML_SUCCESS) {
          for (unsigned i = 0; i < std::min(count, capacity); ++i)
            found.push_back({static_cast<pid_t>(infos[i].pid), bytes_of(infos[i].usedGpuMemory)});
        }
      }
      if (rc != nv::NVML_ERROR_INSUFFICIENT_SIZE) return found;
      count = std::min(std::max(count, capacity * 2), 4096U);
    }
    return found;
  }

  static std::optional<std::uint64_t> bytes_of(unsigned long long value) {
    if (value == nv::k_value_not_available) return std::nullopt;
    return value;
  }
};

std::string nvml_library_path(const EnvMap& env) {
  std::optional<std::string> path = env_lookup(env, "GANGRUN_NVML_LIBRARY");
  return path && !path->empty() ? *path : k_default_nvml_library;
}

NvmlSession::NvmlSession(std::unique_ptr<Api> api) : api_(std::move(api)) {}
NvmlSession::NvmlSession(NvmlSession&&) noexcept = default;
NvmlSession& NvmlSession::operator=(NvmlSession&&) noexcept = default;

NvmlSession::~NvmlSession() {
  if (api_ && api_->shutdown) api_->shutdown();
}

Expected<NvmlSession> NvmlSession::open(const EnvMap& env) {
  std::string path = nvml_library_path(env);
  GANGRUN_TRY_ASSIGN(library, DynamicLibrary::open(path));
  auto api = std::make_unique<Api>(Api{.library = std::move(*library)});
  const DynamicLibrary& lib = api->library;
  GANGRUN_TRY_ASSIGN(init, lib.symbol<nv::nvmlInit_v2_fn>("nvmlInit_v2"));
  GANGRUN_TRY_ASSIGN(shutdown, lib.symbol<nv::nvmlShutdown_fn>("nvmlShutdown"));
  GANGRUN_TRY_ASSIGN(count, lib.symbol<nv::nvmlDeviceGetCount_v2_fn>("nvmlDeviceGetCount_v2"));
  GANGRUN_TRY_ASSIGN(
      handle, lib.symbol<nv::nvmlDeviceGetHandleByIndex_v2_fn>("nvmlDeviceGetHandleByIndex_v2"));
  GANGRUN_TRY_ASSIGN(uuid, lib.symbol<nv::nvmlDeviceGetUUID_fn>("nvmlDeviceGetUUID"));
  api->error_string = lib.optional_symbol<nv::nvmlErrorString_fn>("nvmlErrorString");
  api->device_count = *count;
  api->handle_by_index = *handle;
  api->uuid = *uuid;
  api->utilization =
      lib.optional_symbol<nv::nvmlDeviceGetUtilizationRates_fn>("nvmlDeviceGetUtilizationRates");
  api->memory = lib.optional_symbol<nv::nvmlDeviceGetMemoryInfo_fn>("nvmlDeviceGetMemoryInfo");
  api->processes_v2 = lib.optional_symbol<nv::nvmlDeviceGetComputeRunningProcesses_v2_fn>(
      "nvmlDeviceGetComputeRunningProcesses_v3");
  if (!api->processes_v2) {
    api->processes_v2 = lib.optional_symbol<nv::nvmlDeviceGetComputeRunningProcesses_v2_fn>(
        "nvmlDeviceGetComputeRunningProcesses_v2");
  }
  if (!api->processes_v2) {
    api->processes_v1 = lib.optional_symbol<nv::nvmlDeviceGetComputeRunningProcesses_v1_fn>(
        "nvmlDeviceGetComputeRunningProcesses");
  }
  if (nv::nvmlReturn_t rc = (*init)(); rc != nv::NVML_SUCCESS) {
    return fail(ErrorCode::not_found, "nvmlInit failed: " + api->describe(rc));
  }
  api->shutdown = *shutdown;
  return NvmlSession(std::move(api));
}

Expected<std::vector<GpuUsage>> NvmlSession::read() const {
  unsigned count = 0;
  if (nv::nvmlReturn_t rc = api_->device_count(&count); rc != nv::NVML_SUCCESS) {
    return fail(ErrorCode::io, "nvmlDeviceGetCount failed: " + api_->describe(rc));
  }
  std::vector<GpuUsage> gpus;
  for (unsigned index = 0; index < std::min(count, 1024U); ++index) {
    nv::nvmlDevice_t device = nullptr;
    if (api_->handle_by_index(index, &device) != nv::NVML_SUCCESS) continue;
    std::array<char, nv::k_uuid_buffer_size> uuid{};
    if (api_->uuid(device, uuid.data(), uuid.size()) != nv::NVML_SUCCESS) continue;
    GpuUsage gpu;
    gpu.index = index;
    gpu.uuid.assign(uuid.data(), strnlen(uuid.data(), uuid.size()));
    if (nv::nvmlUtilization_t rates{};
        api_->utilization && api_->utilization(device, &rates) == nv::NVML_SUCCESS) {
      gpu.utilization_pct = std::min(rates.gpu, 100U);
    }
    if (nv::nvmlMemory_t memory{};
        api_->memory && api_->memory(device, &memory) == nv::NVML_SUCCESS) {
      gpu.memory_used = memory.used;
      gpu.memory_total = memory.total;
    }
    gpu.processes = api_->processes(device);
    gpus.push_back(std::move(gpu));
  }
  return gpus;
}

RankGpuUsage usage_of_rank(const std::vector<GpuUsage>& gpus, pid_t pid,
                           const std::vector<std::string>& rank_uuids, bool gpus_shared) {
  RankGpuUsage usage;
  std::set<std::string> wanted(rank_uuids.begin(), rank_uuids.end());
  bool listed = false;
  std::uint64_t listed_bytes = 0;
  std::uint64_t device_bytes = 0;
  bool device_bytes_known = false;
  for (const GpuUsage& gpu : gpus) {
    if (!wanted.contains(gpu.uuid)) continue;
    if (gpu.utilization_pct)
      usage.utilization_pct = std::max(usage.utilization_pct.value_or(0), *gpu.utilization_pct);
    for (const GpuProcess& process : gpu.processes) {
      if (process.pid != pid) continue;
      listed = true;
      listed_bytes += process.bytes.value_or(0);
    }
    if (gpu.memory_used) {
      device_bytes += *gpu.memory_used;
      device_bytes_known = true;
    }
  }
  if (listed) {
    usage.memory_bytes = listed_bytes;
  } else if (!gpus_shared && device_bytes_known) {
    usage.memory_bytes = device_bytes;
  }
  return usage;
}

struct GpuSampler::Shared {
  EnvMap env;
  std::chrono::milliseconds interval{0};
  mutable std::mutex mutex;
  std::condition_variable wake;
  bool stopping = false;
  bool finished = false;  // the thread is past its last use of NVML
  std::optional<GpuReading> latest;
};

GpuSampler::GpuSampler(EnvMap env, std::chrono::milliseconds interval)
    : shared_(std::make_shared<Shared>()) {
  shared_->env = std::move(env);
  shared_->interval = interval;
  thread_ = std::thread([shared = shared_] { sample_until_stopped(shared); });
}

GpuSampler::~GpuSampler() {
  std::unique_lock<std::mutex> lock(shared_->mutex);
  shared_->stopping = true;
  shared_->wake.notify_all();
  bool finished = shared_->wake.wait_for(lock, k_stop_limit, [&] { return shared_->finished; });
  lock.unlock();
  // A thread stuck in the driver holds its own reference to the shared
  // state, so it may finish after this object is gone.
  if (finished)
    thread_.join();
  else
    thread_.detach();
}

std::optional<GpuReading> GpuSampler::latest() const {
  std::lock_guard<std::mutex> lock(shared_->mutex);
  return shared_->latest;
}

void GpuSampler::sample_until_stopped(const std::shared_ptr<Shared>& shared) {
  Expected<NvmlSession> session = NvmlSession::open(shared->env);
  std::unique_lock<std::mutex> lock(shared->mutex);
  while (!shared->stopping) {
    GpuReading reading;
    if (!session) {
      reading.unavailable = session.error().message();
    } else {
      lock.unlock();
      Expected<std::vector<GpuUsage>> gpus = session->read();
      lock.lock();
      if (gpus)
        reading.gpus = std::move(*gpus);
      else
        reading.unavailable = gpus.error().message();
    }
    reading.at = std::chrono::steady_clock::now();
    shared->latest = std::move(reading);
    // Without NVML there is nothing to read again.
    if (!session) break;
    shared->wake.wait_for(lock, shared->interval, [&] { return shared->stopping; });
  }
  lock.unlock();
  session = fail(ErrorCode::io, "stopped");  // shuts NVML down before saying so
  lock.lock();
  shared->finished = true;
  shared->wake.notify_all();
}

}  // namespace gangrun::accel
