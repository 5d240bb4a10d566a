#include "config/option_values.hpp"

#include "util/signals.hpp"
#include "util/strings.hpp"

#include <algorithm>
#include <array>
#include <cmath>
#include <csignal>
#include <limits>
#include <string>

namespace gangrun::config {

Expected<std::string> non_empty_text(std::string_view text) {
  if (strings::trim(text).empty()) return fail_usage("empty value");
  return std::string(text);
}

namespace {

// A whole-string integer in [low, high]; nullopt otherwise.
std::optional<int> int_in_range(std::string_view text, int low, int high) {
  std::optional<std::int64_t> value = strings::parse_int(strings::trim(text));
  if (!value || *value < low || *value > high) return std::nullopt;
  return static_cast<int>(*value);
}

constexpr int k_int_max = std::numeric_limits<int>::max();

std::string fmt_seconds(double seconds) { return std::to_string(static_cast<long>(seconds)); }

Expected<int> parse_one_signal(std::string_view item) {
  std::string_view word = strings::trim(item);
  if (word.empty()) return fail_usage("empty signal name in the list");
  std::optional<int> number = signals::from_text(word);
  if (!number) {
    return fail_usage(strings::quoted(word) +
                      " is not a signal name or number (e.g. SIGTERM, INT, 15)");
  }
  if (std::optional<std::string> reason = unhandleable_signal_reason(*number)) {
    return fail_usage(strings::quoted(word) + " cannot be handled: " + *reason +
                      "; list signals that ask gangrun to stop the job, such as SIGTERM, SIGINT, "
                      "SIGHUP, SIGQUIT");
  }
  return *number;
}

Expected<Streams> parse_stream_digit(std::string_view text, std::string_view whole) {
  std::optional<int> value = int_in_range(text, 0, 3);
  if (!value) {
    return fail_usage(strings::quoted(whole) +
                      " is not a stream selection (expected 0 none, 1 stdout, "
                      "2 stderr, 3 both, or LOCAL_RANK:VALUE,... such as 0:3,1:2)");
  }
  return Streams{.out = (*value & 1) != 0, .err = (*value & 2) != 0};
}

}  // namespace

Expected<ProcCount> parse_proc_count(std::string_view text) {
  std::string word = strings::to_lower(strings::trim(text));
  if (word == "auto") return ProcCount{.kind = ProcCount::Kind::automatic};
  if (word == "gpu") return ProcCount{.kind = ProcCount::Kind::gpu};
  if (word == "xpu") return ProcCount{.kind = ProcCount::Kind::xpu};
  if (word == "cpu") return ProcCount{.kind = ProcCount::Kind::cpu};
  std::optional<int> number = int_in_range(word, 1, k_int_max);
  if (!number) {
    return fail_usage(strings::quoted(text) +
                      " is not a positive number (expected N, auto, gpu, xpu or cpu)");
  }
  return ProcCount{.kind = ProcCount::Kind::number, .number = *number};
}

Expected<int> parse_positive_int(std::string_view text) {
  std::optional<int> number = int_in_range(text, 1, k_int_max);
  if (!number) return fail_usage(strings::quoted(text) + " is not a positive integer");
  return *number;
}

Expected<int> parse_non_negative_int(std::string_view text) {
  std::optional<int> number = int_in_range(text, 0, k_int_max);
  if (!number) return fail_usage(strings::quoted(text) + " is not an integer >= 0");
  return *number;
}

Expected<std::size_t> parse_store_limit(std::string_view text) {
  std::optional<std::int64_t> number = strings::parse_int(strings::trim(text));
  if (!number || *number < 1) return fail_usage(strings::quoted(text) + " is not an integer >= 1");
  return static_cast<std::size_t>(*number);
}

Expected<std::size_t> parse_store_limit_or_zero(std::string_view text) {
  std::optional<std::int64_t> number = strings::parse_int(strings::trim(text));
  if (!number || *number < 0) {
    return fail_usage(strings::quoted(text) + " is not an integer >= 0 (0: no limit)");
  }
  return static_cast<std::size_t>(*number);
}

Expected<int> parse_max_restarts(std::string_view text) {
  std::optional<int> number = int_in_range(text, 0, k_max_restarts);
  if (!number) {
    return fail_usage(strings::quoted(text) + " is not a restart count from 0 to " +
                      std::to_string(k_max_restarts));
  }
  return *number;
}

Expected<double> parse_non_negative_seconds(std::string_view text) {
  std::optional<double> value = strings::parse_double(strings::trim(text));
  // !(x <= max) also refuses nan.
  if (!value || !std::isfinite(*value) || *value < 0 || !(*value <= k_max_seconds)) {
    return fail_usage(strings::quoted(text) + " is not a number of seconds from 0 to " +
                      fmt_seconds(k_max_seconds) + " (one day)");
  }
  return *value;
}

Expected<std::optional<int>> parse_port(std::string_view text) {
  std::optional<int> port = int_in_range(text, 0, 65535);
  if (!port) {
    return fail_usage(strings::quoted(text) +
                      " is not a port number (expected 1..65535, or 0 for a free port)");
  }
  if (*port == 0) return std::optional<int>();
  return std::optional<int>(*port);
}

Expected<bool> parse_bool(std::string_view text) {
  std::string word = strings::to_lower(strings::trim(text));
  if (word == "1" || word == "true" || word == "yes" || word == "on") return true;
  if (word.empty() || word == "0" || word == "false" || word == "no" || word == "off") {
    return false;
  }
  return fail_usage(strings::quoted(text) +
                    " is not a boolean (expected 1/true/yes/on or 0/false/no/off)");
}

Expected<int> parse_count(std::string_view text) {
  if (std::optional<int> count = int_in_range(text, 0, k_int_max)) return *count;
  std::string word = strings::to_lower(strings::trim(text));
  if (word == "true" || word == "yes" || word == "on") return 1;
  if (word == "false" || word == "no" || word == "off") return 0;
  return fail_usage(strings::quoted(text) +
                    " is not a count (expected an integer >= 0, true or false)");
}

Expected<StreamsByLocalRank> parse_streams(std::string_view text) {
  StreamsByLocalRank result;
  if (text.find(':') == std::string_view::npos) {
    GANGRUN_TRY_ASSIGN(all, parse_stream_digit(text, text));
    result.all = *all;
    return result;
  }
  for (const std::string& item : strings::split(text, ',')) {
    std::size_t colon = item.find(':');
    std::optional<int> local_rank =
        colon == std::string::npos
            ? std::nullopt
            : int_in_range(std::string_view(item).substr(0, colon), 0, k_int_max);
    if (!local_rank) {
      return fail_usage(strings::quoted(item) + " in " + strings::quoted(text) +
                        " is not LOCAL_RANK:VALUE (e.g. 0:3,1:2; LOCAL_RANK >= 0, VALUE 0..3)");
    }
    GANGRUN_TRY_ASSIGN(streams, parse_stream_digit(std::string_view(item).substr(colon + 1), text));
    if (!result.per_local_rank.emplace(*local_rank, *streams).second) {
      return fail_usage("local rank " + std::to_string(*local_rank) + " appears twice in " +
                        strings::quoted(text));
    }
  }
  return result;
}

Expected<std::optional<std::set<int>>> parse_local_ranks(std::string_view text) {
  if (strings::trim(text).empty()) return std::optional<std::set<int>>();
  std::set<int> ranks;
  for (const std::string& item : strings::split(text, ',')) {
    std::optional<int> rank = int_in_range(item, 0, k_int_max);
    if (!rank) {
      return fail_usage(
          strings::quoted(item) + " in " + strings::quoted(text) +
          " is not a local rank (expected integers >= 0 separated by commas, e.g. 0,3)");
    }
    ranks.insert(*rank);
  }
  return std::optional<std::set<int>>(std::move(ranks));
}

std::optional<std::string> unhandleable_signal_reason(int signal_number) {
  switch (signal_number) {
    case SIGKILL:
    case SIGSTOP:
      return "SIGKILL and SIGSTOP cannot be caught";
    case SIGCHLD:
    case SIGURG:
    case SIGWINCH:
      return signals::name(signal_number) +
             " reports an event and is ignored by default; it does not ask a process to stop";
    case SIGCONT:
    case SIGTSTP:
    case SIGTTIN:
    case SIGTTOU:
      return signals::name(signal_number) +
             " is job control: gangrun stops or resumes the workers with it";
    case SIGSEGV:
    case SIGBUS:
    case SIGFPE:
    case SIGILL:
    case SIGTRAP:
    case SIGSYS:
    case SIGABRT:
      return signals::name(signal_number) +
             " reports a fault in gangrun itself, which must still crash it";
    case SIGPIPE:
      return "gangrun ignores SIGPIPE, so that a closed stdout cannot cut a teardown short";
    default:
      break;
  }
  if (signal_number >= 32 && signal_number < SIGRTMIN) {
    return "signal " + std::to_string(signal_number) + " is reserved by the C library's threads";
  }
  return std::nullopt;
}

Expected<std::vector<int>> parse_signals(std::string_view text) {
  if (strings::trim(text).empty()) {
    return fail_usage("empty signal list (expected names or numbers such as SIGTERM,SIGINT)");
  }
  std::vector<int> numbers;
  for (const std::string& item : strings::split(text, ',')) {
    GANGRUN_TRY_ASSIGN(number, parse_one_signal(item));
    if (std::find(numbers.begin(), numbers.end(), *number) == numbers.end()) {
      numbers.push_back(*number);
    }
  }
  return numbers;
}

Expected<OutputMode> parse_output_mode(std::string_view text) {
  std::string word = strings::to_lower(strings::trim(text));
  if (word == "auto") return OutputMode::automatic;
  if (word == "prefix") return OutputMode::prefix;
  if (word == "inherit") return OutputMode::inherit;
  return fail_usage(strings::quoted(text) +
                    " is not an output mode (expected auto, prefix or inherit)");
}

Expected<std::optional<double>> parse_watch_duration(std::string_view text) {
  std::string word = strings::to_lower(strings::trim(text));
  if (word == "off") return std::optional<double>();
  double unit = 1;
  if (!word.empty() && (word.back() == 's' || word.back() == 'm' || word.back() == 'h')) {
    unit = word.back() == 'h' ? 3600 : word.back() == 'm' ? 60 : 1;
    word.pop_back();
  }
  std::optional<double> value = strings::parse_double(word);
  if (!value || !std::isfinite(*value) || *value < 0 || !(*value * unit <= k_max_seconds)) {
    return fail_usage(strings::quoted(text) +
                      " is not a duration (seconds, or a number with s, m or h: 90, 90s, 5m) from "
                      "0 to one day; 0 or off turns it off");
  }
  if (*value == 0) return std::optional<double>();
  return std::optional<double>(*value * unit);
}

Expected<double> parse_preflight_timeout(std::string_view text) {
  Expected<std::optional<double>> duration = parse_watch_duration(text);
  if (!duration || !*duration || **duration < 1) {
    return fail_usage(strings::quoted(text) +
                      " is not a preflight timeout: a duration of at least 1 s (30, 90s, 5m)");
  }
  return **duration;
}

Expected<std::optional<double>> parse_straggler_watch(std::string_view text) {
  constexpr double k_default_interval = 5.0;
  constexpr double k_least_interval = 0.1;
  std::string word = strings::to_lower(strings::trim(text));
  if (word == "true" || word == "yes" || word == "on") return std::optional(k_default_interval);
  if (word == "false" || word == "no" || word == "off") return std::optional<double>();
  std::optional<double> value = strings::parse_double(word);
  if (value && *value == 0) return std::optional<double>();
  if (!value || !std::isfinite(*value) || *value < k_least_interval || *value > k_max_seconds) {
    return fail_usage(strings::quoted(text) +
                      " is not the seconds between samples (at least 0.1; the flag alone is "
                      "every 5 s, false or 0 is off)");
  }
  return std::optional(*value);
}

Expected<OnHang> parse_on_hang(std::string_view text) {
  std::string word = strings::to_lower(strings::trim(text));
  if (word == "report") return OnHang::report;
  if (word == "stop") return OnHang::stop;
  if (word == "restart") return OnHang::restart;
  return fail_usage(strings::quoted(text) +
                    " is not what to do on a hang (expected report, stop or restart)");
}

Expected<NumaBinding> parse_numa_binding(std::string_view text) {
  std::string_view word = strings::trim(text);
  if (word == "node") return NumaBinding::node;
  if (word == "socket") return NumaBinding::socket;
  if (word == "exclusive") return NumaBinding::exclusive;
  if (word == "core-complex") return NumaBinding::core_complex;
  return fail_usage(strings::quoted(text) +
                    " is not a binding mode (expected node, socket, exclusive or core-complex)");
}

Expected<Accelerator> parse_accelerator(std::string_view text) {
  std::string word = strings::to_lower(strings::trim(text));
  for (Accelerator kind :
       {Accelerator::automatic, Accelerator::cuda, Accelerator::xpu, Accelerator::rocm,
        Accelerator::cpu, Accelerator::hpu, Accelerator::npu, Accelerator::neuron}) {
    if (word == to_string(kind)) return kind;
  }
  if (word == "gpu") return Accelerator::automatic;  // accelerate's and deepspeed's word
  return fail_usage(
      strings::quoted(text) +
      " is not an accelerator (expected auto, cuda, xpu, rocm, cpu, hpu, npu or neuron)");
}

Expected<std::optional<std::vector<int>>> parse_gpu_ids(std::string_view text) {
  std::string word = strings::to_lower(strings::trim(text));
  if (word == "all") return std::optional<std::vector<int>>();
  if (word.empty()) return fail_usage("empty device list (expected ids such as 0,2, or all)");
  std::vector<int> ids;
  for (const std::string& item : strings::split(text, ',')) {
    std::optional<int> id = int_in_range(item, 0, k_int_max);
    if (!id) {
      return fail_usage(
          strings::quoted(item) + " in " + strings::quoted(text) +
          " is not a device id (expected integers >= 0 separated by commas, e.g. 0,2, "
          "or all)");
    }
    ids.push_back(*id);
  }
  return std::optional<std::vector<int>>(std::move(ids));
}

Expected<VisibleDevices> parse_visible_devices(std::string_view text) {
  std::string word = strings::to_lower(strings::trim(text));
  if (word == "shared") return VisibleDevices::shared;
  if (word == "per-rank" || word == "per_rank") return VisibleDevices::per_rank;
  return fail_usage(strings::quoted(text) +
                    " is not a visibility mode (expected shared or per-rank)");
}

Expected<MaskFormat> parse_mask_format(std::string_view text) {
  std::string word = strings::to_lower(strings::trim(text));
  if (word == "index") return MaskFormat::index;
  if (word == "uuid") return MaskFormat::uuid;
  return fail_usage(strings::quoted(text) + " is not a mask format (expected index or uuid)");
}

Expected<ColorMode> parse_color_mode(std::string_view text) {
  std::string word = strings::to_lower(strings::trim(text));
  if (word == "auto") return ColorMode::automatic;
  if (word == "always") return ColorMode::always;
  if (word == "never") return ColorMode::never;
  return fail_usage(strings::quoted(text) +
                    " is not a color mode (expected auto, always or never)");
}

}  // namespace gangrun::config
