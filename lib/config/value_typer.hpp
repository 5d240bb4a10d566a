// Turns layered option texts into typed Options fields, one after another,
// keeping the first failure prefixed with where its text came from. Shared by
// build_options.cpp and each tool's *_values.cpp.
#pragma once

#include "config/layering.hpp"
#include "util/error.hpp"
#include "util/strings.hpp"

#include <optional>
#include <string>
#include <string_view>

namespace gangrun::config {

inline Expected<std::string> any_text(std::string_view text) { return std::string(text); }

inline Expected<std::string> non_empty_text(std::string_view text) {
  if (strings::trim(text).empty()) return fail_usage("empty value");
  return std::string(text);
}

// The value of option `name` that the user gave, from any layer; nullptr when
// it has none or only the table's default.
inline const LayeredValue* given_value(const LayeredValues& values, std::string_view name) {
  auto it = values.find(name);
  return it != values.end() && it->second.source != Source::default_value ? &it->second : nullptr;
}

// Types one layered value after another into Options fields; the first
// failure is kept, prefixed with where the text came from.
class Typer {
 public:
  explicit Typer(const LayeredValues& values) : values_(values) {}

  template <typename Field, typename Parse>
  void set(std::string_view name, Parse parse, Field& field) {
    if (error_) return;
    const LayeredValue* value = find(name);
    if (value == nullptr) return;
    auto parsed = parse(value->text);
    if (!parsed) {
      error_.emplace(ErrorCode::usage, value->where + ": " + parsed.error().message());
      return;
    }
    field = std::move(*parsed);
  }

  const LayeredValue* find(std::string_view name) const {
    auto it = values_.find(name);
    return it == values_.end() ? nullptr : &it->second;
  }

  const std::optional<Error>& error() const { return error_; }

 private:
  const LayeredValues& values_;
  std::optional<Error> error_;
};

}  // namespace gangrun::config
