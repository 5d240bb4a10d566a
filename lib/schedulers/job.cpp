#include "schedulers/job.hpp"

#include "schedulers/readers.hpp"

#include <cctype>
#include <string_view>
#include <unordered_map>

namespace gangrun::schedulers {

namespace {

std::string_view short_name(std::string_view name) { return name.substr(0, name.find('.')); }

// Whether a listed name is this host: the same name, or the same up to the
// first dot (node files hold "n1" where the host calls itself
// "n1.cluster", or the other way round). Addresses are compared whole.
bool names_this_host(std::string_view listed, std::string_view host_name) {
  if (listed == host_name) return true;
  bool address = !listed.empty() && (std::isdigit(static_cast<unsigned char>(listed.front())) ||
                                     listed.find(':') != std::string_view::npos);
  return !address && short_name(listed) == short_name(host_name);
}

}  // namespace

std::vector<Host> hosts_from_slots(const std::vector<std::string>& names) {
  // A node file may hold a million lines (config's read limit is 16 MiB):
  // each name is looked up once, not compared with every host before it.
  std::vector<Host> hosts;
  std::unordered_map<std::string_view, std::size_t> place;  // views into names
  for (const std::string& name : names) {
    auto [it, first_seen] = place.try_emplace(name, hosts.size());
    if (first_seen) {
      hosts.push_back(Host{.name = name, .slots = 1});
    } else {
      ++hosts[it->second].slots;  // at most names.size(), far below INT_MAX
    }
  }
  return hosts;
}

Expected<void> check_this_host_listed(const std::vector<Host>& hosts, std::string_view origin,
                                      std::string_view host_name, std::string_view system) {
  std::vector<std::string> matches;
  for (const Host& host : hosts) {
    if (names_this_host(host.name, host_name)) matches.push_back(host.name);
  }
  if (matches.size() == 1) return {};
  std::string where = "gangrun runs on " + std::string(host_name) + ", and " + std::string(origin);
  if (matches.empty()) {
    return fail_usage(where + " does not list it: run gangrun in the " + std::string(system) +
                      " job script, which runs on the job's first host, or give --launcher "
                      "local to run on this host alone");
  }
  return fail_usage(where + " lists it " + std::to_string(matches.size()) + " times (" +
                    matches.front() + ", " + matches.back() +
                    "), so its node rank is ambiguous: name each host once in one spelling");
}

Job from_slurm(slurm::Job job) {
  Job one;
  one.system = "Slurm";
  one.job_id = job.job_id;
  one.num_nodes = job.num_nodes;
  one.slurm = std::move(job);
  return one;
}

std::string job_line(const Job& job, int node_rank, int nnodes) {
  std::string line = job.system + (job.job_id ? " job " + job.job_id->value : ", no job id");
  line += ", node " + std::to_string(node_rank) + " of " + std::to_string(nnodes);
  if (job.start == Start::first_node) line += ", hosts from " + job.hosts_origin;
  return line;
}

std::string head_origin(const Job& job) {
  if (!job.head) return "";
  if (job.head->value != job.head->text) return "the head node: the first of " + job.head->variable;
  return "the head node: " + slurm::variable_text(*job.head);
}

}  // namespace gangrun::schedulers
