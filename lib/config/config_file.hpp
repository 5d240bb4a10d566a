// The --config FILE: a JSON object of long option names to values. This file
// only reads and checks the JSON shape; layering.cpp decides what the keys mean.
#pragma once

#include "util/error.hpp"

#include <cstddef>
#include <string>
#include <string_view>
#include <vector>

namespace gangrun::config {

struct ConfigEntry {
  enum class Type { string, number, boolean };
  std::string key = {};   // as written in the file
  std::string text = {};  // strings as-is, numbers in decimal, booleans "true"/"false"
  Type type = Type::string;
};

// The largest config file read: a few option values fit many times over.
inline constexpr std::size_t k_max_config_bytes = 1024 * 1024;

// Reads `path`. Usage errors (each message starts with the path): the file
// cannot be read, is not a regular file (a directory, a FIFO, a device such
// as /dev/zero), is larger than k_max_config_bytes, is not valid JSON, is not an object, or has a
// value that is not a string, number or boolean. Entries come in the file's key order.
Expected<std::vector<ConfigEntry>> load_config_file(const std::string& path);

// The text of a config file, with the checks above; `reader` completes the
// message for a file that is not a regular one ("--config reads JSON").
Expected<std::string> read_config_file_text(const std::string& path, std::string_view reader);

// The same checks on JSON text already in memory; `path` only names it in messages.
Expected<std::vector<ConfigEntry>> parse_config_text(const std::string& text,
                                                     const std::string& path);

}  // namespace gangrun::config
