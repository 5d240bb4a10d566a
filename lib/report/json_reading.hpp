// Reading a JSON document that may not be ours (a report file someone
// edited): a missing key or a value of the wrong type gives the fallback,
// never an exception.
#pragma once

#include <nlohmann/json.hpp>

#include <optional>
#include <string>

namespace gangrun::report::json_reading {

// object[key], or null when object is no object or has no key.
const nlohmann::json& member(const nlohmann::json& object, const char* key);
// object[key] when it is an array, else an empty one.
const nlohmann::json& array_of(const nlohmann::json& object, const char* key);
// object[key] when it is a string, else "".
std::string text_of(const nlohmann::json& object, const char* key);
std::optional<double> number_of(const nlohmann::json& object, const char* key);
// object[key] when it is an integer that fits an int.
std::optional<int> int_of(const nlohmann::json& object, const char* key);

}  // namespace gangrun::report::json_reading
