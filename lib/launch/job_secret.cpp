#include "launch/job_secret.hpp"

#include "config/config_file.hpp"

namespace gangrun::launch {
namespace {

constexpr config::UserFileKind k_secret_file{
    .name = "the job secret file",
    .reads =
        "GANGRUN_JOB_SECRET_FILE names a file that holds the job's secret; write it into a "
        "file readable only by you (chmod 600)",
    .max_bytes = 4096,
    .holds = "a secret is one line"};

// The file's text without its trailing white space.
Expected<std::string> read_secret_file(const std::string& path) {
  GANGRUN_TRY_ASSIGN(text, config::read_user_file(path, k_secret_file));
  while (!text->empty() && (text->back() == '\n' || text->back() == '\r' || text->back() == ' ' ||
                            text->back() == '\t')) {
    text->pop_back();
  }
  return std::move(*text);
}

}  // namespace

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
    GANGRUN_TRY_ASSIGN(text, read_secret_file(*file));
    secret = {std::move(*text), std::string(k_job_secret_file_variable) + "=" + *file};
  }
  if (secret.value.size() < k_min_job_secret_size) {
    return fail_usage(secret.origin +
                      ": the job secret has fewer than 16 characters; use a long "
                      "random one, e.g. from `openssl rand -hex 32`");
  }
  return std::optional<JobSecret>(std::move(secret));
}

void remove_job_secret(EnvMap& env) { env.erase(std::string(k_job_secret_variable)); }

}  // namespace gangrun::launch
