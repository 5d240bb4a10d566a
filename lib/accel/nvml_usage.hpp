// How busy each GPU of this host is, read through NVML (libnvidia-ml.so.1,
// opened at run time like the CUDA driver): per GPU its utilisation, its
// memory, and the memory each process holds on it. What `gangrun top` and
// the metrics show per rank (observe/) comes from here.
//
// NVML can block for seconds in a wedged driver, so the node agent never
// calls it on its loop: GpuSampler reads on a thread of its own and keeps
// the last reading, which says how old it is.
#pragma once

#include "util/env.hpp"
#include "util/error.hpp"

#include <sys/types.h>

#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <vector>

namespace gangrun::accel {

inline constexpr const char* k_default_nvml_library = "libnvidia-ml.so.1";

// env's GANGRUN_NVML_LIBRARY, else libnvidia-ml.so.1.
std::string nvml_library_path(const EnvMap& env);

struct GpuProcess {
  pid_t pid = 0;                       // as the driver sees it: the host's pid namespace
  std::optional<std::uint64_t> bytes;  // nullopt where the driver does not say
};

struct GpuUsage {
  unsigned index = 0;                         // NVML's (PCI bus) order
  std::string uuid;                           // "GPU-...", as CUDA names it too
  std::optional<unsigned> utilization_pct;    // nullopt: not supported (a MIG device)
  std::optional<std::uint64_t> memory_used;   // bytes
  std::optional<std::uint64_t> memory_total;  // bytes
  std::vector<GpuProcess> processes;          // compute processes on it
};

// An open, initialised NVML; shut down when destroyed.
class NvmlSession {
 public:
  // Fails (ErrorCode::not_found) when the library or an entry point is
  // missing, or nvmlInit fails (no driver loaded), with NVML's words.
  static Expected<NvmlSession> open(const EnvMap& env);
  NvmlSession(const NvmlSession&) = delete;
  NvmlSession& operator=(const NvmlSession&) = delete;
  NvmlSession(NvmlSession&&) noexcept;
  NvmlSession& operator=(NvmlSession&&) noexcept;
  ~NvmlSession();

  // Every GPU of the host. A GPU whose handle or UUID cannot be read is
  // left out; a value the device does not support is nullopt.
  Expected<std::vector<GpuUsage>> read() const;

 private:
  struct Api;
  explicit NvmlSession(std::unique_ptr<Api> api);
  std::unique_ptr<Api> api_;
};

// What a rank uses of the GPUs it was given.
struct RankGpuUsage {
  std::optional<unsigned> utilization_pct;    // the busiest of its GPUs
  std::optional<std::uint64_t> memory_bytes;  // what its process holds, on all of them
};

// rank_uuids: the GPUs the rank sees (its CUDA_VISIBLE_DEVICES, as UUIDs);
// pid: its process. Where the driver lists no process of that pid (a
// container whose pid namespace is not the host's) and the rank has its GPUs
// to itself, the GPUs' used memory is the rank's. nullopt fields: nothing
// to say (no GPU, or unsupported).
RankGpuUsage usage_of_rank(const std::vector<GpuUsage>& gpus, pid_t pid,
                           const std::vector<std::string>& rank_uuids, bool gpus_shared);

// The latest reading, taken on a thread of its own every interval.
struct GpuReading {
  std::chrono::steady_clock::time_point at;
  std::vector<GpuUsage> gpus;
  std::string unavailable;  // why there is nothing (no NVML, no driver); empty when read
};

class GpuSampler {
 public:
  // Starts the thread; the first reading follows at once.
  GpuSampler(EnvMap env, std::chrono::milliseconds interval);
  GpuSampler(const GpuSampler&) = delete;
  GpuSampler& operator=(const GpuSampler&) = delete;
  // Stops the thread, waiting up to 2 s for a reading under way; one stuck
  // in the driver longer is left behind (detached).
  ~GpuSampler();

  // nullopt until the first reading is done.
  std::optional<GpuReading> latest() const;

 private:
  struct Shared;
  static void sample_until_stopped(const std::shared_ptr<Shared>& shared);
  std::shared_ptr<Shared> shared_;
  std::thread thread_;
};

}  // namespace gangrun::accel
