// BackendReport as JSON text, so a probe that runs in a child process (see
// cuda_backend.hpp) can hand its answer to the parent over a pipe. Any
// backend may reuse it. nlohmann_json stays inside report_json.cpp.
//
// Form: {"kind": "cuda", "driver_version": "12.6", "unavailable": null | "why",
//        "devices": [{"kind", "index", "name", "uuid", "pci": null |
//        {"domain", "bus", "device", "function"}, "memory_bytes",
//        "architecture", "compute_units", "tiles", "mig"}, ...]}
#pragma once

#include "accel/device.hpp"
#include "util/error.hpp"

#include <string>
#include <string_view>

namespace gangrun::accel {

std::string report_to_json(const BackendReport& report);

// ErrorCode::io when text is not JSON or lacks a field of the form above.
Expected<BackendReport> report_from_json(std::string_view text);

}  // namespace gangrun::accel
