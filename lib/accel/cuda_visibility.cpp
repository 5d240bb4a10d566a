#include "accel/cuda_visibility.hpp"

#include "accel/gpu_list_text.hpp"
#include "util/strings.hpp"

#include <algorithm>
#include <cctype>
#include <limits>

namespace gangrun::accel {

namespace {

constexpr std::string_view k_gpu_prefix = "GPU-";
constexpr std::string_view k_mig_prefix = "MIG-";

bool is_digit(char c) { return std::isdigit(static_cast<unsigned char>(c)) != 0; }

bool all_digits(std::string_view text) {
  return !text.empty() && std::all_of(text.begin(), text.end(), is_digit);
}

// PyTorch's _strtoul, checked against a real driver (pytorch/pytorch#84879): an
// optional sign, then the leading decimal digits; the rest is ignored. nullopt
// when there are no digits or the number is negative ("-0" is 0). Saturates,
// since anything that large is past the end anyway.
std::optional<std::uint64_t> strtoul_like(std::string_view text) {
  bool negative = false;
  if (!text.empty() && (text.front() == '+' || text.front() == '-')) {
    negative = text.front() == '-';
    text.remove_prefix(1);
  }
  std::uint64_t value = 0;
  std::size_t digits = 0;
  constexpr std::uint64_t k_max = std::numeric_limits<std::uint64_t>::max();
  for (char c : text) {
    if (!is_digit(c)) break;
    auto digit = static_cast<std::uint64_t>(c - '0');
    value = value > (k_max - digit) / 10 ? k_max : value * 10 + digit;
    ++digits;
  }
  if (digits == 0 || (negative && value != 0)) return std::nullopt;
  return value;
}

CudaEntryForm form_of(std::string_view value) {
  if (value.starts_with(k_gpu_prefix)) return CudaEntryForm::gpu_uuids;
  if (value.starts_with(k_mig_prefix)) return CudaEntryForm::mig_uuids;
  return CudaEntryForm::indices;
}

std::string_view prefix_of(CudaEntryForm form) {
  return form == CudaEntryForm::mig_uuids ? k_mig_prefix : k_gpu_prefix;
}

// One parsed entry with the text that produced it.
struct Parsed {
  std::string text;
  std::uint64_t index = 0;  // form == indices
};

std::vector<Parsed> parse_entries(std::string_view value, CudaEntryForm form) {
  std::vector<Parsed> out;
  for (const std::string& element : strings::split(value, ',')) {
    if (form == CudaEntryForm::indices) {
      std::string_view text = strings::trim(element);
      std::optional<std::uint64_t> index = strtoul_like(text);
      if (index &&
          std::any_of(out.begin(), out.end(), [&](const Parsed& p) { return p.index == *index; })) {
        return {};
      }
      if (!index) break;
      out.push_back(Parsed{std::string(text), *index});
    } else {
      if (std::any_of(out.begin(), out.end(), [&](const Parsed& p) { return p.text == element; })) {
        return {};
      }
      if (!std::string_view(element).starts_with(prefix_of(form))) break;
      out.push_back(Parsed{element, 0});
    }
  }
  return out;
}

// Every device whose UUID starts with the candidate.
std::vector<std::size_t> uuid_matches(std::string_view candidate, const std::vector<Device>& all) {
  std::vector<std::size_t> matches;
  for (std::size_t i = 0; i < all.size(); ++i) {
    if (!candidate.empty() && std::string_view(all[i].uuid).starts_with(candidate)) {
      matches.push_back(i);
    }
  }
  return matches;
}

CudaVisibility every_device(const std::vector<Device>& all) {
  CudaVisibility visibility;
  for (std::size_t i = 0; i < all.size(); ++i) visibility.devices.push_back({i, ""});
  return visibility;
}

std::string range_of(std::size_t count) {
  if (count == 0) return "names a GPU, but there is none";
  return "is past the last of " + std::to_string(count) + " GPU" + (count == 1 ? "" : "s") +
         " (0.." + std::to_string(count - 1) + ")";
}

// Builds the strict-mode errors for one value; what the runtime would show
// is computed once, by the emulation.
class Checker {
 public:
  Checker(std::string_view value, const std::vector<Device>& all)
      : value_(value), shown_(emulate_cuda_visible_devices(value, all).positions()) {}

  tl::unexpected<Error> fail(std::string_view entry, const std::string& problem,
                             const std::string& consequence) const {
    return fail_usage(std::string(k_cuda_visible_devices) + "=" + std::string(value_) + ": entry " +
                      strings::quoted(entry) + " " + problem + "; " + consequence);
  }

  // For an entry that ends the list: kept are the entries before it.
  std::string stops(const std::vector<std::size_t>& kept) const {
    if (kept == shown_)
      return "the CUDA runtime would stop there and show " + describe_gpu_positions(shown_);
    // Only PyTorch's parse-level rule makes them differ: an entry repeated
    // further on empties the list before the runtime gets to stop.
    return "the CUDA runtime would show " + describe_gpu_positions(shown_) +
           " (an entry repeated later in the list empties it, as PyTorch emulates it)";
  }
  std::string shows() const { return "the CUDA runtime would show " + shown_text(); }
  std::string shown_text() const { return describe_gpu_positions(shown_); }
  static std::string empties() {
    return "the CUDA runtime would then show no GPU at all (PyTorch's emulation; drivers were "
           "not measured)";
  }

 private:
  std::string_view value_;
  std::vector<std::size_t> shown_;
};

Expected<CudaVisibility> check_indices(std::string_view value, const std::vector<Device>& all) {
  Checker checker(value, all);
  std::vector<std::size_t> kept;
  for (const std::string& element : strings::split(value, ',')) {
    std::string_view text = strings::trim(element);
    if (text.empty()) return checker.fail(text, "is empty", checker.stops(kept));
    if (!all_digits(text)) {
      std::optional<std::uint64_t> read = strtoul_like(text);
      if (!read && text.size() > 1 && text.front() == '-' && is_digit(text[1])) {
        return checker.fail(text, "is negative", checker.stops(kept));
      }
      if (read) {
        return checker.fail(text, "is not a plain index",
                            "the CUDA runtime would read it as " + std::to_string(*read) +
                                " and show " + checker.shown_text());
      }
      if (text.starts_with(k_gpu_prefix) || text.starts_with(k_mig_prefix)) {
        return checker.fail(element,
                            text.size() != element.size() ? "has spaces around a UUID"
                                                          : "is a UUID in a list of indices",
                            checker.stops(kept));
      }
      return checker.fail(text, "is neither an index nor a GPU-/MIG- UUID", checker.stops(kept));
    }
    std::uint64_t index = *strtoul_like(text);
    if (text.size() > 1 && text.front() == '0') {
      return checker.fail(text, "has a leading zero (write " + std::to_string(index) + ")",
                          "the CUDA runtime would read it as decimal " + std::to_string(index));
    }
    if (index >= all.size()) return checker.fail(text, range_of(all.size()), checker.stops(kept));
    auto position = static_cast<std::size_t>(index);
    if (std::find(kept.begin(), kept.end(), position) != kept.end()) {
      return checker.fail(text, "repeats GPU " + std::to_string(position), Checker::empties());
    }
    kept.push_back(position);
  }
  return emulate_cuda_visible_devices(value, all);
}

std::string describe_matches(const std::vector<std::size_t>& matches,
                             const std::vector<Device>& all) {
  std::string text;
  for (std::size_t i = 0; i < matches.size(); ++i) {
    if (i > 0) text += i + 1 == matches.size() ? " and " : ", ";
    text += std::to_string(matches[i]) + " (" + all[matches[i]].uuid + ")";
  }
  return text;
}

Expected<CudaVisibility> check_uuids(std::string_view value, CudaEntryForm form,
                                     const std::vector<Device>& all) {
  Checker checker(value, all);
  std::string_view prefix = prefix_of(form);
  std::string_view other = form == CudaEntryForm::gpu_uuids ? k_mig_prefix : k_gpu_prefix;
  std::vector<std::size_t> kept;
  for (const std::string& element : strings::split(value, ',')) {
    std::string_view text = strings::trim(element);
    if (text.empty()) return checker.fail(element, "is empty", checker.stops(kept));
    if (!text.starts_with(prefix)) {
      std::string problem =
          text.starts_with(other)
              ? "mixes " + std::string(other) + " with " + std::string(prefix) + " UUIDs"
              : "is not a " + std::string(prefix) + " UUID in a list of them";
      return checker.fail(element, problem, checker.stops(kept));
    }
    if (text.size() != element.size()) {
      return checker.fail(element, "has spaces around a UUID",
                          "how the CUDA runtime reads that was never measured (PyTorch's "
                          "emulation would show " +
                              checker.shown_text() + ")");
    }
    std::vector<std::size_t> matches = uuid_matches(text, all);
    if (matches.empty()) {
      std::string lower = strings::to_lower(text);
      bool other_case = std::any_of(all.begin(), all.end(), [&](const Device& device) {
        return strings::to_lower(device.uuid).starts_with(lower);
      });
      return checker.fail(
          text,
          other_case ? "matches no GPU (UUIDs are written in lower-case hex)" : "matches no GPU",
          checker.stops(kept));
    }
    if (matches.size() > 1) {
      return checker.fail(text, "is ambiguous: it matches GPUs " + describe_matches(matches, all),
                          checker.stops(kept));
    }
    std::size_t position = matches.front();
    if (std::find(kept.begin(), kept.end(), position) != kept.end()) {
      return checker.fail(text, "names GPU " + std::to_string(position) + " again",
                          Checker::empties());
    }
    if (form == CudaEntryForm::mig_uuids && !kept.empty()) {
      return checker.fail(text, "is a second MIG device, but a CUDA process enumerates only one",
                          checker.shows());
    }
    kept.push_back(position);
  }
  return emulate_cuda_visible_devices(value, all);
}

}  // namespace

std::vector<std::size_t> CudaVisibility::positions() const {
  std::vector<std::size_t> out;
  out.reserve(devices.size());
  for (const CudaVisibleDevice& device : devices) out.push_back(device.position);
  return out;
}

CudaEntries parse_cuda_visible_devices(std::string_view value) {
  CudaEntries entries;
  entries.form = form_of(value);
  for (Parsed& parsed : parse_entries(value, entries.form)) {
    if (entries.form == CudaEntryForm::indices) {
      entries.indices.push_back(parsed.index);
    } else {
      entries.uuids.push_back(std::move(parsed.text));
    }
  }
  return entries;
}

CudaVisibility emulate_cuda_visible_devices(std::optional<std::string_view> value,
                                            const std::vector<Device>& all) {
  if (!value) return every_device(all);
  CudaVisibility visibility;
  visibility.set = true;
  CudaEntryForm form = form_of(*value);
  std::vector<Parsed> parsed = parse_entries(*value, form);
  if (form == CudaEntryForm::indices) {
    // PyTorch trims the parsed list at the first index past the end, after
    // the duplicate check; the driver is documented to stop there.
    for (Parsed& entry : parsed) {
      if (entry.index >= all.size()) break;
      visibility.devices.push_back({static_cast<std::size_t>(entry.index), std::move(entry.text)});
    }
    return visibility;
  }
  for (Parsed& entry : parsed) {
    std::vector<std::size_t> matches = uuid_matches(entry.text, all);
    if (matches.size() != 1) break;  // unknown or ambiguous: the list ends
    bool repeated =
        std::any_of(visibility.devices.begin(), visibility.devices.end(),
                    [&](const CudaVisibleDevice& d) { return d.position == matches[0]; });
    if (repeated) return CudaVisibility{true, {}};
    visibility.devices.push_back({matches.front(), std::move(entry.text)});
  }
  // The MIG guide: a process enumerates one MIG device however many are
  // listed; measured with two MIG UUIDs giving device_count() == 1.
  if (form == CudaEntryForm::mig_uuids && visibility.devices.size() > 1) {
    visibility.devices.resize(1);
  }
  return visibility;
}

Expected<CudaVisibility> check_cuda_visible_devices(std::optional<std::string_view> value,
                                                    const std::vector<Device>& all) {
  if (!value) return every_device(all);
  std::string_view trimmed = strings::trim(*value);
  if (trimmed.empty() || trimmed == "-1") return CudaVisibility{true, {}};
  CudaEntryForm form = form_of(*value);
  if (form == CudaEntryForm::indices) return check_indices(*value, all);
  return check_uuids(*value, form, all);
}

}  // namespace gangrun::accel
