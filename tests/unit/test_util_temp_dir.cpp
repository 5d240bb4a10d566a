// The temporary-directory rule (util/temp_dir.hpp): $TMPDIR unless it is
// unset or empty, else /tmp, and how messages name where it came from.
#include "util/temp_dir.hpp"

#include <catch2/catch.hpp>

namespace gangrun {
namespace {

TEST_CASE("temp_dir is TMPDIR when set and not empty, else /tmp", "[util][temp_dir]") {
  CHECK(temp_dir({}) == "/tmp");
  CHECK(temp_dir({{"TMPDIR", "/scratch/job"}}) == "/scratch/job");
  // As POSIX tools read it: an empty TMPDIR is no TMPDIR, never the root.
  CHECK(temp_dir({{"TMPDIR", ""}}) == "/tmp");
  CHECK(temp_dir({{"TMP", "/other"}, {"TEMP", "/other"}}) == "/tmp");
}

TEST_CASE("temp_dir_origin names the variable only when it chose", "[util][temp_dir]") {
  CHECK(temp_dir_origin({}) == "/tmp");
  CHECK(temp_dir_origin({{"TMPDIR", "/scratch/job"}}) == "TMPDIR=/scratch/job");
  CHECK(temp_dir_origin({{"TMPDIR", ""}}) == "/tmp");
}

}  // namespace
}  // namespace gangrun
