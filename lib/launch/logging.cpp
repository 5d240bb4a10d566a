#include "launch/logging.hpp"

#include <unistd.h>

#include <spdlog/sinks/stdout_color_sinks.h>
#include <spdlog/spdlog.h>

namespace gangrun::launch {
namespace {

spdlog::level::level_enum level_for(int verbosity) {
  if (verbosity < 0) return spdlog::level::err;
  if (verbosity == 0) return spdlog::level::info;
  if (verbosity == 1) return spdlog::level::debug;
  return spdlog::level::trace;
}

void install(spdlog::color_mode mode, spdlog::level::level_enum level) {
  auto sink = std::make_shared<spdlog::sinks::stderr_color_sink_st>(mode);
  auto logger = std::make_shared<spdlog::logger>("gangrun", sink);
  // "gangrun: warning: ..." reads like other command-line tools; info lines
  // go without a level word.
  logger->set_pattern("gangrun: %^%l%$: %v");
  logger->set_level(level);
  logger->flush_on(spdlog::level::trace);
  spdlog::set_default_logger(logger);
}

}  // namespace

void setup_default_logging() { install(spdlog::color_mode::never, spdlog::level::warn); }

void setup_logging(int verbosity, config::ColorMode color) {
  spdlog::color_mode mode = spdlog::color_mode::automatic;
  if (color == config::ColorMode::always) mode = spdlog::color_mode::always;
  if (color == config::ColorMode::never) mode = spdlog::color_mode::never;
  install(mode, level_for(verbosity));
}

}  // namespace gangrun::launch
