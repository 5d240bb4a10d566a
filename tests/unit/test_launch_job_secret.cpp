// The job's secret (launch/job_secret.hpp): where it comes from, and what
// gangrun refuses before anything starts: a secret file others may read or
// write, or that another user owns (as ssh's StrictModes), and a secret that
// is blank or of several lines.
#include "launch/job_secret.hpp"
#include "temp_dir.hpp"

#include <catch2/catch.hpp>

#include <sys/stat.h>
#include <unistd.h>

using gangrun::EnvMap;
using gangrun::ErrorCode;
using gangrun::launch::check_secret_file_access;
using gangrun::launch::read_job_secret;
using gangrun::test::TempDir;

namespace {

const std::string k_secret = "0123456789abcdef0123456789abcdef";

// The secret file named by env, written with text and mode.
EnvMap secret_file(const TempDir& dir, const std::string& text, mode_t mode) {
  std::string path = dir.write("secret", text);
  REQUIRE(::chmod(path.c_str(), mode) == 0);
  return {{"GANGRUN_JOB_SECRET_FILE", path}};
}

// The usage error's message read_job_secret gives for env.
std::string refusal(const EnvMap& env) {
  auto secret = read_job_secret(env);
  REQUIRE_FALSE(secret);
  CHECK(secret.error().code() == ErrorCode::usage);
  return secret.error().message();
}

}  // namespace

TEST_CASE("job secret: a file of the user's own, mode 600, one line with its newline",
          "[launch][secret]") {
  TempDir dir;
  auto secret = read_job_secret(secret_file(dir, k_secret + "\n", 0600));
  REQUIRE(secret);
  REQUIRE(*secret);
  CHECK((*secret)->value == k_secret);
  CHECK((*secret)->origin == "GANGRUN_JOB_SECRET_FILE=" + dir / "secret");

  auto from_variable = read_job_secret({{"GANGRUN_JOB_SECRET", k_secret}});
  REQUIRE(from_variable);
  CHECK((*from_variable)->value == k_secret);
  auto none = read_job_secret({});
  REQUIRE(none);
  CHECK_FALSE(*none);
}

TEST_CASE("job secret: a file its group or others may read or write is refused, with the fix",
          "[launch][secret]") {
  TempDir dir;
  for (mode_t mode : {0644, 0640, 0604, 0620, 0602, 0660}) {
    CAPTURE(mode);
    std::string message = refusal(secret_file(dir, k_secret + "\n", mode));
    CHECK_THAT(message, Catch::Contains(dir / "secret"));
    CHECK_THAT(message, Catch::Contains("chmod 600 " + dir / "secret"));
    char octal[8];
    std::snprintf(octal, sizeof octal, "%04o", static_cast<unsigned>(mode));
    CHECK_THAT(message, Catch::Contains(std::string("mode ") + octal));
  }
  for (mode_t mode : {0600, 0400}) {
    CAPTURE(mode);
    CHECK(read_job_secret(secret_file(dir, k_secret, mode)));
  }
}

TEST_CASE("job secret: a file another user owns is refused; root's own file is read by root",
          "[launch][secret]") {
  auto other = check_secret_file_access("GANGRUN_JOB_SECRET_FILE=/s", S_IFREG | 0600, 1001, 1000);
  REQUIRE_FALSE(other);
  CHECK(other.error().code() == ErrorCode::usage);
  CHECK_THAT(other.error().message(),
             Catch::StartsWith("GANGRUN_JOB_SECRET_FILE=/s: the job secret file is owned by uid "
                               "1001, not by uid 1000"));
  CHECK_FALSE(check_secret_file_access("GANGRUN_JOB_SECRET_FILE=/s", S_IFREG | 0600, 0, 1000));
  CHECK_FALSE(check_secret_file_access("GANGRUN_JOB_SECRET_FILE=/s", S_IFREG | 0600, 1000, 0));
  CHECK(check_secret_file_access("GANGRUN_JOB_SECRET_FILE=/s", S_IFREG | 0600, 0, 0));
  CHECK(check_secret_file_access("GANGRUN_JOB_SECRET_FILE=/s", S_IFREG | 0400, 1000, 1000));
  if (::geteuid() == 0) {
    // Root reads every file: the owner is checked all the same.
    TempDir dir;
    EnvMap env = secret_file(dir, k_secret, 0600);
    REQUIRE(::chown(env["GANGRUN_JOB_SECRET_FILE"].c_str(), 65534, 65534) == 0);
    CHECK_THAT(refusal(env), Catch::Contains("owned by uid 65534, not by uid 0"));
  }
}

TEST_CASE("job secret: empty, blank or of several lines is refused, in a file or a variable",
          "[launch][secret]") {
  TempDir dir;
  for (const std::string& text :
       {std::string(""), std::string(17, ' '), std::string("\n\n  \t\n")}) {
    CAPTURE(text);
    CHECK_THAT(refusal(secret_file(dir, text, 0600)), Catch::Contains("empty or only white space"));
  }
  for (const std::string& text : {std::string(17, ' '), std::string(""), std::string(" \t\n ")}) {
    CAPTURE(text);
    CHECK_THAT(
        refusal({{"GANGRUN_JOB_SECRET", text}}),
        Catch::StartsWith("GANGRUN_JOB_SECRET: the job secret is empty or only white space"));
  }
  for (const std::string& text :
       {k_secret + "\n" + k_secret + "\n", k_secret + "\r\nsecond line", "a\n" + k_secret}) {
    CAPTURE(text);
    CHECK_THAT(refusal(secret_file(dir, text, 0600)), Catch::Contains("more than one line"));
  }
  // A variable is taken as it is: a newline anywhere in it is another line.
  for (const std::string& text : {k_secret + "\n", k_secret + "\nsecond", "first\n" + k_secret}) {
    CAPTURE(text);
    CHECK_THAT(refusal({{"GANGRUN_JOB_SECRET", text}}), Catch::Contains("more than one line"));
  }
  CHECK_THAT(refusal({{"GANGRUN_JOB_SECRET", "short"}}),
             Catch::Contains("fewer than 16 characters"));
  CHECK_THAT(refusal(secret_file(dir, "short\n", 0600)),
             Catch::Contains("fewer than 16 characters"));
}
