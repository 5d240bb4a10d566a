// Where a job's secret comes from (rendezvous/signing.hpp says what it
// proves): GANGRUN_JOB_SECRET itself, or the file GANGRUN_JOB_SECRET_FILE
// names (better on a shared file system: a variable can be seen by anyone
// who can read the process' environment, a file has permissions). Never an
// option on the command line, which every user of the host can read in ps.
#pragma once

#include "util/env.hpp"
#include "util/error.hpp"

#include <optional>
#include <string>
#include <string_view>

namespace gangrun::launch {

inline constexpr std::string_view k_job_secret_variable = "GANGRUN_JOB_SECRET";
inline constexpr std::string_view k_job_secret_file_variable = "GANGRUN_JOB_SECRET_FILE";
// Shorter secrets can be guessed; new_job_secret() makes 64 hex digits.
inline constexpr std::size_t k_min_job_secret_size = 16;

struct JobSecret {
  std::string value;
  std::string origin;  // "GANGRUN_JOB_SECRET", "GANGRUN_JOB_SECRET_FILE=/path": for messages
};

// The secret env gives; nullopt when neither variable is set. Usage errors
// (exit 2): both set, a file that is not a readable regular file of at most
// 4 KiB, a secret shorter than k_min_job_secret_size bytes (after the file's
// trailing white space). The value itself is never in a message.
Expected<std::optional<JobSecret>> read_job_secret(const EnvMap& env);

// env without GANGRUN_JOB_SECRET: the workers' environment is made from
// gangrun's own, and a training script has no use for the secret.
void remove_job_secret(EnvMap& env);

}  // namespace gangrun::launch
