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
// reports size 0 by what is actually read. A pipe is refused rather than read
// up to the limit: its writer may never close it, and a FIFO opened before
// its writer reads as empty.
Expected<std::string> read_user_file(const std::string& path, const UserFileKind& kind) {
  auto cannot = [&](const std::string& why) {
    return fail_usage(path + ": cannot read " + std::string(kind.name) + ": " + why);
  };
  int fd = ::open(path.c_str(), O_RDONLY | O_NONBLOCK | O_CLOEXEC);
  if (fd < 0) return cannot(errno_text(errno));
  UniqueFd file(fd);
  struct stat info {};
  if (::fstat(file.get(), &info) != 0) return cannot(errno_text(errno));
  if (!S_ISREG(info.st_mode)) {
    return cannot("it is " + file_type_name(info.st_mode) + "; " + std::string(kind.reads) +
                  " from a regular file");
  }
  const std::string too_large = "it is larger than " + std::to_string(kind.max_bytes / 1024) +
                                " KiB; " + std::string(kind.holds);
  if (info.st_size > static_cast<off_t>(kind.max_bytes)) return cannot(too_large);
  std::string text;
  char buffer[65536];
  for (;;) {
    ssize_t got = ::read(file.get(), buffer, sizeof buffer);
    if (got < 0 && errno == EINTR) continue;
    if (got < 0) return cannot(errno_text(errno));
    if (got == 0) break;
    text.append(buffer, static_cast<std::size_t>(got));
    if (text.size() > kind.max_bytes) return cannot(too_large);
  }
  return text;
}

Expected<void> refuse_nul(std::string_view text, const std::string& where, std::string_view what) {
  if (text.find('\0') == std::string_view::npos) return {};
  return fail_usage(where + ": " + std::string(what) +
                    " contains a NUL character; remove it (an argument, a path or an environment "
                    "variable would end at it and silently lose the rest)");
}

std::string printable_key(std::string_view key) {
  std::string shown;
  for (char c : key) {
    if (c == '\0') {
      shown += "\\0";
    } else {
      shown += c;
    }
  }
  return shown;
}

std::optional<std::string_view> Lines::next() {
  if (!rest_) return std::nullopt;
  std::string_view text = *rest_;
  std::size_t end = text.find('\n');
  ++number_;
  if (end == std::string_view::npos) {
    rest_.reset();
    return text;
  }
  rest_ = text.substr(end + 1);
  return text.substr(0, end);
}

namespace {

// nlohmann's what() starts with "[json.exception.parse_error.101] "; the rest
// ("parse error at line 2, column 5: ...") is what the user needs.
std::string without_exception_id(const std::string& what) {
  std::size_t end = what.find("] ");
  return what.starts_with("[json.exception.") && end != std::string::npos ? what.substr(end + 2)
                                                                          : what;
}

// Every value a config file gives passes here, so its NUL check covers every
// key; nested objects and arrays are refused whole by parse_config_text.
Expected<ConfigEntry> config_entry(const std::string& key, const nlohmann::ordered_json& value,
                                   const std::string& path) {
  const std::string where = path + ": key \"" + printable_key(key) + "\"";
  GANGRUN_TRY(refuse_nul(key, where, "the key"));
  ConfigEntry entry{.key = key};
  if (value.is_string()) {
    entry.type = ConfigEntry::Type::string;
    entry.text = value.get<std::string>();
    GANGRUN_TRY(refuse_nul(entry.text, where, "the value"));
  } else if (value.is_boolean()) {
    entry.type = ConfigEntry::Type::boolean;
    entry.text = value.get<bool>() ? "true" : "false";
  } else if (value.is_number()) {
    entry.type = ConfigEntry::Type::number;
    entry.text = value.dump();
  } else {
    return fail_usage(where + ": expected a string, number or boolean, not " + value.type_name());
  }
  return entry;
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
    GANGRUN_TRY_ASSIGN(entry, config_entry(key, value, path));
    entries.push_back(std::move(*entry));
  }
  return entries;
}

Expected<std::vector<ConfigEntry>> load_config_file(const std::string& path) {
  GANGRUN_TRY_ASSIGN(text, read_user_file(path, config_file_kind("--config reads JSON")));
  return parse_config_text(*text, path);
}

}  // namespace gangrun::config
