#include "slurm/variables.hpp"

#include "util/strings.hpp"

#include <charconv>
#include <limits>

namespace gangrun::slurm {

std::optional<Read<std::string>> text_of(const EnvMap& env,
                                         std::initializer_list<const char*> names) {
  for (const char* name : names) {
    std::optional<std::string> text = env_lookup(env, name);
    if (text && !strings::trim(*text).empty()) {
      std::string trimmed(strings::trim(*text));
      return Read<std::string>{trimmed, name, trimmed};
    }
  }
  return std::nullopt;
}

Expected<std::uint64_t> unsigned_number(std::string_view text) {
  std::uint64_t value = 0;
  auto [end, error] = std::from_chars(text.data(), text.data() + text.size(), value);
  if (error != std::errc() || end != text.data() + text.size() || text.empty()) {
    return fail_usage("not a whole number");
  }
  return value;
}

Expected<std::optional<Read<int>>> count_of(const EnvMap& env,
                                            std::initializer_list<const char*> names) {
  std::optional<Read<std::string>> text = text_of(env, names);
  if (!text) return std::nullopt;
  Expected<std::uint64_t> value = unsigned_number(text->value);
  if (!value || *value > static_cast<std::uint64_t>(std::numeric_limits<int>::max())) {
    return fail_usage(variable_text(*text) + ": expected a count");
  }
  return Read<int>{static_cast<int>(*value), text->variable, text->text};
}

}  // namespace gangrun::slurm
