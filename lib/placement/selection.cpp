#include "placement/selection.hpp"

#include "util/strings.hpp"

#include <algorithm>

namespace gangrun::placement {
namespace {

Expected<int> parse_slot(std::string_view text, std::string_view flag, std::string_view whole) {
  std::optional<std::int64_t> value = strings::parse_int(strings::trim(text));
  if (!value || *value < 0 || *value > 1'000'000) {
    return fail_usage(std::string(flag) + " " + strings::quoted(whole) + ": " +
                      strings::quoted(text) + " is not a device id (expected 0, 1, 2, ...)");
  }
  return static_cast<int>(*value);
}

// Positions into visible, checked: each within range and named once.
Expected<std::vector<int>> checked_positions(const std::vector<int>& positions,
                                             std::size_t visible_count, std::string_view flag) {
  std::vector<int> seen;
  for (int position : positions) {
    if (static_cast<std::size_t>(position) >= visible_count) {
      return fail_usage(std::string(flag) + ": device " + std::to_string(position) +
                        " does not exist: " + std::to_string(visible_count) +
                        " device(s) are visible (0.." +
                        std::to_string(static_cast<int>(visible_count) - 1) + ")");
    }
    if (std::find(seen.begin(), seen.end(), position) != seen.end()) {
      return fail_usage(std::string(flag) + ": device " + std::to_string(position) +
                        " is named twice");
    }
    seen.push_back(position);
  }
  return seen;
}

std::vector<Candidate> pick(const std::vector<Candidate>& visible,
                            const std::vector<int>& positions) {
  std::vector<Candidate> picked;
  picked.reserve(positions.size());
  for (int position : positions) picked.push_back(visible[static_cast<std::size_t>(position)]);
  return picked;
}

}  // namespace

Expected<std::optional<NodeSlots>> slots_for_node(std::string_view spec, std::string_view flag,
                                                  const std::vector<std::string>& node_names) {
  std::optional<NodeSlots> found;
  for (const std::string& node_spec : strings::split(spec, '@')) {
    std::string_view entry = strings::trim(node_spec);
    std::size_t colon = entry.find(':');
    std::string_view host = strings::trim(entry.substr(0, colon));
    if (host.empty()) {
      return fail_usage(std::string(flag) + " " + strings::quoted(spec) +
                        ": every entry needs a host name, as in localhost:0,2");
    }
    if (std::find(node_names.begin(), node_names.end(), host) == node_names.end()) continue;
    NodeSlots slots = found.value_or(NodeSlots{});
    if (colon == std::string_view::npos) {
      slots.all_slots = true;
    } else {
      for (const std::string& slot_text : strings::split(entry.substr(colon + 1), ',')) {
        GANGRUN_TRY_ASSIGN(slot, parse_slot(slot_text, flag, spec));
        slots.slots.push_back(*slot);
      }
    }
    found = slots;
  }
  return found;
}

Expected<std::vector<Candidate>> select_devices(const std::vector<Candidate>& visible,
                                                const SelectionFlags& flags,
                                                const std::vector<std::string>& node_names) {
  if (flags.gpu_ids) {
    GANGRUN_TRY_ASSIGN(positions, checked_positions(*flags.gpu_ids, visible.size(), "--gpu_ids"));
    return pick(visible, *positions);
  }
  if (flags.num_gpus) {
    auto wanted = static_cast<std::size_t>(std::max(*flags.num_gpus, 0));
    if (wanted > visible.size()) {
      return fail_usage("--num_gpus " + std::to_string(wanted) + ": only " +
                        std::to_string(visible.size()) + " device(s) are visible on this node");
    }
    return std::vector<Candidate>(visible.begin(), visible.begin() + static_cast<long>(wanted));
  }
  std::string host_names = strings::join(node_names, " or ");
  if (flags.include) {
    GANGRUN_TRY_ASSIGN(slots, slots_for_node(*flags.include, "--include", node_names));
    if (!*slots) {
      return fail_usage("--include " + strings::quoted(*flags.include) +
                        " names no device of this node (" + host_names + ")");
    }
    if ((*slots)->all_slots) return visible;
    GANGRUN_TRY_ASSIGN(positions, checked_positions((*slots)->slots, visible.size(), "--include"));
    return pick(visible, *positions);
  }
  if (flags.exclude) {
    GANGRUN_TRY_ASSIGN(slots, slots_for_node(*flags.exclude, "--exclude", node_names));
    if (!*slots) return visible;
    if ((*slots)->all_slots) {
      return fail_usage("--exclude " + strings::quoted(*flags.exclude) +
                        " excludes every device of this node (" + host_names + ")");
    }
    GANGRUN_TRY_ASSIGN(positions, checked_positions((*slots)->slots, visible.size(), "--exclude"));
    std::vector<Candidate> kept;
    for (std::size_t i = 0; i < visible.size(); ++i) {
      if (std::find(positions->begin(), positions->end(), static_cast<int>(i)) ==
          positions->end()) {
        kept.push_back(visible[i]);
      }
    }
    return kept;
  }
  return visible;
}

}  // namespace gangrun::placement
