// Pure: the visibility mask each local worker gets (docs/devices.md,
// "Accelerators").
#pragma once

#include "placement/selection.hpp"
#include "util/error.hpp"

#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace gangrun::placement {

enum class VisibilityMode {
  shared,    // every worker sees the selected devices and indexes them with LOCAL_RANK
  per_rank,  // worker i sees only its own devices_per_proc devices
};

enum class MaskFormat {
  token,  // the tokens of the inherited variable (or driver indices)
  uuid,   // the devices' UUIDs
};

struct MaskSettings {
  VisibilityMode mode = VisibilityMode::shared;
  int devices_per_proc = 1;
  MaskFormat format = MaskFormat::token;
  // A selection flag was given. Without one, shared mode passes the
  // inherited visibility through untouched (one worker using DataParallel
  // still sees every device).
  bool selection_given = false;
};

// One entry per local worker: the value to set for variable, or nullopt to
// leave what the worker inherits as it is. ErrorCode::usage, with the
// numbers, when per-rank mode needs more devices than are selected, when a
// MIG instance would share a mask with another device (CUDA uses only the
// first MIG device a process sees), or when a UUID is asked for and a device
// has none.
Expected<std::vector<std::optional<std::string>>> worker_masks(
    const std::vector<Candidate>& selected, int local_workers, const MaskSettings& settings,
    std::string_view variable);

}  // namespace gangrun::placement
