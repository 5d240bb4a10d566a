// How a preflight's workers seal the facts they exchange through the job's
// store, so that whoever else reaches the store can neither change a check's
// verdict nor the result every node prints. The workers never get the job's
// secret itself (a training script has no use for it, and a worker's
// environment is readable by its user's other processes); each gets a key
// derived from it, which is good for this job's preflights alone.
//
// The contract between gangrun and preflight_worker.py:
//
//   GANGRUN_PREFLIGHT_KEY = hex(HMAC-SHA-256(key = the job's secret,
//                                            message = "gangrun preflight" NUL run-id))
//
// 64 lowercase hex digits, given only to the preflight's workers, and only
// when the job has a secret (launch/job_secret.hpp). A worker then stores
// under each key K of gangrun_preflight/ (facts/<rank>, plan, result)
//
//   <64 hex digits of HMAC-SHA-256(key = the 32 bytes GANGRUN_PREFLIGHT_KEY
//                                  spells, message = K NUL value)>:<value>
//
// (the value: a JSON object; K the full store key, which holds no NUL), and
// refuses what it reads unless its MAC checks (Python's hmac.compare_digest):
// rank 0 reports each refused fact, which the "seals" check names and fails
// (checks.hpp); another node's worker that is given a plan or result that
// does not check ends its preflight with a message that names the key.
// Without a secret, values are stored and read as they are.
//
// What remains: a stranger who reaches the store can still delete or
// overwrite a key, which ends the preflight with a refusal (a denial, not a
// lie); and a value sealed in an earlier preflight of the same secret and
// run id can be replayed (give each job its own secret, as
// docs/securing-multi-node.md says).
#pragma once

#include "preflight/facts_schema.hpp"

#include <string>
#include <string_view>

namespace gangrun::preflight {

inline constexpr std::string_view k_preflight_key_variable = variables::key.name;

// GANGRUN_PREFLIGHT_KEY's value for a job of this secret and run id.
std::string preflight_key(std::string_view job_secret, std::string_view run_id);

}  // namespace gangrun::preflight
