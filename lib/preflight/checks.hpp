// What gangrun preflight makes of the facts its workers gathered
// (preflight_worker.py): one verdict per check, with the place it concerns,
// what was seen and, when it did not pass, what to do. Pure: the facts are
// the JSON document the head's worker wrote, so tests judge written facts.
#pragma once

#include <nlohmann/json.hpp>

#include <string>
#include <vector>

namespace gangrun::preflight {

enum class Verdict { pass, warn, fail, skipped };

// "ok", "warn", "FAIL", "skipped": the table's words and the JSON's.
const char* to_string(Verdict verdict);

struct Check {
  std::string name;   // "torch", "/dev/shm", "versions", "all-reduce", ...
  std::string where;  // "every node", "node 1 (host-b)", "the gang", "nodes 0-1"
  Verdict verdict = Verdict::pass;
  std::string detail;  // what was seen
  std::string fix;     // what to do; empty when it passed
};

// Limits below which a node is warned about or failed. Defaults are what a
// training job with DataLoader workers and NCCL needs to start at all.
struct Thresholds {
  double log_dir_warn_bytes = 1024.0 * 1024 * 1024;  // 1 GiB free
  double log_dir_fail_bytes = 100.0 * 1024 * 1024;   // 100 MiB free
  double shm_warn_bytes = 1024.0 * 1024 * 1024;      // /dev/shm of 1 GiB
  double open_files_warn = 4096;                     // soft limit
  double memlock_warn_bytes = 64.0 * 1024 * 1024;    // RDMA registers buffers
  double clock_warn_s = 1.0;                         // offset to the head node
  double slow_pair_share = 0.5;  // a node's best pair below this share of the median node's best
};

// Every check of the facts, in the order the table prints them.
std::vector<Check> judge(const nlohmann::json& facts, const Thresholds& thresholds = {});

// Whether a check failed: gangrun preflight then exits with
// exit_codes::k_preflight; warnings alone do not fail it.
bool any_failed(const std::vector<Check>& checks);

}  // namespace gangrun::preflight
