#include "accel/rocm_visibility.hpp"

#include "accel/cuda_visibility.hpp"
#include "accel/gpu_list_text.hpp"
#include "util/strings.hpp"

#include <algorithm>
#include <cerrno>
#include <cstdint>
#include <cstdlib>
#include <string>
#include <utility>

namespace gangrun::accel {

namespace {

constexpr std::string_view k_gpu_prefix = "GPU-";

// strtol base 0 that must consume the whole token (ROCr's rule).
std::optional<long> whole_strtol(std::string_view token) {
  std::string copy(token);
  char* end = nullptr;
  errno = 0;
  long value = std::strtol(copy.c_str(), &end, 0);
  if (copy.empty() || *end != '\0' || errno == ERANGE) return std::nullopt;
  return value;
}

// ROCr: the token is upper-cased; a prefix of 5 to 20 characters ("GPU-" and
// 16 hex digits at most) that matches exactly one GPU.
std::vector<std::size_t> rocr_uuid_matches(std::string_view token, const std::vector<Device>& all) {
  std::vector<std::size_t> matches;
  for (std::size_t i = 0; i < all.size(); ++i) {
    if (!all[i].uuid.empty() && strings::to_upper(all[i].uuid).starts_with(token)) {
      matches.push_back(i);
    }
  }
  return matches;
}

// ROCr's reading of one upper-cased, trimmed token; nullopt ends the list.
std::optional<std::size_t> rocr_token(std::string_view token, const std::vector<Device>& all) {
  if (token.empty()) return std::nullopt;
  if (token.front() == 'G') {
    if (token.size() < 5 || token.size() > 20) return std::nullopt;
    std::vector<std::size_t> matches = rocr_uuid_matches(token, all);
    if (matches.size() != 1) return std::nullopt;
    return matches.front();
  }
  std::optional<long> index = whole_strtol(token);
  if (!index || *index < 0 || static_cast<unsigned long>(*index) >= all.size()) return std::nullopt;
  return static_cast<std::size_t>(*index);
}

// HIP's reading of one token over the GPUs ROCr left; nullopt ends the list.
std::optional<std::size_t> hip_token(std::string_view token, const std::vector<Device>& after) {
  if (token.find(k_gpu_prefix) != std::string_view::npos) {
    for (std::size_t i = 0; i < after.size(); ++i) {
      if (after[i].uuid.find(token) != std::string::npos) return i;  // first match wins
    }
    return std::nullopt;
  }
  // atoi, then the text must equal std::to_string of the result.
  if (!strings::plain_decimal(token) || token.size() > 18) return std::nullopt;
  std::optional<std::int64_t> index = strings::parse_int(token);
  if (!index || static_cast<std::uint64_t>(*index) >= after.size()) return std::nullopt;
  return static_cast<std::size_t>(*index);
}

// clr's split: no entry after a trailing comma.
std::vector<std::string_view> hip_split(std::string_view value) {
  std::vector<std::string_view> tokens;
  std::size_t pos = 0;
  do {
    std::size_t end = value.find(',', pos);
    if (end == std::string_view::npos) end = value.size();
    tokens.push_back(value.substr(pos, end - pos));
    pos = end + 1;
  } while (pos < value.size());
  return tokens;
}

RocmVisibility every(std::size_t count) {
  RocmVisibility visibility;
  for (std::size_t i = 0; i < count; ++i) visibility.devices.push_back(i);
  return visibility;
}

std::vector<Device> pick(const std::vector<Device>& all, const std::vector<std::size_t>& which) {
  std::vector<Device> out;
  out.reserve(which.size());
  for (std::size_t i : which) out.push_back(all[i]);
  return out;
}

// Which variable HIP reads, if any: HIP_VISIBLE_DEVICES unless unset or
// empty, then CUDA_VISIBLE_DEVICES unless unset or empty.
std::optional<std::pair<std::string_view, std::string_view>> hip_source(const RocmVariables& v) {
  if (v.hip_visible_devices && !v.hip_visible_devices->empty()) {
    return std::pair{k_hip_visible_devices, *v.hip_visible_devices};
  }
  if (v.cuda_visible_devices && !v.cuda_visible_devices->empty()) {
    return std::pair{k_cuda_visible_devices, *v.cuda_visible_devices};
  }
  return std::nullopt;
}

std::string past_the_end(std::size_t count, std::string_view of_what) {
  return "is past the last of the " + std::to_string(count) + " GPUs " + std::string(of_what) +
         (count == 0 ? "" : " (0.." + std::to_string(count - 1) + ")");
}

tl::unexpected<Error> usage(const std::string& head, std::string_view entry,
                            const std::string& problem, const std::string& consequence) {
  return fail_usage(head + ": entry " + strings::quoted(entry) + " " + problem + "; " +
                    consequence);
}

// Strict ROCR_VISIBLE_DEVICES; the consequences name what ROCr itself would
// expose.
Expected<RocmVisibility> check_rocr(std::string_view value, const std::vector<Device>& all) {
  RocmVisibility rocr = emulate_rocr_visible_devices(value, all);
  if (strings::trim(value).empty()) return rocr;
  const std::vector<std::size_t>& shown = rocr.devices;
  std::string head = std::string(k_rocr_visible_devices) + "=" + std::string(value);
  std::vector<std::string> tokens = strings::split(value, ',');
  std::vector<std::size_t> kept;
  for (std::size_t i = 0; i < tokens.size(); ++i) {
    std::string_view text = strings::trim(tokens[i]);
    std::string consequence =
        i >= all.size()
            ? "ROCr reads only as many entries as there are GPUs (" + std::to_string(all.size()) +
                  "), so it would ignore it and show " + describe_gpu_positions(shown)
            : "ROCr would stop there and show " + describe_gpu_positions(shown);
    std::string token = strings::to_upper(text);
    std::optional<std::size_t> position;
    if (text.empty()) return usage(head, tokens[i], "is empty", consequence);
    if (token.front() == 'G') {
      if (!token.starts_with(k_gpu_prefix)) {
        return usage(head, text, "is neither an index nor a GPU- UUID", consequence);
      }
      if (token.size() < 5 || token.size() > 20) {
        return usage(head, text, "is not GPU- followed by 1 to 16 hex digits", consequence);
      }
      std::vector<std::size_t> matches = rocr_uuid_matches(token, all);
      if (matches.empty()) return usage(head, text, "matches no GPU", consequence);
      if (matches.size() > 1) {
        return usage(head, text, "is ambiguous: it matches " + describe_gpu_positions(matches),
                     consequence);
      }
      position = matches.front();
    } else {
      std::optional<long> read = whole_strtol(token);
      if (!strings::plain_decimal(text)) {
        if (read && *read < 0) return usage(head, text, "is negative", consequence);
        if (read) {
          return usage(head, text,
                       "is not plain decimal: ROCr reads it as " + std::to_string(*read) +
                           " (0x is hex, a leading 0 octal)",
                       "ROCr would show " + describe_gpu_positions(shown));
        }
        return usage(head, text, "is neither an index nor a GPU- UUID", consequence);
      }
      if (!read || static_cast<unsigned long>(*read) >= all.size()) {
        return usage(head, text, past_the_end(all.size(), "on this node"), consequence);
      }
      position = static_cast<std::size_t>(*read);
    }
    if (std::find(kept.begin(), kept.end(), *position) != kept.end()) {
      return usage(head, text, "repeats GPU " + std::to_string(*position), consequence);
    }
    kept.push_back(*position);
  }
  return rocr;
}

// Strict HIP_VISIBLE_DEVICES (or CUDA_VISIBLE_DEVICES read by HIP) over the
// GPUs ROCr left.
Expected<void> check_hip(const RocmVariables& variables, const std::vector<Device>& all,
                         const RocmVisibility& rocr, const std::vector<std::size_t>& shown) {
  std::optional<std::pair<std::string_view, std::string_view>> source = hip_source(variables);
  if (!source) return {};
  auto [name, value] = *source;
  if (value == "-1") return {};  // the documented way to hide every GPU from HIP
  std::string head;
  if (variables.rocr_visible_devices) {
    head = std::string(k_rocr_visible_devices) + "=" +
           std::string(*variables.rocr_visible_devices) + " ";
  }
  head += std::string(name) + "=" + std::string(value);
  if (name == k_cuda_visible_devices) head += " (read by HIP: HIP_VISIBLE_DEVICES is not set)";
  std::vector<Device> after = pick(all, rocr.devices);
  std::string of_what =
      variables.rocr_visible_devices ? "ROCR_VISIBLE_DEVICES leaves" : "on this node";
  std::string stops = "HIP would stop there and show " + describe_gpu_positions(shown);
  std::vector<std::size_t> kept;
  for (const std::string& token : strings::split(value, ',')) {
    if (token.empty())
      return usage(head, token, "is empty", "HIP would show " + describe_gpu_positions(shown));
    std::optional<std::size_t> index;
    if (token.find(k_gpu_prefix) != std::string::npos) {
      std::vector<std::size_t> matches;
      for (std::size_t i = 0; i < after.size(); ++i) {
        if (after[i].uuid.find(token) != std::string::npos) matches.push_back(rocr.devices[i]);
      }
      if (matches.empty()) {
        bool other_case = std::any_of(after.begin(), after.end(), [&](const Device& d) {
          return strings::to_upper(d.uuid).find(strings::to_upper(token)) != std::string::npos;
        });
        return usage(head, token,
                     other_case ? "matches no GPU (HIP compares UUIDs case-sensitively; ROCm "
                                  "writes them in upper case)"
                     : variables.rocr_visible_devices
                         ? "matches none of the GPUs ROCR_VISIBLE_DEVICES leaves"
                         : "matches no GPU",
                     stops);
      }
      if (matches.size() > 1) {
        return usage(head, token, "is ambiguous: it matches " + describe_gpu_positions(matches),
                     "HIP would take the first and show " + describe_gpu_positions(shown));
      }
      index = hip_token(token, after);
    } else {
      if (strings::trim(token) != token) {
        return usage(head, token, "has spaces around it, which HIP does not accept", stops);
      }
      if (!strings::plain_decimal(token)) {
        return usage(head, token,
                     token.front() == '-' ? "is negative" : "is not a plain decimal index", stops);
      }
      index = hip_token(token, after);
      if (!index) return usage(head, token, past_the_end(after.size(), of_what), stops);
    }
    if (std::find(kept.begin(), kept.end(), *index) != kept.end()) {
      return usage(head, token, "repeats a GPU listed before",
                   "HIP would skip it and show " + describe_gpu_positions(shown));
    }
    kept.push_back(*index);
  }
  return {};
}

// A set-but-empty variable HIP takes as unset, while GPUs remain to show.
Expected<void> check_empty_hip(const RocmVariables& variables,
                               const std::vector<std::size_t>& shown) {
  if (shown.empty()) return {};
  std::optional<std::pair<std::string_view, std::string_view>> source = hip_source(variables);
  auto empty = [](std::optional<std::string_view> v) { return v && v->empty(); };
  std::string_view name;
  if (empty(variables.hip_visible_devices)) {
    name = k_hip_visible_devices;
  } else if (!variables.hip_visible_devices && empty(variables.cuda_visible_devices)) {
    name = k_cuda_visible_devices;
  } else {
    return {};
  }
  std::string then = source ? "would read " + std::string(source->first) + "=" +
                                  std::string(source->second) + " instead and show " +
                                  describe_gpu_positions(shown)
                            : "would show " + describe_gpu_positions(shown);
  return fail_usage(std::string(name) +
                    " is set but empty; HIP treats an empty value as unset and " + then +
                    " (to hide every GPU, set ROCR_VISIBLE_DEVICES to the empty string)");
}

}  // namespace

RocmVisibility emulate_rocr_visible_devices(std::optional<std::string_view> value,
                                            const std::vector<Device>& all) {
  if (!value) return every(all.size());
  RocmVisibility visibility;
  visibility.filtered = true;
  if (value->empty()) return visibility;
  std::vector<std::string> tokens = strings::split(*value, ',');
  std::size_t looked_at = std::min(all.size(), tokens.size());
  for (std::size_t i = 0; i < looked_at; ++i) {
    std::string token = strings::to_upper(strings::trim(tokens[i]));
    std::optional<std::size_t> position = rocr_token(token, all);
    if (!position) break;
    if (std::find(visibility.devices.begin(), visibility.devices.end(), *position) !=
        visibility.devices.end()) {
      break;
    }
    visibility.devices.push_back(*position);
  }
  return visibility;
}

RocmVisibility emulate_hip_visible_devices(std::optional<std::string_view> value,
                                           const std::vector<Device>& after_rocr) {
  if (!value || value->empty()) return every(after_rocr.size());
  RocmVisibility visibility;
  visibility.filtered = true;
  for (std::string_view token : hip_split(*value)) {
    std::optional<std::size_t> index = hip_token(token, after_rocr);
    if (!index) break;
    if (std::find(visibility.devices.begin(), visibility.devices.end(), *index) ==
        visibility.devices.end()) {
      visibility.devices.push_back(*index);
    }
  }
  return visibility;
}

RocmVisibility emulate_rocm_visibility(const RocmVariables& variables,
                                       const std::vector<Device>& all) {
  RocmVisibility rocr = emulate_rocr_visible_devices(variables.rocr_visible_devices, all);
  std::optional<std::pair<std::string_view, std::string_view>> source = hip_source(variables);
  if (!source) return rocr;
  RocmVisibility hip = emulate_hip_visible_devices(source->second, pick(all, rocr.devices));
  RocmVisibility visibility;
  visibility.filtered = true;
  for (std::size_t index : hip.devices) visibility.devices.push_back(rocr.devices[index]);
  return visibility;
}

Expected<RocmVisibility> check_rocm_visibility(const RocmVariables& variables,
                                               const std::vector<Device>& all) {
  std::vector<std::size_t> shown = emulate_rocm_visibility(variables, all).devices;
  RocmVisibility rocr = emulate_rocr_visible_devices(variables.rocr_visible_devices, all);
  if (variables.rocr_visible_devices) GANGRUN_TRY(check_rocr(*variables.rocr_visible_devices, all));
  GANGRUN_TRY(check_empty_hip(variables, shown));
  GANGRUN_TRY(check_hip(variables, all, rocr, shown));
  return emulate_rocm_visibility(variables, all);
}

}  // namespace gangrun::accel
