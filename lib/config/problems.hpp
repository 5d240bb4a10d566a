// Every problem found in the options, kept so that all of them are reported
// at once, as a compiler reports every error in a file: a user with three
// mistakes fixes them in one go instead of meeting them one run at a time.
#pragma once

#include "util/error.hpp"

#include <string>
#include <utility>
#include <vector>

namespace gangrun::config {

class Problems {
 public:
  // Keeps result's error, if it has one; true when it had none.
  template <typename T>
  bool keep(const Expected<T>& result) {
    if (result) return true;
    errors_.push_back(result.error());
    return false;
  }
  void add(Error error) { errors_.push_back(std::move(error)); }

  bool empty() const { return errors_.empty(); }

  // Nothing when there were none; the one problem as it is; several as one
  // usage error that lists each on its own line, in the order they were found.
  Expected<void> result() const;

 private:
  std::vector<Error> errors_;
};

}  // namespace gangrun::config
