#include "config/config_file.hpp"

#include <nlohmann/json.hpp>

#include <cerrno>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <system_error>

namespace gangrun::config {

namespace {

tl::unexpected<Error> usage(std::string message) {
  return fail(ErrorCode::usage, std::move(message));
}

Expected<std::string> read_whole_file(const std::string& path) {
  std::error_code error;
  if (std::filesystem::is_directory(path, error)) {
    return usage(path + ": cannot read the config file: it is a directory");
  }
  std::ifstream in(path, std::ios::binary);
  if (!in) return usage(path + ": cannot read the config file: " + errno_text(errno));
  std::ostringstream text;
  text << in.rdbuf();
  if (in.bad()) return usage(path + ": cannot read the config file: " + errno_text(errno));
  return text.str();
}

// nlohmann's what() starts with "[json.exception.parse_error.101] "; the rest
// ("parse error at line 2, column 5: ...") is what the user needs.
std::string without_exception_id(const std::string& what) {
  std::size_t end = what.find("] ");
  return what.starts_with("[json.exception.") && end != std::string::npos ? what.substr(end + 2)
                                                                          : what;
}

}  // namespace

Expected<std::vector<ConfigEntry>> parse_config_text(const std::string& text,
                                                     const std::string& path) {
  // ordered_json keeps the file's key order, so messages name keys as written.
  nlohmann::ordered_json root;
  try {
    root = nlohmann::ordered_json::parse(text);
  } catch (const nlohmann::json::exception& error) {
    return usage(path + ": not valid JSON: " + without_exception_id(error.what()));
  }
  if (!root.is_object()) {
    return usage(path +
                 ": expected a JSON object of option names to values, e.g. "
                 "{\"nproc_per_node\": 4}");
  }
  std::vector<ConfigEntry> entries;
  for (const auto& [key, value] : root.items()) {
    ConfigEntry entry{.key = key};
    if (value.is_string()) {
      entry.type = ConfigEntry::Type::string;
      entry.text = value.get<std::string>();
    } else if (value.is_boolean()) {
      entry.type = ConfigEntry::Type::boolean;
      entry.text = value.get<bool>() ? "true" : "false";
    } else if (value.is_number()) {
      entry.type = ConfigEntry::Type::number;
      entry.text = value.dump();
    } else {
      return usage(path + ": key \"" + key + "\": expected a string, number or boolean, not " +
                   value.type_name());
    }
    entries.push_back(std::move(entry));
  }
  return entries;
}

Expected<std::vector<ConfigEntry>> load_config_file(const std::string& path) {
  Expected<std::string> text = read_whole_file(path);
  if (!text) return tl::unexpected(text.error());
  return parse_config_text(*text, path);
}

}  // namespace gangrun::config
