#include "launch/job_secret.hpp"

#include "util/fd.hpp"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <array>
#include <cerrno>
#include <cstring>

namespace gangrun::launch {
namespace {

constexpr std::size_t k_max_secret_file_size = 4096;

// The file's bytes: a regular file only (a FIFO would block, a device
// never end), read whole up to the limit.
Expected<std::string> read_secret_file(const std::string& path) {
  std::string what = std::string(k_job_secret_file_variable) + "=" + path;
  UniqueFd file(::open(path.c_str(), O_RDONLY | O_NONBLOCK | O_CLOEXEC));
  if (!file.valid()) return fail_usage(what + ": cannot open it: " + std::strerror(errno));
  struct stat facts {};
  if (::fstat(file.get(), &facts) != 0 || !S_ISREG(facts.st_mode)) {
    return fail_usage(what +
                      ": not a regular file; write the secret into a file readable only "
                      "by you (chmod 600)");
  }
  std::string text;
  std::array<char, 1024> chunk{};
  while (true) {
    ssize_t got = ::read(file.get(), chunk.data(), chunk.size());
    if (got < 0 && errno == EINTR) continue;
    if (got < 0) return fail_usage(what + ": cannot read it: " + std::strerror(errno));
    if (got == 0) break;
    text.append(chunk.data(), static_cast<std::size_t>(got));
    if (text.size() > k_max_secret_file_size) {
      return fail_usage(what + ": larger than 4 KiB; a secret is one line");
    }
  }
  while (!text.empty() && (text.back() == '\n' || text.back() == '\r' || text.back() == ' ' ||
                           text.back() == '\t')) {
    text.pop_back();
  }
  return text;
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
