// What hostfiles and starting gangrun on other hosts asked for, typed (Options::hosts).
#pragma once

namespace gangrun::config {

struct HostsSettings {};

}  // namespace gangrun::config
