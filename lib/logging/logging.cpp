#include "logging/logging.hpp"

#include <spdlog/details/os.h>
#include <spdlog/pattern_formatter.h>
#include <spdlog/sinks/base_sink.h>
#include <spdlog/sinks/stdout_color_sinks.h>
#include <spdlog/spdlog.h>

#include <unistd.h>

namespace gangrun::logging {
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

std::unique_ptr<spdlog::formatter> make_formatter() {
  auto formatter = std::make_unique<spdlog::pattern_formatter>();
  formatter->add_flag<LevelWord>('*').set_pattern("gangrun: %^%*%$%v");
  return formatter;
}

// Whether messages written to stderr get colors (decided in install()).
bool g_colored = false;

// The console's end of gangrun's messages, colored as spdlog's stderr sink
// would color them.
class ConsoleSink : public spdlog::sinks::base_sink<spdlog::details::null_mutex> {
 public:
  explicit ConsoleSink(logmux::Console& console) : console_(console) {}

 protected:
  void sink_it_(const spdlog::details::log_msg& message) override {
    spdlog::memory_buf_t formatted;
    formatter_->format(message, formatted);
    std::string_view text(formatted.data(), formatted.size());
    const char* color = message.level >= spdlog::level::err    ? "\033[31m\033[1m"
                        : message.level == spdlog::level::warn ? "\033[33m\033[1m"
                                                               : nullptr;
    if (!g_colored || color == nullptr || message.color_range_end <= message.color_range_start) {
      console_.append_message(text);
      return;
    }
    std::string colored(text.substr(0, message.color_range_start));
    colored += color;
    colored +=
        text.substr(message.color_range_start, message.color_range_end - message.color_range_start);
    colored += "\033[m";
    colored += text.substr(message.color_range_end);
    console_.append_message(colored);
  }
  void flush_() override {}

 private:
  logmux::Console& console_;
};

void install(spdlog::color_mode mode, spdlog::level::level_enum level) {
  auto sink = std::make_shared<spdlog::sinks::stderr_color_sink_st>(mode);
  g_colored = mode == spdlog::color_mode::always ||
              (mode == spdlog::color_mode::automatic && spdlog::details::os::in_terminal(stderr) &&
               spdlog::details::os::is_color_terminal());
  auto logger = std::make_shared<spdlog::logger>("gangrun", sink);
  logger->set_formatter(make_formatter());
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

void route_logging_through(logmux::Console* console) {
  static std::vector<spdlog::sink_ptr> direct;  // the stderr sink install() made
  auto logger = spdlog::default_logger();
  if (console == nullptr) {
    if (!direct.empty()) logger->sinks() = std::exchange(direct, {});
    return;
  }
  if (direct.empty()) direct = logger->sinks();
  auto sink = std::make_shared<ConsoleSink>(*console);
  sink->set_formatter(make_formatter());
  logger->sinks() = {sink};
}

}  // namespace gangrun::logging
