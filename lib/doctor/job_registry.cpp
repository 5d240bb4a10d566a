#include "doctor/job_registry.hpp"

#include "doctor/proc_stat.hpp"
#include "report/run_report.hpp"
#include "util/temp_dir.hpp"

#include <nlohmann/json.hpp>

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <map>
#include <sstream>

namespace gangrun::doctor {

namespace fs = std::filesystem;

namespace {

std::optional<std::string> read_text(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return std::nullopt;
  std::ostringstream text;
  text << in.rdbuf();
  return text.str();
}

std::optional<pid_t> parent_of(pid_t pid) {
  std::vector<std::string> fields = proc_stat_fields(pid);
  if (fields.size() < 2) return std::nullopt;
  return static_cast<pid_t>(std::stol(fields[1]));
}

std::optional<int> rank_in_environment(pid_t pid) {
  auto environ = read_text("/proc/" + std::to_string(pid) + "/environ");
  if (!environ) return std::nullopt;
  std::size_t at = 0;
  while (at < environ->size()) {
    std::size_t end = environ->find('\0', at);
    if (end == std::string::npos) end = environ->size();
    std::string_view entry(environ->data() + at, end - at);
    if (entry.starts_with("RANK=")) {
      try {
        return std::stoi(std::string(entry.substr(5)));
      } catch (const std::exception&) {
        return std::nullopt;
      }
    }
    at = end + 1;
  }
  return std::nullopt;
}

nlohmann::json to_json(const RegisteredJob& job) {
  return {{"pid", job.pid},
          {"start_ticks", job.start_ticks},
          {"run_id", job.run_id},
          {"host", job.host},
          {"log_dir", job.log_dir ? nlohmann::json(*job.log_dir) : nlohmann::json()},
          {"program", job.program},
          {"interpreter", job.interpreter ? nlohmann::json(*job.interpreter) : nlohmann::json()},
          {"nodes", job.nodes
                        ? nlohmann::json{{"store_host", job.nodes->store_host},
                                         {"store_port", job.nodes->store_port},
                                         {"stacks_key", job.nodes->stacks_key
                                                            ? nlohmann::json(*job.nodes->stacks_key)
                                                            : nlohmann::json()}}
                        : nlohmann::json()},
          {"metrics", job.metrics ? nlohmann::json(*job.metrics) : nlohmann::json()}};
}

std::optional<RegisteredJob> from_json(const std::string& text) {
  auto json = nlohmann::json::parse(text, nullptr, false);
  if (json.is_discarded() || !json.is_object()) return std::nullopt;
  try {
    RegisteredJob job;
    job.pid = json.at("pid").get<pid_t>();
    job.start_ticks = json.at("start_ticks").get<long long>();
    job.run_id = json.at("run_id").get<std::string>();
    job.host = json.at("host").get<std::string>();
    if (json.at("log_dir").is_string()) job.log_dir = json.at("log_dir").get<std::string>();
    job.program = json.at("program").get<std::string>();
    if (json.at("interpreter").is_string()) {
      job.interpreter = json.at("interpreter").get<std::string>();
    }
    if (json.contains("nodes") && json.at("nodes").is_object()) {
      const nlohmann::json& nodes = json.at("nodes");
      job.nodes = RegisteredJob::Nodes{.store_host = nodes.at("store_host").get<std::string>(),
                                       .store_port = nodes.at("store_port").get<int>(),
                                       .stacks_key = std::nullopt};
      if (nodes.at("stacks_key").is_string()) {
        job.nodes->stacks_key = nodes.at("stacks_key").get<std::string>();
      }
    }
    if (auto metrics = json.find("metrics"); metrics != json.end() && metrics->is_string()) {
      job.metrics = metrics->get<std::string>();
    }
    return job;
  } catch (const nlohmann::json::exception&) {
    return std::nullopt;
  }
}

}  // namespace

Expected<std::string> registry_dir(const EnvMap& env) {
  std::string dir;
  if (auto runtime = env_lookup(env, "XDG_RUNTIME_DIR"); runtime && !runtime->empty()) {
    dir = *runtime + "/gangrun";
  } else {
    dir = temp_dir(env) + "/gangrun-" + std::to_string(::getuid());
  }
  if (::mkdir(dir.c_str(), 0700) != 0 && errno != EEXIST) {
    return fail(ErrorCode::io, "cannot make " + dir + ": " + std::strerror(errno));
  }
  struct stat info {};
  if (::lstat(dir.c_str(), &info) != 0 || !S_ISDIR(info.st_mode) || info.st_uid != ::getuid()) {
    return fail(ErrorCode::io, dir +
                                   " is not a directory of this user's; the running jobs are "
                                   "registered there (remove it, or set XDG_RUNTIME_DIR)");
  }
  return dir;
}

namespace {

// The entries of agents that are gone (killed, so that they could not remove
// their own), and the half-written files of writers that are gone. A pid
// reused since is told apart by its start time. An entry's snapshot and
// wanted file go with it.
void prune(const std::string& dir) {
  std::error_code error;
  std::vector<fs::path> companions;
  for (const fs::directory_entry& entry : fs::directory_iterator(dir, error)) {
    const std::string name = entry.path().filename();
    std::size_t digits = name.find_first_not_of("0123456789");
    if (digits == 0 || digits == std::string::npos) continue;
    std::string rest = name.substr(digits);
    if (rest != ".json" && rest != ".json.partial") {
      if (rest == ".status.json" || rest == ".status.json.partial" || rest == ".wanted") {
        companions.push_back(entry.path());
      }
      continue;
    }
    pid_t pid = 0;
    try {
      pid = static_cast<pid_t>(std::stol(name.substr(0, digits)));
    } catch (const std::exception&) {
      continue;
    }
    bool gone = false;
    if (rest == ".json") {
      auto text = read_text(entry.path());
      auto job = text ? from_json(*text) : std::nullopt;
      gone = !job || job->pid != pid || process_start_ticks(pid) != job->start_ticks;
    } else {
      gone = !process_start_ticks(pid);
    }
    if (gone) ::unlink(entry.path().c_str());
  }
  for (const fs::path& companion : companions) {
    const std::string name = companion.filename();
    fs::path entry = companion.parent_path() / (name.substr(0, name.find('.')) + ".json");
    if (!fs::exists(entry, error)) ::unlink(companion.c_str());
  }
}

Expected<void> write_whole(const std::string& path, const std::string& text) {
  std::string partial = path + ".partial";
  {
    std::ofstream out(partial, std::ios::trunc);
    // It may hold the stacks key (derived from the job's secret, good for
    // asking for stacks only), a snapshot the program's command line: this
    // user's alone, as its directory.
    ::chmod(partial.c_str(), 0600);
    out << text;
    if (!out) return fail(ErrorCode::io, "cannot write " + partial + ": " + std::strerror(errno));
  }
  // Readers never see half a file.
  if (::rename(partial.c_str(), path.c_str()) != 0) {
    return fail(ErrorCode::io, "cannot write " + path + ": " + std::strerror(errno));
  }
  return {};
}

}  // namespace

EntryFiles entry_files(const std::string& dir, pid_t agent_pid) {
  const std::string stem = dir + "/" + std::to_string(agent_pid);
  return {.entry = stem + ".json", .status = stem + ".status.json", .wanted = stem + ".wanted"};
}

Expected<void> want_status(const std::string& wanted_path) {
  int fd = ::open(wanted_path.c_str(), O_WRONLY | O_CREAT | O_CLOEXEC | O_NOFOLLOW, 0600);
  if (fd < 0)
    return fail(ErrorCode::io, "cannot touch " + wanted_path + ": " + std::strerror(errno));
  int touched = ::futimens(fd, nullptr);
  int touch_errno = errno;
  ::close(fd);
  if (touched != 0) {
    return fail(ErrorCode::io, "cannot touch " + wanted_path + ": " + std::strerror(touch_errno));
  }
  return {};
}

Expected<Registration> Registration::create(const EnvMap& env, const RegisteredJob& job) {
  GANGRUN_TRY_ASSIGN(dir, registry_dir(env));
  prune(*dir);
  EntryFiles files = entry_files(*dir, job.pid);
  // The program's name need not be UTF-8: json_text writes U+FFFD for such bytes, where
  // dump() would throw.
  GANGRUN_TRY(write_whole(files.entry, report::json_text(to_json(job), -1) + "\n"));
  return Registration(std::move(files));
}

Registration::Registration(Registration&& other) noexcept : files_(std::move(other.files_)) {
  other.files_ = {};
}

Registration::~Registration() {
  if (files_.entry.empty()) return;
  ::unlink(files_.entry.c_str());
  ::unlink(files_.status.c_str());
  ::unlink(files_.wanted.c_str());
}

bool Registration::status_wanted() const {
  struct stat info {};
  if (::stat(files_.wanted.c_str(), &info) != 0) return false;
  auto touched = std::chrono::system_clock::time_point(
      std::chrono::duration_cast<std::chrono::system_clock::duration>(
          std::chrono::seconds(info.st_mtim.tv_sec) +
          std::chrono::nanoseconds(info.st_mtim.tv_nsec)));
  return std::chrono::system_clock::now() - touched < k_status_wanted_for;
}

Expected<void> Registration::write_status(const std::string& json_text) const {
  return write_whole(files_.status, json_text);
}

std::optional<long long> process_start_ticks(pid_t pid) {
  std::vector<std::string> fields = proc_stat_fields(pid);
  // Field 22 of the whole line is the 20th after the command.
  if (fields.size() < 20) return std::nullopt;
  try {
    return std::stoll(fields[19]);
  } catch (const std::exception&) {
    return std::nullopt;
  }
}

std::vector<RegisteredJob> running_jobs(const EnvMap& env) {
  auto dir = registry_dir(env);
  if (!dir) return {};
  std::vector<RegisteredJob> jobs;
  std::error_code error;
  for (const fs::directory_entry& entry : fs::directory_iterator(*dir, error)) {
    if (entry.path().extension() != ".json") continue;
    auto text = read_text(entry.path());
    if (!text) continue;
    auto job = from_json(*text);
    if (!job) continue;
    if (process_start_ticks(job->pid) != job->start_ticks) continue;  // gone, or a reused pid
    jobs.push_back(std::move(*job));
  }
  std::sort(jobs.begin(), jobs.end(), [](const RegisteredJob& a, const RegisteredJob& b) {
    return a.start_ticks < b.start_ticks;
  });
  return jobs;
}

std::vector<JobWorker> job_workers(pid_t agent_pid) {
  std::map<pid_t, pid_t> parents;  // every process's parent
  std::error_code error;
  for (const fs::directory_entry& entry : fs::directory_iterator("/proc", error)) {
    const std::string name = entry.path().filename();
    if (name.empty() || !std::all_of(name.begin(), name.end(), ::isdigit)) continue;
    auto pid = static_cast<pid_t>(std::stol(name));
    if (auto parent = parent_of(pid)) parents[pid] = *parent;
  }
  std::vector<JobWorker> workers;
  for (auto [pid, parent] : parents) {
    auto grandparent = parents.find(parent);
    if (grandparent == parents.end() || grandparent->second != agent_pid) continue;
    auto rank = rank_in_environment(pid);
    if (!rank) continue;  // not a worker: a stack tool the agent runs
    workers.push_back({.rank = *rank, .pid = pid});
  }
  std::sort(workers.begin(), workers.end(),
            [](const JobWorker& a, const JobWorker& b) { return a.rank < b.rank; });
  return workers;
}

}  // namespace gangrun::doctor
