// Where a job's secret comes from (rendezvous/signing.hpp says what it
// proves): GANGRUN_JOB_SECRET itself, or the file GANGRUN_JOB_SECRET_FILE
// names (better on a shared file system: a variable can be seen by anyone
// who can read the process' environment, a file has permissions). Never an
// option on the command line, which every user of the host can read in ps.
#pragma once

#include "util/env.hpp"
#include "util/error.hpp"

#include <sys/types.h>

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
// (exit 2), each naming where the secret came from:
// - both variables set;
// - the file is not a readable regular file of at most 4 KiB, is not owned
//   by the user gangrun runs as, or its group or others may read or write it
//   (mode & 077, as ssh's StrictModes refuses a private key): the message
//   names its mode or owner and the fix (chmod 600 FILE);
// - the secret is empty or only white space, or holds more than one line
//   (ssh passes the hosts it starts the first line alone, and a variable
//   with a newline would differ from what they get): a file's trailing
//   white space (its final newline) is not part of the secret, a variable
//   is taken as it is;
// - it is shorter than k_min_job_secret_size bytes.
// The value itself is never in a message.
Expected<std::optional<JobSecret>> read_job_secret(const EnvMap& env);

// Whether a secret file whose stat says (mode, owner) may be read by a
// process running as user euid; the usage error says why not. Pure, for
// tests: read_job_secret asks it with the file's own stat.
Expected<void> check_secret_file_access(const std::string& origin, mode_t mode, uid_t owner,
                                        uid_t euid);

// env without GANGRUN_JOB_SECRET: the workers' environment is made from
// gangrun's own, and a training script has no use for the secret.
void remove_job_secret(EnvMap& env);

// Erases GANGRUN_JOB_SECRET from this process' own environment: the value's
// bytes in place, then the variable. /proc/PID/environ shows the block the
// kernel wrote at exec, which environ's strings point into, so that the
// secret read once (into gangrun's EnvMap, which every part of gangrun reads
// instead of environ) is no longer there for whoever may read this
// process' environment: its own workers, which run as the same user. What
// gangrun gives the hosts it starts (srun's environment, ssh's first line of
// input) comes from that EnvMap. Call before any thread starts (setenv's
// rules).
void erase_job_secret_from_this_process();

}  // namespace gangrun::launch
