// Reading a job's values from the variables a scheduler sets: each value
// keeps the variable it came from and its text, so that messages and
// `--dry-run -v` can say where a derived option came from. Slurm's reader
// uses these, and so do the other schedulers' (lib/schedulers/).
#pragma once

#include "util/env.hpp"
#include "util/error.hpp"
#include "util/strings.hpp"

#include <cstdint>
#include <initializer_list>
#include <optional>
#include <string>
#include <string_view>

namespace gangrun::slurm {

// A value and the variable it was read from.
template <typename T>
struct Read {
  T value{};
  std::string variable;  // "SLURM_STEP_NUM_NODES"
  std::string text;      // the variable's text, "3" or "node[1-3]"
  bool operator==(const Read&) const = default;
};

// "SLURM_NNODES=3": how messages quote a value's origin. The text is made
// printable (strings::printable): a variable may hold escape sequences or
// newlines, which a message must not pass to the terminal or the log.
template <typename T>
std::string variable_text(const Read<T>& read) {
  return read.variable + "=" + strings::printable(read.text);
}

// The first of `names` that is set and not empty, trimmed: schedulers keep
// legacy spellings (SLURM_JOBID beside SLURM_JOB_ID) for old scripts.
std::optional<Read<std::string>> text_of(const EnvMap& env,
                                         std::initializer_list<const char*> names);

// A whole number of decimal digits, nothing else.
Expected<std::uint64_t> unsigned_number(std::string_view text);

// The first of `names` as a count (0..INT_MAX); nullopt when none is set.
// The usage error names the variable and its text.
Expected<std::optional<Read<int>>> count_of(const EnvMap& env,
                                            std::initializer_list<const char*> names);

}  // namespace gangrun::slurm
