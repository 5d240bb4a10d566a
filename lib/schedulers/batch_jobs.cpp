// PBS and LSF: the job script runs on the job's first host with the list of
// every host, and gangrun starts itself on the others.
#include "schedulers/readers.hpp"
#include "util/strings.hpp"

#include <algorithm>
#include <cstdint>
#include <string_view>
#include <unordered_map>

namespace gangrun::schedulers {

namespace {

using slurm::Read;
using slurm::text_of;
using slurm::variable_text;

// The most slots one host may have in all: gangrun starts a worker for each.
constexpr std::uint64_t k_most_slots = 1'000'000;

Job first_node_job(std::string system, Read<std::string> job_id, std::vector<Host> hosts,
                   std::string origin) {
  Job job;
  job.system = std::move(system);
  job.start = Start::first_node;
  job.job_id = std::move(job_id);
  std::string count = std::to_string(hosts.size());
  job.num_nodes = Read<int>{static_cast<int>(hosts.size()), origin, count};
  job.hosts = std::move(hosts);
  job.hosts_origin = std::move(origin);
  return job;
}

std::vector<std::string> words(std::string_view text) {
  std::vector<std::string> found;
  std::string word;
  for (char c : text) {
    if (c == ' ' || c == '\t' || c == '\n' || c == '\r') {
      if (!word.empty()) found.push_back(std::move(word));
      word.clear();
    } else {
      word += c;
    }
  }
  if (!word.empty()) found.push_back(std::move(word));
  return found;
}

Expected<void> check_names(const std::vector<Host>& hosts, const std::string& origin) {
  if (hosts.empty()) return fail_usage(origin + " names no host");
  for (const Host& host : hosts) {
    bool printable = std::all_of(host.name.begin(), host.name.end(), [](char c) {
      return static_cast<unsigned char>(c) > 0x20 && c != 0x7f;
    });
    if (host.name.front() == '-' || !printable) {
      return fail_usage(origin + ": " + strings::quoted(strings::printable(host.name)) +
                        " is not a host name");
    }
  }
  return {};
}

}  // namespace

Expected<std::optional<Job>> read_pbs_job(const EnvMap& env, const Context& context) {
  std::optional<Read<std::string>> job_id = text_of(env, {"PBS_JOBID"});
  if (!job_id) return std::nullopt;
  std::optional<Read<std::string>> node_file = text_of(env, {"PBS_NODEFILE"});
  if (!node_file) {
    return fail_usage(variable_text(*job_id) +
                      " is set but PBS_NODEFILE is not, so the job's hosts are unknown: run "
                      "gangrun in the job script (qsub), or unset PBS_JOBID");
  }
  std::string origin = variable_text(*node_file);
  GANGRUN_TRY_ASSIGN(text, context.read_file(node_file->value).map_error([&](const Error& error) {
    return Error(ErrorCode::usage, "PBS_NODEFILE: " + error.message());
  }));
  std::vector<Host> hosts = hosts_from_slots(words(*text));
  GANGRUN_TRY(check_names(hosts, origin));
  GANGRUN_TRY(check_this_host_listed(hosts, origin, context.host_name, "PBS"));
  return first_node_job("PBS", *job_id, std::move(hosts), std::move(origin));
}

Expected<std::optional<Job>> read_lsf_job(const EnvMap& env, const Context& context) {
  std::optional<Read<std::string>> job_id = text_of(env, {"LSB_JOBID"});
  if (!job_id) return std::nullopt;
  std::vector<Host> hosts;
  std::string origin;
  if (std::optional<Read<std::string>> pairs = text_of(env, {"LSB_MCPU_HOSTS"})) {
    origin = variable_text(*pairs);
    std::vector<std::string> list = words(pairs->value);
    if (list.size() % 2 != 0) {
      return fail_usage(origin + ": expected pairs of a host and its slot count");
    }
    std::unordered_map<std::string_view, std::size_t> place;  // views into list
    for (std::size_t i = 0; i < list.size(); i += 2) {
      const std::string& name = list[i];
      Expected<std::uint64_t> slots = slurm::unsigned_number(list[i + 1]);
      if (!slots || *slots == 0 || *slots > k_most_slots) {
        return fail_usage(origin + ": " + strings::quoted(strings::printable(list[i + 1])) +
                          " after " + strings::printable(name) + " is not a slot count (1.." +
                          std::to_string(k_most_slots) + ")");
      }
      auto [it, first_seen] = place.try_emplace(name, hosts.size());
      if (first_seen) {
        hosts.push_back(Host{.name = name, .slots = static_cast<int>(*slots)});
        continue;
      }
      // A host named again adds its slots; the sum is checked before it
      // narrows to int, which it would wrap past (a negative count that
      // dropped the host).
      Host& host = hosts[it->second];
      std::uint64_t sum = static_cast<std::uint64_t>(host.slots) + *slots;
      if (sum > k_most_slots) {
        return fail_usage(pairs->variable + ": the slot counts of " +
                          strings::printable(host.name) + " add up to " + std::to_string(sum) +
                          ", more than " + std::to_string(k_most_slots) +
                          " (gangrun starts a worker per slot)");
      }
      host.slots = static_cast<int>(sum);
    }
  } else if (std::optional<Read<std::string>> names = text_of(env, {"LSB_HOSTS"})) {
    origin = variable_text(*names);
    hosts = hosts_from_slots(words(names->value));
  } else {
    return fail_usage(variable_text(*job_id) +
                      " is set but neither LSB_MCPU_HOSTS nor LSB_HOSTS is, so the job's hosts "
                      "are unknown: run gangrun in the job script (bsub), or unset LSB_JOBID");
  }
  GANGRUN_TRY(check_names(hosts, origin));
  GANGRUN_TRY(check_this_host_listed(hosts, origin, context.host_name, "LSF"));
  return first_node_job("LSF", *job_id, std::move(hosts), std::move(origin));
}

}  // namespace gangrun::schedulers
