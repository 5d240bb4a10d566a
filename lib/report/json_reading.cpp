#include "report/json_reading.hpp"

#include <limits>

namespace gangrun::report::json_reading {

using json = nlohmann::json;

const json& member(const json& object, const char* key) {
  static const json null_value;
  if (!object.is_object()) return null_value;
  auto found = object.find(key);
  return found == object.end() ? null_value : *found;
}

const json& array_of(const json& object, const char* key) {
  static const json empty = json::array();
  const json& value = member(object, key);
  return value.is_array() ? value : empty;
}

std::string text_of(const json& object, const char* key) {
  const json& value = member(object, key);
  return value.is_string() ? value.get<std::string>() : std::string();
}

std::optional<double> number_of(const json& object, const char* key) {
  const json& value = member(object, key);
  if (!value.is_number()) return std::nullopt;
  return value.get<double>();
}

std::optional<int> int_of(const json& object, const char* key) {
  const json& value = member(object, key);
  if (value.is_number_unsigned()) {
    auto number = value.get<unsigned long long>();
    if (number > static_cast<unsigned long long>(std::numeric_limits<int>::max()))
      return std::nullopt;
    return static_cast<int>(number);
  }
  if (!value.is_number_integer()) return std::nullopt;
  long long number = value.get<long long>();
  if (number < std::numeric_limits<int>::min() || number > std::numeric_limits<int>::max()) {
    return std::nullopt;
  }
  return static_cast<int>(number);
}

}  // namespace gangrun::report::json_reading
