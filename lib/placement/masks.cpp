#include "placement/masks.hpp"

#include "util/strings.hpp"

#include <algorithm>

namespace gangrun::placement {
namespace {

Expected<std::string> token_of(const Candidate& candidate, const MaskSettings& settings,
                               std::string_view variable) {
  // A MIG instance can only be named by its UUID.
  if (settings.format == MaskFormat::token && !candidate.device.mig) return candidate.token;
  if (candidate.device.uuid.empty()) {
    return fail_usage("--mask-format uuid: device " + candidate.token + " (" +
                      candidate.device.name + ") has no UUID to write into " +
                      std::string(variable));
  }
  return candidate.device.uuid;
}

Expected<std::string> mask_of(const std::vector<Candidate>& devices, const MaskSettings& settings,
                              std::string_view variable) {
  std::size_t migs = static_cast<std::size_t>(std::count_if(
      devices.begin(), devices.end(), [](const Candidate& c) { return c.device.mig; }));
  if (migs > 0 && devices.size() > 1) {
    return fail_usage(std::string(variable) + " would list a MIG instance with " +
                      std::to_string(devices.size() - 1) +
                      " other device(s); CUDA shows a process only the first MIG device it is "
                      "given, so give each worker one: --visible-devices per-rank "
                      "--devices-per-proc 1");
  }
  std::vector<std::string> tokens;
  for (const Candidate& candidate : devices) {
    GANGRUN_TRY_ASSIGN(token, token_of(candidate, settings, variable));
    tokens.push_back(*token);
  }
  return strings::join(tokens, ",");
}

}  // namespace

Expected<std::vector<std::optional<std::string>>> worker_masks(
    const std::vector<Candidate>& selected, int local_workers, const MaskSettings& settings,
    std::string_view variable) {
  auto workers = static_cast<std::size_t>(std::max(local_workers, 0));
  std::vector<std::optional<std::string>> masks(workers);
  if (settings.mode == VisibilityMode::shared) {
    if (!settings.selection_given && settings.format == MaskFormat::token) return masks;
    GANGRUN_TRY_ASSIGN(mask, mask_of(selected, settings, variable));
    std::fill(masks.begin(), masks.end(), *mask);
    return masks;
  }

  if (settings.devices_per_proc < 1) {
    return fail_usage("--devices-per-proc " + std::to_string(settings.devices_per_proc) +
                      ": each worker needs at least 1 device");
  }
  auto per_worker = static_cast<std::size_t>(settings.devices_per_proc);
  if (workers * per_worker > selected.size()) {
    return fail_usage("--visible-devices per-rank: " + std::to_string(workers) + " workers x " +
                      std::to_string(per_worker) + " device(s) each (--devices-per-proc) need " +
                      std::to_string(workers * per_worker) + " devices, but " +
                      std::to_string(selected.size()) +
                      " are selected; start fewer workers or select more devices");
  }
  for (std::size_t worker = 0; worker < workers; ++worker) {
    auto first = selected.begin() + static_cast<long>(worker * per_worker);
    GANGRUN_TRY_ASSIGN(mask,
                       mask_of(std::vector<Candidate>(first, first + static_cast<long>(per_worker)),
                               settings, variable));
    masks[worker] = *mask;
  }
  return masks;
}

}  // namespace gangrun::placement
