// Reading the preflight's facts, which a worker program wrote: a missing
// member reads as null instead of failing. The judge names members by their
// row of facts_schema.hpp, never by a string of its own.
#pragma once

#include "preflight/facts_schema.hpp"

#include <nlohmann/json.hpp>

#include <string>

namespace gangrun::preflight {

// A member of a JSON object, or null (which iterates as empty) when the
// object lacks it; never a temporary, so ranges over it stay valid.
inline const nlohmann::json& field(const nlohmann::json& object, std::string_view key) {
  static const nlohmann::json k_missing;
  if (!object.is_object()) return k_missing;
  auto found = object.find(key);
  return found == object.end() ? k_missing : *found;
}

inline const nlohmann::json& field(const nlohmann::json& object, const Field& member) {
  return field(object, member.key);
}

// Whether OBJECT has MEMBER (of any value, null included).
inline bool has(const nlohmann::json& object, const Field& member) {
  return object.is_object() && object.contains(member.key);
}

// A member read as T, or FALLBACK when it is missing or of another type.
template <typename T>
T value_of(const nlohmann::json& object, std::string_view key, T fallback) {
  const nlohmann::json& member = field(object, key);
  if (member.is_null()) return fallback;
  try {
    return member.get<T>();
  } catch (const nlohmann::json::exception&) {
    return fallback;
  }
}

template <typename T>
T value_of(const nlohmann::json& object, const Field& member, T fallback) {
  return value_of(object, member.key, std::move(fallback));
}

}  // namespace gangrun::preflight
