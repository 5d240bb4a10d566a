// Catch2 helpers for Expected results: the value, or a failed test that
// says what went wrong.
#pragma once

#include "util/error.hpp"

#include <catch2/catch.hpp>

#include <utility>

namespace gangrun::testing {

template <typename T>
T value_of(Expected<T> result) {
  if (!result) FAIL("operation failed: " << result.error().describe());
  return std::move(*result);
}

inline void ok(const Expected<void>& result) {
  if (!result) FAIL("operation failed: " << result.error().describe());
}

}  // namespace gangrun::testing
