// Reading the preflight's facts, which a worker program wrote: a missing
// member reads as null instead of failing.
#pragma once

#include <nlohmann/json.hpp>

namespace gangrun::preflight {

// A member of a JSON object, or null (which iterates as empty) when the
// object lacks it; never a temporary, so ranges over it stay valid.
inline const nlohmann::json& field(const nlohmann::json& object, const char* key) {
  static const nlohmann::json k_missing;
  if (!object.is_object()) return k_missing;
  auto found = object.find(key);
  return found == object.end() ? k_missing : *found;
}

// A member read as T, or FALLBACK when it is missing or of another type.
template <typename T>
T value_of(const nlohmann::json& object, const char* key, T fallback) {
  const nlohmann::json& member = field(object, key);
  if (member.is_null()) return fallback;
  try {
    return member.get<T>();
  } catch (const nlohmann::json::exception&) {
    return fallback;
  }
}

}  // namespace gangrun::preflight
