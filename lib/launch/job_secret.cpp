#include "launch/job_secret.hpp"

#include "config/config_file.hpp"

#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstring>

namespace gangrun::launch {
namespace {

constexpr config::UserFileKind k_secret_file{
    .name = "the job secret file",
    .reads =
        "GANGRUN_JOB_SECRET_FILE names a file that holds the job's secret; write it into a "
        "file readable only by you (chmod 600)",
    .max_bytes = 4096,
    .holds = "a secret is one line"};

bool is_space(char c) { return c == ' ' || c == '\t' || c == '\n' || c == '\r'; }

// The file's text without its trailing white space (its final newline).
Expected<std::string> read_secret_file(const std::string& path, const std::string& origin) {
  // stat, not the descriptor read_user_file opens: whoever can swap the file
  // between the two can write into its directory, and the check is there to
  // stop a user's mistake, not that.
  struct stat status {};
  if (::stat(path.c_str(), &status) == 0) {
    GANGRUN_TRY(check_secret_file_access(origin, status.st_mode, status.st_uid, ::geteuid()));
  }  // else read_user_file says why it cannot be read
  GANGRUN_TRY_ASSIGN(text, config::read_user_file(path, k_secret_file));
  while (!text->empty() && is_space(text->back())) text->pop_back();
  return std::move(*text);
}

std::string octal_mode(mode_t mode) {
  char text[8];
  std::snprintf(text, sizeof text, "%04o", static_cast<unsigned>(mode & 07777));
  return text;
}

// The secret's own text: one line, not blank, long enough.
Expected<void> check_secret_text(const JobSecret& secret) {
  const std::string& value = secret.value;
  if (std::all_of(value.begin(), value.end(), is_space)) {
    return fail_usage(secret.origin +
                      ": the job secret is empty or only white space; use a long random one, "
                      "e.g. from `openssl rand -hex 32`");
  }
  if (value.find_first_of(std::string_view("\n\r\0", 3)) != std::string::npos) {
    return fail_usage(secret.origin +
                      ": the job secret holds more than one line (a newline, a carriage "
                      "return or a NUL inside it); the hosts gangrun starts over ssh would get "
                      "its first line alone: make it one line, e.g. from `openssl rand -hex 32`");
  }
  if (value.size() < k_min_job_secret_size) {
    return fail_usage(secret.origin + ": the job secret has fewer than " +
                      std::to_string(k_min_job_secret_size) +
                      " characters; use a long random one, e.g. from `openssl rand -hex 32`");
  }
  return {};
}

}  // namespace

Expected<void> check_secret_file_access(const std::string& origin, mode_t mode, uid_t owner,
                                        uid_t euid) {
  std::string path = origin.substr(origin.find('=') + 1);
  if (owner != euid) {
    return fail_usage(origin + ": the job secret file is owned by uid " + std::to_string(owner) +
                      ", not by uid " + std::to_string(euid) +
                      " that gangrun runs as; whoever owns it can change the secret: write "
                      "the secret into a file of your own and chmod 600 it");
  }
  if ((mode & 077) != 0) {
    return fail_usage(origin + ": the job secret file has mode " + octal_mode(mode) +
                      ", so its group or other users can read or write it; make it yours "
                      "alone: chmod 600 " +
                      path);
  }
  return {};
}

Expected<std::optional<JobSecret>> read_job_secret(const EnvMap& env) {
  auto value = env_lookup(env, std::string(k_job_secret_variable));
  auto file = env_lookup(env, std::string(k_job_secret_file_variable));
  if (value && file) {
    return fail_usage(
        "both GANGRUN_JOB_SECRET and GANGRUN_JOB_SECRET_FILE are set; unset one of them");
  }
  if (!value && !file) return std::optional<JobSecret>();
  JobSecret secret;
  if (value) {
    secret = {*value, std::string(k_job_secret_variable)};
  } else {
    std::string origin = std::string(k_job_secret_file_variable) + "=" + *file;
    GANGRUN_TRY_ASSIGN(text, read_secret_file(*file, origin));
    secret = {std::move(*text), std::move(origin)};
  }
  GANGRUN_TRY(check_secret_text(secret));
  return std::optional<JobSecret>(std::move(secret));
}

void remove_job_secret(EnvMap& env) { env.erase(std::string(k_job_secret_variable)); }

void erase_job_secret_from_this_process() {
  erase_from_process_environment(std::string(k_job_secret_variable));
}

}  // namespace gangrun::launch
