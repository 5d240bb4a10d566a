#include "config/deepspeed/deepspeed_values.hpp"

#include "config/option_names.hpp"
#include "config/option_values.hpp"
#include "util/strings.hpp"

#include <filesystem>
#include <system_error>

namespace gangrun::config {

Expected<LaunchStyle> parse_launch_style(std::string_view text) {
  if (text == "torchrun") return LaunchStyle::torchrun;
  if (text == "deepspeed") return LaunchStyle::deepspeed;
  return fail_usage(strings::quoted(text) + " is not one of torchrun, deepspeed");
}

Expected<int> parse_log_level(std::string_view level) {
  if (level == "debug") return 1;
  if (level == "info" || level == "warning") return 0;
  if (level == "error" || level == "critical") return -1;
  return fail_usage(strings::quoted(level) +
                    " is not one of debug, info, warning, error, critical");
}

namespace {

// The most cores a list may name: far beyond any machine, small enough that
// a typo ("0-99999999") is refused instead of allocating.
constexpr int k_max_core = 1 << 16;

Expected<int> parse_core(std::string_view text, std::string_view item) {
  std::optional<std::int64_t> core =
      strings::plain_decimal(text) ? strings::parse_int(text) : std::nullopt;
  if (!core || *core > k_max_core) {
    return fail_usage(strings::quoted(item) + " is not a core number or a range A-B of them");
  }
  return static_cast<int>(*core);
}

}  // namespace

// Combinations; the typed values are in options already (the flags gangrun
// refuses are refused rows of deepspeed_options.cpp).
Expected<void> check_deepspeed_values(const LayeredValues& values, const Options& o) {
  if (o.deepspeed.no_ssh && given_value(values, opt::hostfile)) {
    return fail_usage(value_of(values, opt::no_ssh).where + " with " +
                      value_of(values, opt::hostfile).given +
                      ": gangrun reads a hostfile only to start the hosts over ssh; start "
                      "gangrun on each host yourself with --nnodes N --node_rank R "
                      "--master_addr HOST and no hostfile, or drop --no_ssh");
  }
  if (!o.deepspeed.each_rank_log_dir) return {};
  const LayeredValue& each_rank = value_of(values, opt::enable_each_rank_log);
  for (std::string_view other : {opt::log_dir, opt::redirects, opt::tee}) {
    if (given_value(values, other)) {
      return fail_usage(each_rank.where + " and " + value_of(values, other).given +
                        " both decide where the workers' output goes; give one of them");
    }
  }
  std::error_code error;
  auto status = std::filesystem::status(*o.deepspeed.each_rank_log_dir, error);
  if (std::filesystem::exists(status) && !std::filesystem::is_directory(status)) {
    return fail_usage(each_rank.where + ": " + strings::quoted(*o.deepspeed.each_rank_log_dir) +
                      " is not a directory (the rank logs are written into it)");
  }
  return {};
}

Expected<std::vector<int>> parse_core_list(std::string_view text) {
  std::vector<int> cores;
  for (const std::string& item : strings::split(text, ',')) {
    std::size_t dash = item.find('-');
    GANGRUN_TRY_ASSIGN(first, parse_core(item.substr(0, dash), item));
    int last = *first;
    if (dash != std::string::npos) {
      GANGRUN_TRY_ASSIGN(end, parse_core(std::string_view(item).substr(dash + 1), item));
      if (*end < *first) return fail_usage(strings::quoted(item) + " ends before it starts");
      last = *end;
    }
    if (!cores.empty() && *first <= cores.back()) {
      return fail_usage(strings::quoted(item) +
                        " overlaps or comes before the cores listed before it (list them "
                        "ascending, e.g. 0,2-3)");
    }
    for (int core = *first; core <= last; ++core) cores.push_back(core);
  }
  return cores;
}

DeepspeedAdditions type_deepspeed_values(const LayeredValues& values, const Options& options) {
  DeepspeedAdditions added;
  const std::optional<int>& level_verbosity = options.deepspeed.log_level_verbosity;
  if (level_verbosity && !given_value(values, opt::verbose) && !given_value(values, opt::quiet)) {
    added.verbosity = *level_verbosity;
  }
  // deepspeed's CPU accelerator (DS_ACCELERATOR=cpu) takes --num_gpus N as N
  // ranks on the CPUs, one per made-up device; gangrun's --num_gpus selects
  // real devices, which a CPU launch has none of.
  if (options.accelerator == Accelerator::cpu && options.num_gpus && !options.nproc_per_node &&
      !options.num_processes) {
    added.num_gpus_as_workers_per_node = *options.num_gpus;
  }
  return added;
}

}  // namespace gangrun::config
