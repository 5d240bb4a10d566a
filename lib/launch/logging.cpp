#include "launch/logging.hpp"

#include <spdlog/pattern_formatter.h>
#include <spdlog/sinks/stdout_color_sinks.h>
#include <spdlog/spdlog.h>

#include <unistd.h>

namespace gangrun::launch {
namespace {

spdlog::level::level_enum level_for(int verbosity) {
  if (verbosity < 0) return spdlog::level::err;
  if (verbosity == 0) return spdlog::level::info;
  if (verbosity == 1) return spdlog::level::debug;
  return spdlog::level::trace;
}

// "%*": the level word as command-line tools print it ("warning: "), and
// nothing for plain information.
class LevelWord : public spdlog::custom_flag_formatter {
 public:
  void format(const spdlog::details::log_msg& message, const std::tm&,
              spdlog::memory_buf_t& out) override {
    std::string_view word;
    switch (message.level) {
      case spdlog::level::trace:
        word = "trace: ";
        break;
      case spdlog::level::debug:
        word = "debug: ";
        break;
      case spdlog::level::warn:
        word = "warning: ";
        break;
      case spdlog::level::err:
      case spdlog::level::critical:
        word = "error: ";
        break;
      default:
        break;
    }
    out.append(word.data(), word.data() + word.size());
  }
  std::unique_ptr<custom_flag_formatter> clone() const override {
    return std::make_unique<LevelWord>();
  }
};

void install(spdlog::color_mode mode, spdlog::level::level_enum level) {
  auto sink = std::make_shared<spdlog::sinks::stderr_color_sink_st>(mode);
  auto logger = std::make_shared<spdlog::logger>("gangrun", sink);
  auto formatter = std::make_unique<spdlog::pattern_formatter>();
  formatter->add_flag<LevelWord>('*').set_pattern("gangrun: %^%*%$%v");
  logger->set_formatter(std::move(formatter));
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
