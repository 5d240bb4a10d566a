// The key a preflight's workers seal their facts with (preflight/sealing.hpp):
// the values preflight_worker.py's Python computes for the same secret and
// run id (hmac.new(secret, b"gangrun preflight\0" + run_id, sha256)), so the
// two sides keep to one contract.
#include "preflight/sealing.hpp"

#include <catch2/catch.hpp>

using gangrun::preflight::preflight_key;

TEST_CASE("preflight key: HMAC-SHA-256 of the job secret over the label and the run id",
          "[preflight][secret]") {
  const std::string secret = "gangrun-test-job-secret-0123456789abcdef";
  CHECK(preflight_key(secret, "none") ==
        "6e693acffa1251e937b3dac202ae145d2551d083909b1cc7ddb4d550dc834c32");
  CHECK(preflight_key(secret, "none").size() == 64);
  CHECK(preflight_key(secret, "job-2") != preflight_key(secret, "none"));
  CHECK(preflight_key(secret + "x", "none") != preflight_key(secret, "none"));
  CHECK(preflight_key(secret, "none") != secret);
}
