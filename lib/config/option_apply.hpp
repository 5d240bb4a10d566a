// The apply functions of the option table's rows (OptionSpec::apply): each
// types an option's text with one parser and stores it in one member of
// Options or of one of its tools' settings. The row names both, so the parser
// and the field's type are checked against each other where the row is written.
#pragma once

#include "config/option_table.hpp"
#include "config/options.hpp"

#include <string_view>
#include <utility>

namespace gangrun::config {

// options.*Field = Parse(text).
template <auto Field, auto Parse>
Expected<void> into(std::string_view text, Options& options) {
  auto parsed = Parse(text);
  if (!parsed) return tl::unexpected(std::move(parsed.error()));
  options.*Field = std::move(*parsed);
  return {};
}

// (options.*Settings).*Field = Parse(text): a tool's own settings
// (Options::accelerate, ::deepspeed, ::hosts).
template <auto Settings, auto Field, auto Parse>
Expected<void> into_settings(std::string_view text, Options& options) {
  auto parsed = Parse(text);
  if (!parsed) return tl::unexpected(std::move(parsed.error()));
  (options.*Settings).*Field = std::move(*parsed);
  return {};
}

// Parsed and checked, then dropped: an option gangrun accepts for another
// launcher's sake and that changes nothing (the row's help says why).
template <auto Parse>
Expected<void> accept_only(std::string_view text, Options&) {
  auto parsed = Parse(text);
  if (!parsed) return tl::unexpected(std::move(parsed.error()));
  return {};
}

}  // namespace gangrun::config
