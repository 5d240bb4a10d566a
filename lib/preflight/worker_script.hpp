// The Python program gangrun preflight runs as every worker
// (preflight_worker.py, compiled in so that the binary alone is enough).
#pragma once

#include <string_view>

namespace gangrun::preflight {

std::string_view worker_script();

}  // namespace gangrun::preflight
