// The --config FILE: a JSON object of long option names to values. This file
// only reads and checks the JSON shape; layering.cpp decides what the keys mean.
//
// It also owns reading any file a user names (--config, accelerate's
// --config_file, -H/--hostfile, .deepspeed_env): one reader with one set of
// checks, so that none of them can be made to hang or to eat all memory.
#pragma once

#include "util/error.hpp"

#include <cstddef>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace gangrun::config {

// ---- any file a user names

// What a user's file is, for the reader's limit and messages.
struct UserFileKind {
  std::string_view name;      // "the hostfile", in "PATH: cannot read the hostfile: ..."
  std::string_view reads;     // "-H/--hostfile reads 'HOST slots=N' lines" (from a regular file)
  std::size_t max_bytes = 0;  // a larger file is refused
  std::string_view holds;     // why max_bytes is plenty: "a config file holds a few option values"
};

// The text of the user's file at `path`. Usage errors, each starting with the
// path: it cannot be opened; it is not a regular file (a directory, a device
// such as /dev/zero, a socket, a FIFO, which includes a pipe such as -H <(...)
// or /dev/stdin on a pipe: refused at once rather than waiting for a writer);
// it is larger than kind.max_bytes.
Expected<std::string> read_user_file(const std::string& path, const UserFileKind& kind);

// Refuses a NUL character in a string from a user's file: an argument, an
// environment variable or a path ends at its first NUL, so the rest would be
// dropped without a word (127.0.0.1\0.evil.com would become 127.0.0.1).
// `where` names the file and the key ("f.json: key \"master_addr\""), `what`
// the string ("the value", "the key").
Expected<void> refuse_nul(std::string_view text, const std::string& where, std::string_view what);

// A key as it can be shown in a message: a NUL written as \0.
std::string printable_key(std::string_view key);

// The lines of a file's text, one view at a time, without copying: a file of
// 16 MiB of empty lines must not become 16 million strings.
class Lines {
 public:
  explicit Lines(std::string_view text) : rest_(text) {}
  // The next line without its '\n'; nullopt after the last.
  std::optional<std::string_view> next();
  // The 1-based number of the line next() gave last.
  int number() const { return number_; }

 private:
  std::optional<std::string_view> rest_;
  int number_ = 0;
};

// ---- the --config file

struct ConfigEntry {
  enum class Type { string, number, boolean };
  std::string key = {};   // as written in the file
  std::string text = {};  // strings as-is, numbers in decimal, booleans "true"/"false"
  Type type = Type::string;
};

// The largest config file read: a few option values fit many times over.
inline constexpr std::size_t k_max_config_bytes = 1024 * 1024;

// --config's JSON and accelerate's YAML config: one limit and one wording,
// told apart by what reads them ("--config reads JSON").
constexpr UserFileKind config_file_kind(std::string_view reads) {
  return {.name = "the config file",
          .reads = reads,
          .max_bytes = k_max_config_bytes,
          .holds = "a config file holds a few option values"};
}

// Reads `path` (read_user_file's checks, k_max_config_bytes). Usage errors
// (each message starts with the path): those of read_user_file, not valid
// JSON, not an object, a value that is not a string, number or boolean, a NUL
// in a key or a string. Entries come in the file's key order.
Expected<std::vector<ConfigEntry>> load_config_file(const std::string& path);

// The same checks on JSON text already in memory; `path` only names it in messages.
Expected<std::vector<ConfigEntry>> parse_config_text(const std::string& text,
                                                     const std::string& path);

}  // namespace gangrun::config
