#include "commands/stacks_command.hpp"

#include "commands/stacks_of_nodes.hpp"
#include "doctor/job_registry.hpp"
#include "doctor/stack_groups.hpp"
#include "doctor/stack_tool.hpp"
#include "doctor/stacks_json.hpp"
#include "launch/program.hpp"
#include "util/strings.hpp"

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include <sys/stat.h>
#include <unistd.h>

#include <cstdio>
#include <filesystem>
#include <thread>

namespace gangrun::commands {

namespace {

namespace fs = std::filesystem;

// A stack tool that needs longer than this on a loaded host is reported as
// such for its rank; the others are not held up (they run in parallel).
constexpr std::chrono::seconds k_read_limit{10};

std::string describe(const doctor::RegisteredJob& job) {
  return fmt::format("pid {}: run id {}, {}{}", job.pid, job.run_id, job.program,
                     job.log_dir ? ", logs in " + *job.log_dir : "");
}

std::string list_of(const std::vector<doctor::RegisteredJob>& jobs) {
  std::string text;
  for (const doctor::RegisteredJob& job : jobs) text += "\n  " + describe(job);
  return text;
}

// DIR names the job when it is the run's own directory or the --log-dir
// that holds it.
bool in_log_dir(const doctor::RegisteredJob& job, const std::string& dir) {
  if (!job.log_dir) return false;
  std::error_code error;
  fs::path wanted = fs::weakly_canonical(fs::absolute(dir), error);
  fs::path run_dir = fs::weakly_canonical(*job.log_dir, error);
  return run_dir == wanted || run_dir.parent_path() == wanted;
}

// The real uid a running process belongs to; nullopt when it is gone.
std::optional<uid_t> owner_of(long pid) {
  struct stat info {};
  if (::stat(("/proc/" + std::to_string(pid)).c_str(), &info) != 0) return std::nullopt;
  return info.st_uid;
}

doctor::RankStacks read_rank(const doctor::JobWorker& worker, const doctor::RegisteredJob& job,
                             const std::optional<std::string>& tool, bool native,
                             const EnvMap& env) {
  doctor::RankStacks rank = doctor::rank_to_read(worker.rank, job.host, worker.pid);
  if (!tool) {
    rank.unavailable = doctor::without_stack("py-spy not found", worker.pid);
    return rank;
  }
  auto threads = doctor::capture_stacks(doctor::dump_command_for(*tool, rank, native), worker.pid,
                                        env, k_read_limit);
  if (threads) {
    rank.threads = std::move(*threads);
  } else {
    rank.unavailable = doctor::without_stack(threads.error().message(), worker.pid);
  }
  return rank;
}

// Every rank of this host's part of the job, read from here.
Expected<std::vector<doctor::RankStacks>> read_this_host(const config::StacksRequest& request,
                                                         const doctor::RegisteredJob& job,
                                                         const EnvMap& env) {
  std::vector<doctor::JobWorker> workers = doctor::job_workers(job.pid);
  if (workers.empty()) {
    return fail(ErrorCode::io, "stacks: the job (" + describe(job) +
                                   ") has no worker running now (it is starting, between "
                                   "rounds, or ending); ask again in a moment");
  }
  std::optional<std::string> tool;
  if (request.stack_tool) {
    auto found = launch::find_executable(*request.stack_tool, env, "stack tool");
    if (!found) return fail_usage("stacks: --stack-tool: " + found.error().message());
    tool = *found;
  } else {
    std::optional<std::string> beside;
    if (job.interpreter) beside = fs::path(*job.interpreter).parent_path().string();
    tool = doctor::find_stack_tool(std::nullopt, beside, env);
    if (!tool) std::fprintf(stderr, "gangrun: warning: %s\n", doctor::missing_tool_hint().c_str());
  }

  std::vector<doctor::RankStacks> ranks(workers.size());
  {
    std::vector<std::jthread> readers;
    readers.reserve(workers.size());
    for (std::size_t i = 0; i < workers.size(); ++i) {
      readers.emplace_back(
          [&, i] { ranks[i] = read_rank(workers[i], job, tool, request.native, env); });
    }
  }
  return ranks;
}

}  // namespace

Expected<doctor::RegisteredJob> choose_job(const std::vector<doctor::RegisteredJob>& jobs,
                                           const config::StacksRequest& request,
                                           const std::string& command) {
  std::vector<doctor::RegisteredJob> chosen;
  for (const doctor::RegisteredJob& job : jobs) {
    bool wanted = request.pid       ? job.pid == *request.pid
                  : request.run_id  ? job.run_id == *request.run_id
                  : request.log_dir ? in_log_dir(job, *request.log_dir)
                                    : true;
    if (wanted) chosen.push_back(job);
  }
  if (chosen.size() == 1) return chosen.front();
  const bool asked = request.pid || request.run_id || request.log_dir;
  if (request.pid && chosen.empty()) {
    if (auto owner = owner_of(*request.pid); owner && *owner != ::getuid()) {
      return fail_usage(fmt::format(
          "{}: pid {} is a process of another user (uid {}): only that user (or root) may "
          "read its ranks' {}; run gangrun {} as that user",
          command, *request.pid, *owner, command == "stacks" ? "stacks" : "status", command));
    }
  }
  if (chosen.empty() && jobs.empty()) {
    return fail_usage(command + ": no gangrun job of this user runs on this host");
  }
  if (chosen.empty()) {
    return fail_usage(command +
                      ": none of this user's gangrun jobs on this host is the one asked for; "
                      "they are:" +
                      list_of(jobs));
  }
  return fail_usage(command + ": " +
                    (asked ? "several jobs match" : "several gangrun jobs of this user run here") +
                    "; name one with --pid:" + list_of(chosen));
}

Expected<int> run_stacks_command(const config::StacksRequest& request, const EnvMap& env) {
  GANGRUN_TRY_ASSIGN(job, choose_job(doctor::running_jobs(env), request));
  std::vector<doctor::RankStacks> ranks;
  // The agents read Python frames only: --native reads this host's ranks from here.
  if (job->nodes && !request.native) {
    auto nodes = read_every_node(*job);
    if (!nodes) return fail(nodes.error().code(), "stacks: " + nodes.error().message());
    for (const std::string& node : nodes->unanswered) {
      std::fprintf(stderr, "gangrun: warning: %s did not answer in time; its ranks are missing\n",
                   node.c_str());
    }
    ranks = std::move(nodes->ranks);
  } else {
    GANGRUN_TRY_ASSIGN(here, read_this_host(request, *job, env));
    ranks = std::move(*here);
  }
  std::vector<doctor::StackGroup> groups = doctor::group_by_stack(ranks);
  std::vector<std::string> summary = doctor::summary_lines(groups);
  if (request.json) {
    nlohmann::json out = doctor::stacks_json(ranks, summary, std::nullopt);
    out["run_id"] = job->run_id;
    out["gangrun_pid"] = job->pid;
    out["host"] = job->host;
    std::fputs((out.dump(2) + "\n").c_str(), stdout);
    return 0;
  }
  std::string text =
      fmt::format("run id {} (gangrun pid {}, {}): {} ranks, the odd ones out first\n", job->run_id,
                  job->pid, job->host, ranks.size());
  text += doctor::full_text(ranks, groups);
  std::fputs(text.c_str(), stdout);
  return 0;
}

}  // namespace gangrun::commands
