// The jobs running on this host, so that `gangrun stacks` from another
// terminal can find one by its run id, gangrun's pid, its log directory, or
// as the only one of this user: each node agent writes one small JSON file
// while it runs and removes it when it ends. The files live in the user's
// own directory ($XDG_RUNTIME_DIR/gangrun, else $TMPDIR/gangrun-<uid>, made
// 0700 and refused when another user owns it). A file whose agent is gone
// (killed before it could remove it) is recognised by the process's start
// time and skipped.
#pragma once

#include "util/env.hpp"
#include "util/error.hpp"

#include <sys/types.h>

#include <chrono>
#include <optional>
#include <string>
#include <vector>

namespace gangrun::doctor {

struct RegisteredJob {
  pid_t pid = -1;             // the node agent (gangrun)
  long long start_ticks = 0;  // its start time in /proc/PID/stat, against a reused pid
  std::string run_id;
  std::string host;
  std::optional<std::string> log_dir;  // the run's own directory in --log-dir
  std::string program;                 // as the user named it
  // The workers' Python interpreter as gangrun chose it (a virtual
  // environment's bin/ holds py-spy beside it); nullopt for other programs.
  std::optional<std::string> interpreter;
  // A job of several nodes: the store its agents meet at, where `gangrun
  // stacks` asks every node's agent (doctor/watch/doctor_link.hpp), and the stacks
  // key derived from the job's secret (rendezvous/signing.hpp: derived_key),
  // which seals an ask and the answers and can do nothing else: the secret
  // itself is never written here.
  struct Nodes {
    std::string store_host;
    int store_port = 0;
    std::optional<std::string> stacks_key;
  };
  std::optional<Nodes> nodes;
  // Where the agent serves /metrics and /healthz (--metrics-addr), as it
  // bound it: "127.0.0.1:40123" (so port 0 can be found); nullopt: off.
  std::optional<std::string> metrics;
};

// The directory, made if needed; an error says why it cannot be used.
Expected<std::string> registry_dir(const EnvMap& env);

// The files of one agent's entry in the directory. A job of one node has no
// store for `gangrun top` to ask through: top touches `wanted` at every
// frame, and while it is under k_status_wanted_for old the agent writes its
// snapshot (observe/node_status.hpp's JSON) to `status` every second. Both
// go with the entry.
struct EntryFiles {
  std::string entry;   // <pid>.json
  std::string status;  // <pid>.status.json
  std::string wanted;  // <pid>.wanted
};
EntryFiles entry_files(const std::string& dir, pid_t agent_pid);

inline constexpr std::chrono::seconds k_status_wanted_for{5};

// Marks the agent's snapshot as wanted now (made 0600 if need be).
Expected<void> want_status(const std::string& wanted_path);

// Registers this process's job until the returned entry is destroyed.
class Registration {
 public:
  // Writes the job's file, after removing those of agents that are gone
  // (a SIGKILL leaves its file behind).
  static Expected<Registration> create(const EnvMap& env, const RegisteredJob& job);
  Registration(Registration&& other) noexcept;
  Registration& operator=(Registration&&) = delete;
  Registration(const Registration&) = delete;
  Registration& operator=(const Registration&) = delete;
  ~Registration();

  // Whether `gangrun top` touched the wanted file within
  // k_status_wanted_for: one stat, so asking costs next to nothing while
  // nobody watches.
  bool status_wanted() const;
  // Writes the snapshot whole (a temporary file renamed over it), 0600.
  Expected<void> write_status(const std::string& json_text) const;

 private:
  explicit Registration(EntryFiles files) : files_(std::move(files)) {}
  EntryFiles files_;
};

// The jobs whose agents still run, oldest first.
std::vector<RegisteredJob> running_jobs(const EnvMap& env);

// A process's start time in clock ticks since boot (field 22 of
// /proc/PID/stat); nullopt when it is gone.
std::optional<long long> process_start_ticks(pid_t pid);

// One worker of a registered job: a grandchild of the agent (agent -> shim
// -> worker) whose environment names its RANK.
struct JobWorker {
  int rank = 0;
  pid_t pid = -1;
};

// The job's workers in rank order, read from /proc.
std::vector<JobWorker> job_workers(pid_t agent_pid);

}  // namespace gangrun::doctor
