#include "accel/vendor_lists.hpp"

#include "util/strings.hpp"

#include <algorithm>
#include <cctype>
#include <cstdint>
#include <iterator>
#include <map>
#include <variant>

namespace gangrun::accel {
namespace {

// The words each vendor's messages use.
struct VendorText {
  std::string_view variable;
  std::string_view accelerator;  // the --accelerator value
  std::string_view devices;      // "Gaudi modules"
  std::string_view device;       // "module"
  std::string_view ids;          // "module IDs"
  std::string_view an_id;        // "a module ID"
  std::string_view hint;         // how to find or write the IDs
};

const VendorText& text_of(VendorList list) {
  static const VendorText habana{k_habana_visible_modules,
                                 "hpu",
                                 "Gaudi modules",
                                 "module",
                                 "module IDs",
                                 "a module ID",
                                 "hl-smi -Q index,module_id lists them"};
  static const VendorText ascend{k_ascend_rt_visible_devices,
                                 "npu",
                                 "Ascend NPUs",
                                 "NPU",
                                 "NPU IDs",
                                 "an NPU ID",
                                 "logical IDs from 0, in ascending order"};
  static const VendorText neuron{k_neuron_rt_visible_cores,
                                 "neuron",
                                 "NeuronCores",
                                 "NeuronCore",
                                 "NeuronCore indices",
                                 "a NeuronCore index",
                                 "single indices or ranges such as 0-3"};
  switch (list) {
    case VendorList::habana:
      return habana;
    case VendorList::ascend:
      return ascend;
    case VendorList::neuron:
      break;
  }
  return neuron;
}

constexpr std::string_view k_example = "0,1,2,3";

std::string example_of(const VendorText& text) {
  return "e.g. " + std::string(text.variable) + "=" + std::string(k_example);
}

struct Problem {
  std::string what;
  std::string fix;
};

bool is_space(char c) { return std::isspace(static_cast<unsigned char>(c)) != 0; }
bool is_digit(char c) { return std::isdigit(static_cast<unsigned char>(c)) != 0; }

bool all_digits(std::string_view text) {
  return !text.empty() && std::all_of(text.begin(), text.end(), is_digit);
}

std::string without_spaces(std::string_view text) {
  std::string out;
  std::copy_if(text.begin(), text.end(), std::back_inserter(out),
               [](char c) { return !is_space(c); });
  return out;
}

enum class NumberFault { none, empty, negative, not_decimal, leading_zero, too_large };

NumberFault number_fault(std::string_view number) {
  if (number.empty()) return NumberFault::empty;
  if (number.front() == '-' && all_digits(number.substr(1))) return NumberFault::negative;
  if (!all_digits(number)) return NumberFault::not_decimal;
  if (number.size() > 1 && number.front() == '0') return NumberFault::leading_zero;
  std::optional<std::int64_t> value = strings::parse_int(number);
  if (!value || *value > k_max_vendor_id) return NumberFault::too_large;
  return NumberFault::none;
}

// Only for numbers number_fault passed or found a leading zero in.
int number_value(std::string_view number) {
  return static_cast<int>(strings::parse_int(number).value_or(0));
}

std::string without_leading_zeros(std::string_view number) {
  std::size_t first = number.find_first_not_of('0');
  return first == std::string_view::npos ? "0" : std::string(number.substr(first));
}

std::string too_large(const VendorText& text) {
  return "is larger than " + std::to_string(k_max_vendor_id) + ", more " +
         std::string(text.devices) + " than any node has";
}

Problem number_problem(NumberFault fault, std::string_view number, const VendorText& text) {
  std::string write_each =
      "write each " + std::string(text.device) + " as a plain decimal number, " + example_of(text);
  switch (fault) {
    case NumberFault::empty:
      return {"is empty", "remove the extra comma"};
    case NumberFault::negative:
      return {"is negative", std::string(text.ids) + " start at 0; " + write_each};
    case NumberFault::not_decimal:
      return {"is not " + std::string(text.an_id) + " (a plain decimal number)", write_each};
    case NumberFault::leading_zero:
      return {"has a leading zero",
              "write it as " + strings::quoted(without_leading_zeros(number))};
    case NumberFault::too_large:
    case NumberFault::none:
      break;
  }
  return {too_large(text),
          "list the " + std::string(text.devices) + " to use, " + example_of(text)};
}

// The Ascend runtime stops reading the value at the first space and the list
// at the first invalid ID: what it would use.
std::string ascend_reading(std::string_view value) {
  const auto* space = std::find_if(value.begin(), value.end(), is_space);
  std::string_view read = value.substr(0, static_cast<std::size_t>(space - value.begin()));
  std::vector<std::string> ids;
  for (const std::string& entry : strings::split(read, ',')) {
    if (!all_digits(entry)) break;
    ids.push_back(entry);
  }
  return ids.empty() ? "no NPU" : "only " + strings::quoted(strings::join(ids, ","));
}

struct Range {
  int first = 0;
  int last = 0;
};

// One NEURON_RT_VISIBLE_CORES entry: an index, or "A-B" with A <= B.
std::variant<Range, Problem> neuron_entry(std::string_view entry, const VendorText& text) {
  std::size_t dash = entry.find('-');
  if (dash == std::string_view::npos || dash == 0) {
    NumberFault fault = number_fault(entry);
    if (fault != NumberFault::none) return number_problem(fault, entry, text);
    return Range{number_value(entry), number_value(entry)};
  }
  std::string_view first = entry.substr(0, dash);
  std::string_view last = entry.substr(dash + 1);
  NumberFault first_fault = number_fault(first);
  NumberFault last_fault = number_fault(last);
  auto either = [&](NumberFault fault) { return first_fault == fault || last_fault == fault; };
  if (either(NumberFault::empty) || either(NumberFault::negative) ||
      either(NumberFault::not_decimal)) {
    return Problem{"is neither a NeuronCore index nor a range A-B of them",
                   "write a core as a plain decimal number and a range as two, e.g. " +
                       std::string(text.variable) + "=0-3"};
  }
  if (either(NumberFault::too_large)) return number_problem(NumberFault::too_large, entry, text);
  if (either(NumberFault::leading_zero)) {
    return Problem{"has a leading zero",
                   "write it as " + strings::quoted(without_leading_zeros(first) + "-" +
                                                    without_leading_zeros(last))};
  }
  Range range{number_value(first), number_value(last)};
  if (range.first > range.last) {
    return Problem{"runs backwards",
                   "write it as " + strings::quoted(std::to_string(range.last) + "-" +
                                                    std::to_string(range.first))};
  }
  return range;
}

std::variant<Range, Problem> plain_entry(std::string_view entry, const VendorText& text) {
  NumberFault fault = number_fault(entry);
  if (fault != NumberFault::none) return number_problem(fault, entry, text);
  return Range{number_value(entry), number_value(entry)};
}

Problem space_problem(VendorList list, std::string_view value, const VendorText& text) {
  std::string fix =
      "remove the spaces: " + std::string(text.variable) + "=" + without_spaces(value);
  if (list == VendorList::ascend) {
    return {"contains a space, where the Ascend runtime stops reading: the runtime would read " +
                ascend_reading(value),
            fix};
  }
  return {"contains a space", fix};
}

// One entry of value, or what is wrong with it.
std::variant<Range, Problem> read_entry(VendorList list, std::string_view value,
                                        std::string_view entry, const VendorText& text) {
  if (std::any_of(entry.begin(), entry.end(), is_space)) return space_problem(list, value, text);
  std::variant<Range, Problem> read =
      list == VendorList::neuron ? neuron_entry(entry, text) : plain_entry(entry, text);
  Problem* problem = std::get_if<Problem>(&read);
  if (problem && list == VendorList::ascend && !all_digits(entry)) {
    problem->what += ", and the Ascend runtime, which stops at the first invalid ID, would read " +
                     ascend_reading(value);
  }
  return read;
}

tl::unexpected<Error> entry_error(const VendorText& text, std::string_view value,
                                  std::string_view entry, const Problem& problem) {
  return fail_usage(std::string(text.variable) + "=" + std::string(value) + ": entry " +
                    strings::quoted(entry) + " " + problem.what + "; " + problem.fix);
}

tl::unexpected<Error> unset_error(const VendorText& text) {
  std::string variable(text.variable);
  return fail_usage(
      variable + " is not set: gangrun cannot enumerate " + std::string(text.devices) +
      ", so with --accelerator " + std::string(text.accelerator) + " it splits the ones " +
      variable + " lists among the workers; set " + variable + " to the " + std::string(text.ids) +
      " to use (" + std::string(text.hint) + "), " + example_of(text));
}

// The Ascend runtime's ascending order, checked once every entry is a
// distinct valid ID, so the fix can show the sorted list.
Expected<void> check_ascending(const VendorText& text, std::string_view value,
                               const std::vector<std::string>& entries,
                               const std::vector<int>& ids) {
  for (std::size_t i = 1; i < ids.size(); ++i) {
    if (ids[i] > ids[i - 1]) continue;
    std::vector<int> sorted = ids;
    std::sort(sorted.begin(), sorted.end());
    std::vector<std::string> words;
    words.reserve(sorted.size());
    for (int id : sorted) words.push_back(std::to_string(id));
    return entry_error(
        text, value, entries[i],
        {"comes after " + strings::quoted(entries[i - 1]) +
             ", but the Ascend runtime requires ascending IDs",
         "sort them: " + std::string(text.variable) + "=" + strings::join(words, ",")});
  }
  return {};
}

}  // namespace

std::string_view variable_of(VendorList list) { return text_of(list).variable; }

Expected<std::vector<std::string>> parse_vendor_list(VendorList list,
                                                     std::optional<std::string_view> value) {
  const VendorText& text = text_of(list);
  if (!value) return unset_error(text);
  std::vector<std::string> tokens;
  if (value->empty()) return tokens;
  std::vector<std::string> entries = strings::split(*value, ',');
  std::map<int, std::string> named_by;  // each device and the entry that named it
  std::vector<int> ids;
  for (const std::string& entry : entries) {
    std::variant<Range, Problem> read = read_entry(list, *value, entry, text);
    if (const Problem* problem = std::get_if<Problem>(&read)) {
      return entry_error(text, *value, entry, *problem);
    }
    Range range = std::get<Range>(read);
    for (int id = range.first; id <= range.last; ++id) {
      auto [earlier, added] = named_by.emplace(id, entry);
      if (!added) {
        std::string what = "repeats " + std::string(text.device) + " " + std::to_string(id);
        if (earlier->second != std::to_string(id)) {
          what += ", already in " + strings::quoted(earlier->second);
        }
        return entry_error(text, *value, entry,
                           {what, "list each " + std::string(text.device) + " once"});
      }
      tokens.push_back(std::to_string(id));
    }
    ids.push_back(range.first);
  }
  if (list == VendorList::ascend) {
    GANGRUN_TRY(check_ascending(text, *value, entries, ids));
  }
  return tokens;
}

std::string join_vendor_mask(VendorList list, const std::vector<std::string>& tokens) {
  if (list != VendorList::neuron || tokens.size() < 2) return strings::join(tokens, ",");
  std::vector<std::int64_t> cores;
  for (const std::string& token : tokens) {
    std::optional<std::int64_t> core = strings::parse_int(token);
    if (!core || !all_digits(token)) return strings::join(tokens, ",");
    cores.push_back(*core);
  }
  for (std::size_t i = 1; i < cores.size(); ++i) {
    if (cores[i] != cores[i - 1] + 1) return strings::join(tokens, ",");
  }
  return tokens.front() + "-" + tokens.back();
}

}  // namespace gangrun::accel
