#include "config/config_file.hpp"

#include "util/fd.hpp"

#include <nlohmann/json.hpp>

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>

namespace gangrun::config {

namespace {

std::string file_type_name(mode_t mode) {
  if (S_ISDIR(mode)) return "a directory";
  if (S_ISFIFO(mode)) return "a FIFO (named pipe)";
  if (S_ISCHR(mode)) return "a character device";
  if (S_ISBLK(mode)) return "a block device";
  if (S_ISSOCK(mode)) return "a socket";
  return "not a regular file";
}

}  // namespace

// O_NONBLOCK: opening a FIFO without a writer would otherwise block forever;
// the type is judged on the open descriptor, so nothing can be swapped in
// between the check and the read. /dev/zero and the like are refused by type,
// a regular file larger than the limit by size, and a /proc-style file that
// reports size 0 by what is actually read.
Expected<std::string> read_config_file_text(const std::string& path, std::string_view reader) {
  auto cannot = [&](const std::string& why) {
    return fail_usage(path + ": cannot read the config file: " + why);
  };
  int fd = ::open(path.c_str(), O_RDONLY | O_NONBLOCK | O_CLOEXEC);
  if (fd < 0) return cannot(errno_text(errno));
  UniqueFd file(fd);
  struct stat info {};
  if (::fstat(file.get(), &info) != 0) return cannot(errno_text(errno));
  if (!S_ISREG(info.st_mode)) {
    return cannot("it is " + file_type_name(info.st_mode) + "; " + std::string(reader) +
                  " from a regular file");
  }
  const std::string too_large = "it is larger than " + std::to_string(k_max_config_bytes / 1024) +
                                " KiB; a config file holds a few option values";
  if (info.st_size > static_cast<off_t>(k_max_config_bytes)) return cannot(too_large);
  std::string text;
  char buffer[65536];
  for (;;) {
    ssize_t got = ::read(file.get(), buffer, sizeof buffer);
    if (got < 0 && errno == EINTR) continue;
    if (got < 0) return cannot(errno_text(errno));
    if (got == 0) break;
    text.append(buffer, static_cast<std::size_t>(got));
    if (text.size() > k_max_config_bytes) return cannot(too_large);
  }
  return text;
}

namespace {

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
    return fail_usage(path + ": not valid JSON: " + without_exception_id(error.what()));
  }
  if (!root.is_object()) {
    return fail_usage(path +
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
      return fail_usage(path + ": key \"" + key + "\": expected a string, number or boolean, not " +
                        value.type_name());
    }
    entries.push_back(std::move(entry));
  }
  return entries;
}

Expected<std::vector<ConfigEntry>> load_config_file(const std::string& path) {
  GANGRUN_TRY_ASSIGN(text, read_config_file_text(path, "--config reads JSON"));
  return parse_config_text(*text, path);
}

}  // namespace gangrun::config
