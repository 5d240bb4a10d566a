// --metrics-addr: where a node agent serves /metrics and /healthz.
#pragma once

#include "config/options.hpp"
#include "util/error.hpp"

#include <string_view>

namespace gangrun::config {

// "HOST:PORT", "[V6ADDR]:PORT", ":PORT" or "PORT"; without a host the
// endpoint is loopback (127.0.0.1), so that nothing is exposed unless the
// user names an interface. Port 0..65535, 0: the kernel picks one (the agent
// logs the address it bound and writes it in the job's registry file). A
// usage error names --metrics-addr and the form.
Expected<Endpoint> parse_metrics_address(std::string_view text);

}  // namespace gangrun::config
