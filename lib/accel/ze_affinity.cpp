#include "accel/ze_affinity.hpp"

#include "util/strings.hpp"

#include <algorithm>
#include <cerrno>
#include <charconv>
#include <cstdlib>
#include <limits>

namespace gangrun::accel {

namespace {

struct Leaf {
  std::size_t card = 0;
  std::uint32_t tile = 0;
};

// A card without sub-devices is one leaf; the driver's bitset gives it one
// slot too (getSubDevicesCount is never 0).
std::uint32_t leaf_count(const Device& card) {
  return card.tiles > 0 ? static_cast<std::uint32_t>(card.tiles) : 1U;
}

std::vector<Leaf> leaves_of(const std::vector<Device>& cards) {
  std::vector<Leaf> leaves;
  for (std::size_t card = 0; card < cards.size(); ++card) {
    for (std::uint32_t tile = 0; tile < leaf_count(cards[card]); ++tile) {
      leaves.push_back({card, tile});
    }
  }
  return leaves;
}

// compute-runtime's StringHelpers::split: no piece after a trailing
// separator, so "0," is one entry and "0." is card 0.
std::vector<std::string_view> driver_split(std::string_view text, char separator) {
  std::vector<std::string_view> parts;
  std::size_t pos = 0;
  while (pos < text.size()) {
    std::size_t next = text.find(separator, pos);
    if (next == std::string_view::npos) {
      parts.push_back(text.substr(pos));
      break;
    }
    parts.push_back(text.substr(pos, next - pos));
    pos = next + 1;
  }
  return parts;
}

// StringHelpers::toUint32t: static_cast<uint32_t>(std::stoul(text, nullptr,
// 0)). nullopt where stoul throws (no digits, out of range).
std::optional<std::uint32_t> driver_number(std::string_view text) {
  std::string copy(text);
  char* end = nullptr;
  errno = 0;
  unsigned long value = std::strtoul(copy.c_str(), &end, 0);
  if (end == copy.c_str() || errno == ERANGE) return std::nullopt;
  return static_cast<std::uint32_t>(value);
}

std::uint64_t decimal(std::string_view text) {
  std::uint64_t value = 0;
  auto [end, error] = std::from_chars(text.data(), text.data() + text.size(), value);
  if (error != std::errc()) return std::numeric_limits<std::uint64_t>::max();
  return value;
}

using Bits = std::vector<std::vector<bool>>;

Bits empty_bits(const std::vector<Device>& cards) {
  Bits bits;
  for (const Device& card : cards) bits.emplace_back(leaf_count(card), false);
  return bits;
}

ZeVisibility collect(const Bits& bits, const std::vector<Device>& cards, ZeHierarchy hierarchy) {
  ZeVisibility visibility;
  for (std::size_t card = 0; card < cards.size(); ++card) {
    std::vector<std::uint32_t> tiles;
    for (std::uint32_t tile = 0; tile < bits[card].size(); ++tile) {
      if (!bits[card][tile]) continue;
      if (hierarchy != ZeHierarchy::composite) {
        visibility.devices.push_back({card, cards[card].tiles > 0 ? std::vector<std::uint32_t>{tile}
                                                                  : std::vector<std::uint32_t>{}});
      } else {
        tiles.push_back(tile);
      }
    }
    if (hierarchy == ZeHierarchy::composite && !tiles.empty()) {
      if (cards[card].tiles == 0) tiles.clear();
      visibility.devices.push_back({card, std::move(tiles)});
    }
  }
  return visibility;
}

bool unfiltered(std::optional<std::string_view> value) {
  return !value || value->empty() || *value == "default";
}

// "no device", "card 1 as device 0", "card 0 tile 2 as device 0 and card 1
// tile 3 as device 1", "card 1 (tiles 1 and 2) as device 0".
std::string describe(const ZeVisibility& visibility, const std::vector<Device>& cards,
                     ZeHierarchy hierarchy) {
  if (visibility.devices.empty()) return "no device";
  std::string text;
  for (std::size_t i = 0; i < visibility.devices.size(); ++i) {
    const ZeVisibleDevice& device = visibility.devices[i];
    if (i > 0) text += i + 1 == visibility.devices.size() ? " and " : ", ";
    text += "card " + std::to_string(device.card);
    bool whole = device.tiles.empty() ||
                 device.tiles.size() == static_cast<std::size_t>(cards[device.card].tiles);
    if (hierarchy != ZeHierarchy::composite && !device.tiles.empty()) {
      text += " tile " + std::to_string(device.tiles.front());
    } else if (!whole) {
      text += device.tiles.size() == 1 ? " (tile " : " (tiles ";
      for (std::size_t t = 0; t < device.tiles.size(); ++t) {
        if (t > 0) text += t + 1 == device.tiles.size() ? " and " : ", ";
        text += std::to_string(device.tiles[t]);
      }
      text += ")";
    }
    text += " as device " + std::to_string(i);
  }
  return text;
}

class Checker {
 public:
  Checker(std::string_view value, const std::vector<Device>& cards, ZeHierarchy hierarchy)
      : value_(value), shown_(emulate_ze_affinity_mask(value, cards, hierarchy)) {
    shown_text_ = describe(shown_, cards, hierarchy);
  }

  const ZeVisibility& shown() const { return shown_; }

  tl::unexpected<Error> fail(std::string_view entry, const std::string& problem,
                             const std::string& what_driver_does) const {
    std::string consequence =
        shown_.driver_fails_on
            ? "the Level Zero driver would fail on entry " +
                  strings::quoted(*shown_.driver_fails_on) +
                  " (std::stoul throws; what a child then sees was never measured)"
        : what_driver_does.empty()
            ? "the Level Zero driver would show " + shown_text_
            : "the Level Zero driver would " + what_driver_does + " and show " + shown_text_;
    return fail_usage(std::string(k_ze_affinity_mask) + "=" + std::string(value_) + ": entry " +
                      strings::quoted(entry) + " " + problem + "; " + consequence);
  }

  std::string order_note(std::string_view entry, std::string_view previous) const {
    return std::string(k_ze_affinity_mask) + "=" + std::string(value_) + ": entry " +
           strings::quoted(entry) + " comes after " + strings::quoted(previous) +
           ", but the Level Zero driver never reorders devices: a child sees " + shown_text_ +
           " (list the entries in ascending order to say so)";
  }

 private:
  std::string_view value_;
  ZeVisibility shown_;
  std::string shown_text_;
};

// The leaves (flat indices) one well-formed entry selects, or the error.
Expected<std::vector<std::size_t>> entry_leaves(const Checker& checker, std::string_view text,
                                                const std::vector<std::uint64_t>& numbers,
                                                const std::vector<Device>& cards,
                                                ZeHierarchy hierarchy) {
  std::vector<std::size_t> first_leaf;
  std::size_t total = 0;
  for (const Device& card : cards) {
    first_leaf.push_back(total);
    total += leaf_count(card);
  }
  if (hierarchy != ZeHierarchy::composite) {
    std::string mode(to_string(hierarchy));
    if (numbers.size() == 2) {
      std::string hint;
      if (numbers[0] < cards.size() &&
          numbers[1] < leaf_count(cards[static_cast<std::size_t>(numbers[0])])) {
        hint = " (card " + std::to_string(numbers[0]) + " tile " + std::to_string(numbers[1]) +
               " is device " +
               std::to_string(first_leaf[static_cast<std::size_t>(numbers[0])] + numbers[1]) + ")";
      }
      return checker.fail(text,
                          "names card.tile, but under the " + mode +
                              " hierarchy every tile is a device of its own, numbered 0.." +
                              std::to_string(total == 0 ? 0 : total - 1) + " card by card" + hint,
                          "ignore it");
    }
    if (numbers[0] >= total) {
      return checker.fail(text,
                          "is past the last of " + std::to_string(total) + " devices (one per " +
                              "tile under the " + mode + " hierarchy)",
                          "skip it");
    }
    return std::vector<std::size_t>{static_cast<std::size_t>(numbers[0])};
  }
  if (numbers[0] >= cards.size()) {
    return checker.fail(text,
                        "is past the last of " + std::to_string(cards.size()) + " cards" +
                            (cards.empty() ? "" : " (0.." + std::to_string(cards.size() - 1) + ")"),
                        "skip it");
  }
  auto card = static_cast<std::size_t>(numbers[0]);
  if (numbers.size() == 2) {
    if (numbers[1] >= leaf_count(cards[card])) {
      std::string tiles = cards[card].tiles == 0
                              ? "no tiles"
                              : std::to_string(cards[card].tiles) + " tiles (0.." +
                                    std::to_string(cards[card].tiles - 1) + ")";
      return checker.fail(text,
                          "names tile " + std::to_string(numbers[1]) + " of card " +
                              std::to_string(card) + ", which has " + tiles,
                          "skip it");
    }
    return std::vector<std::size_t>{first_leaf[card] + static_cast<std::size_t>(numbers[1])};
  }
  std::vector<std::size_t> leaves;
  for (std::uint32_t tile = 0; tile < leaf_count(cards[card]); ++tile) {
    leaves.push_back(first_leaf[card] + tile);
  }
  return leaves;
}

// The numbers of one entry, each a plain decimal, or the error.
Expected<std::vector<std::uint64_t>> entry_numbers(const Checker& checker, std::string_view text) {
  std::vector<std::string> parts = strings::split(text, '.');
  if (parts.size() > 2) {
    return checker.fail(text, "has more than two parts (card.tile is the deepest)", "ignore it");
  }
  std::vector<std::uint64_t> numbers;
  for (const std::string& raw : parts) {
    std::string_view part = strings::trim(raw);
    if (part.empty()) return checker.fail(text, "has an empty part", "read it anyway");
    if (!strings::plain_decimal(part)) {
      std::optional<std::uint32_t> read = driver_number(part);
      if (!read) return checker.fail(text, "is not a number", "ignore it");
      return checker.fail(text,
                          "is not plain decimal: the driver reads " + strings::quoted(part) +
                              " as " + std::to_string(*read) + " (0x is hex, a leading 0 octal)",
                          "");
    }
    numbers.push_back(decimal(part));
  }
  return numbers;
}

}  // namespace

std::string_view to_string(ZeHierarchy hierarchy) {
  switch (hierarchy) {
    case ZeHierarchy::composite:
      return "COMPOSITE";
    case ZeHierarchy::flat:
      return "FLAT";
    case ZeHierarchy::combined:
      return "COMBINED";
  }
  return "COMPOSITE";
}

ZeHierarchy ze_hierarchy(std::optional<std::string_view> value, ZeHierarchy driver_default) {
  if (!value) return driver_default;
  for (ZeHierarchy mode : {ZeHierarchy::composite, ZeHierarchy::flat, ZeHierarchy::combined}) {
    if (*value == to_string(mode)) return mode;
  }
  return driver_default;
}

Expected<ZeHierarchy> check_ze_hierarchy(std::optional<std::string_view> value,
                                         ZeHierarchy driver_default) {
  ZeHierarchy mode = ze_hierarchy(value, driver_default);
  if (!value || *value == to_string(mode)) return mode;
  return fail_usage(std::string(k_ze_flat_device_hierarchy) + "=" + std::string(*value) + ": " +
                    strings::quoted(*value) +
                    " is not FLAT, COMPOSITE or COMBINED (the names are "
                    "case-sensitive); the Level Zero driver would ignore it and "
                    "use its default, " +
                    std::string(to_string(driver_default)));
}

ZeVisibility emulate_ze_affinity_mask(std::optional<std::string_view> value,
                                      const std::vector<Device>& cards, ZeHierarchy hierarchy) {
  Bits bits = empty_bits(cards);
  if (unfiltered(value)) {
    for (std::vector<bool>& card : bits) card.assign(card.size(), true);
    return collect(bits, cards, hierarchy);
  }
  bool flat = hierarchy != ZeHierarchy::composite;
  std::vector<Leaf> leaves = leaves_of(cards);
  std::size_t count = flat ? leaves.size() : cards.size();
  auto fails_on = [](std::string_view entry) {
    ZeVisibility visibility;
    visibility.filtered = true;
    visibility.driver_fails_on = std::string(entry);
    return visibility;
  };
  for (std::string_view entry : driver_split(*value, ',')) {
    std::vector<std::string_view> parts = driver_split(entry, '.');
    if (parts.empty()) return fails_on(entry);
    std::optional<std::uint32_t> first = driver_number(parts[0]);
    if (!first) return fails_on(entry);
    if (*first >= count) continue;  // skipped, not an end as in CUDA
    if (flat) {
      if (parts.size() > 1) continue;  // FLAT ignores card.tile entries
      bits[leaves[*first].card][leaves[*first].tile] = true;
      continue;
    }
    std::vector<bool>& card = bits[*first];
    if (parts.size() > 2) return fails_on(entry);
    if (parts.size() == 1) {
      card.assign(card.size(), true);
      continue;
    }
    std::optional<std::uint32_t> tile = driver_number(parts[1]);
    if (!tile) return fails_on(entry);
    if (*tile < card.size()) card[*tile] = true;
  }
  ZeVisibility visibility = collect(bits, cards, hierarchy);
  visibility.filtered = true;
  return visibility;
}

Expected<ZeVisibility> check_ze_affinity_mask(std::optional<std::string_view> value,
                                              const std::vector<Device>& cards,
                                              ZeHierarchy hierarchy) {
  if (unfiltered(value)) return emulate_ze_affinity_mask(value, cards, hierarchy);
  Checker checker(*value, cards, hierarchy);
  std::vector<bool> taken;
  for (const Device& card : cards) taken.resize(taken.size() + leaf_count(card), false);
  std::optional<std::size_t> last_leaf;
  std::string last_entry;
  std::optional<std::string> order_note;
  for (const std::string& element : strings::split(*value, ',')) {
    std::string_view text = strings::trim(element);
    if (text.empty()) return checker.fail(element, "is empty", "ignore it");
    GANGRUN_TRY_ASSIGN(numbers, entry_numbers(checker, text));
    GANGRUN_TRY_ASSIGN(leaves, entry_leaves(checker, text, *numbers, cards, hierarchy));
    if (std::any_of(leaves->begin(), leaves->end(),
                    [&](std::size_t leaf) { return taken[leaf]; })) {
      return checker.fail(text, "selects a device an earlier entry already selected",
                          "count it once");
    }
    if (last_leaf && leaves->front() < *last_leaf && !order_note) {
      order_note = checker.order_note(text, last_entry);
    }
    for (std::size_t leaf : *leaves) taken[leaf] = true;
    last_leaf = leaves->back();
    last_entry = std::string(text);
  }
  ZeVisibility shown = checker.shown();
  shown.order_note = std::move(order_note);
  return shown;
}

}  // namespace gangrun::accel
