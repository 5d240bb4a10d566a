// Text -> typed option values, one validator per kind of value. Each returns
// an ErrorCode::usage error whose message says what is wrong with the text
// ("'abc' is not a positive number ..."); the caller prefixes where the text
// came from (the option as spelled, the environment variable, the config key).
#pragma once

#include "config/options.hpp"
#include "config/rendezvous_values.hpp"  // --nnodes and the --rdzv_* options' parsers
#include "util/error.hpp"

#include <optional>
#include <set>
#include <string>
#include <string_view>
#include <vector>

namespace gangrun::config {

// Any text, as given.
inline Expected<std::string> any_text(std::string_view text) { return std::string(text); }

// Text that is not empty or blank.
Expected<std::string> non_empty_text(std::string_view text);

// "N" (N >= 1), "auto", "gpu", "xpu" or "cpu".
Expected<ProcCount> parse_proc_count(std::string_view text);

// An integer >= 1.
Expected<int> parse_positive_int(std::string_view text);

// An integer >= 0.
Expected<int> parse_non_negative_int(std::string_view text);

// A limit of the store the agent hosts (--max-connections, --max-store-bytes): a
// whole number >= 1.
Expected<std::size_t> parse_store_limit(std::string_view text);
// The same where 0 means no limit (--max-connections-per-address,
// --max-store-bytes-per-address).
Expected<std::size_t> parse_store_limit_or_zero(std::string_view text);

// --max_restarts: an integer from 0 to k_max_restarts. The bound keeps the
// attempt counter (and TORCHELASTIC_RESTART_COUNT) from overflowing.
inline constexpr int k_max_restarts = 1'000'000;
Expected<int> parse_max_restarts(std::string_view text);

// Seconds from 0 to k_max_seconds (one day). Larger values, inf and nan are
// refused rather than clamped: a grace period turned into a clock offset
// overflows, and an overflowed timer fires at once ("kill now").
inline constexpr double k_max_seconds = 86400;
Expected<double> parse_non_negative_seconds(std::string_view text);

// 1..65535, or 0 meaning "no port given: pick a free one" (nullopt).
Expected<std::optional<int>> parse_port(std::string_view text);

// 1/true/yes/on and 0/false/no/off/"" (any case).
Expected<bool> parse_bool(std::string_view text);

// A -v count: an integer >= 0, or true (1) / false (0).
Expected<int> parse_count(std::string_view text);

// torchrun's -r/-t: "0".."3" for every local rank, or "LR:V,LR:V,..." per
// local rank (ranks not listed get 0).
Expected<StreamsByLocalRank> parse_streams(std::string_view text);

// "0,3": local ranks, each >= 0; "" means no filter (nullopt).
Expected<std::optional<std::set<int>>> parse_local_ranks(std::string_view text);

// "SIGTERM,int,1": names with or without SIG (any case) or numbers, in the
// order given without duplicates. Each must be a signal that can ask gangrun
// to stop the job: one whose default action ends a process and that gangrun
// does not need for something else. Refused, each with its reason: KILL and
// STOP (cannot be caught); CHLD, URG, WINCH (notifications, ignored by
// default); CONT, TSTP, TTIN, TTOU (job control: gangrun stops and resumes
// the workers on them); SEGV, BUS, FPE, ILL, TRAP, SYS, ABRT (a fault in
// gangrun itself, which must still crash it); PIPE (ignored, so that a closed
// stdout cannot cut a teardown short); 32 and 33 (reserved by the C
// library's threads). USR1 and USR2 are accepted: listed here they are
// forwarded and then stop the gang, as torchrun does; not listed they are
// only forwarded.
Expected<std::vector<int>> parse_signals(std::string_view text);

// Why signal_number cannot be in --signals_to_handle; nullopt when it can.
std::optional<std::string> unhandleable_signal_reason(int signal_number);

Expected<OutputMode> parse_output_mode(std::string_view text);
// "300", "2.5", "90s", "5m", "1h" (seconds unless a unit follows), up to a
// day; "0" or "off": nullopt (no hang watch).
Expected<std::optional<double>> parse_watch_duration(std::string_view text);
Expected<OnHang> parse_on_hang(std::string_view text);
// --preflight-timeout: a duration as parse_watch_duration reads it, at least
// one second; 0 and off are refused (a preflight always ends by itself).
Expected<double> parse_preflight_timeout(std::string_view text);
// torchrun's --numa-binding modes: node, socket, exclusive, core-complex.
Expected<NumaBinding> parse_numa_binding(std::string_view text);
// --straggler-watch: true (the flag alone) is every 5 s, a number is the
// seconds between samples (at least 0.1), false or 0 is off.
Expected<std::optional<double>> parse_straggler_watch(std::string_view text);
Expected<ColorMode> parse_color_mode(std::string_view text);

// auto|cuda|xpu|rocm|cpu|hpu|npu|neuron (any case); "gpu" is taken as auto.
Expected<Accelerator> parse_accelerator(std::string_view text);
// "0,2" (ids >= 0, in the order given) or "all" (nullopt: no selection).
Expected<std::optional<std::vector<int>>> parse_gpu_ids(std::string_view text);
// "shared" or "per-rank" (also "per_rank").
Expected<VisibleDevices> parse_visible_devices(std::string_view text);
// "index" or "uuid".
Expected<MaskFormat> parse_mask_format(std::string_view text);

}  // namespace gangrun::config
