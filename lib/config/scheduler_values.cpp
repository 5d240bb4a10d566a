#include "config/scheduler_values.hpp"

namespace gangrun::config {

using slurm::variable_text;

std::map<std::string, LayeredValue, std::less<>> scheduler_layer(const schedulers::Job& job) {
  std::map<std::string, LayeredValue, std::less<>> values;
  auto put = [&](std::string_view option, std::string text, std::string origin) {
    values[std::string(option)] =
        from_job_variables(std::move(text), option, std::move(origin), Source::scheduler);
  };
  if (job.job_id) put(opt::rdzv_id, job.job_id->value, variable_text(*job.job_id));
  if (job.start == schedulers::Start::first_node) {
    put(opt::nnodes, std::to_string(job.hosts.size()), job.hosts_origin);
    return values;
  }
  put(opt::nnodes, std::to_string(job.num_nodes.value), variable_text(job.num_nodes));
  if (job.node_rank) {
    put(opt::node_rank, std::to_string(job.node_rank->value), variable_text(*job.node_rank));
  }
  // One node keeps the single-node defaults, 127.0.0.1 and a free port.
  if (job.num_nodes.value > 1) {
    if (job.head) put(opt::master_addr, job.head->value, schedulers::head_origin(job));
    if (job.port) put(opt::master_port, std::to_string(job.port->value), variable_text(*job.port));
  }
  if (job.workers_per_node) {
    put(opt::nproc_per_node, std::to_string(job.workers_per_node->value),
        variable_text(*job.workers_per_node));
  }
  return values;
}

std::vector<HostfileEntry> scheduler_hosts(const schedulers::Job& job,
                                           const std::optional<ProcCount>& nproc_per_node) {
  std::vector<HostfileEntry> entries;
  int line = 0;
  bool counted = nproc_per_node && nproc_per_node->kind == ProcCount::Kind::number;
  for (const schedulers::Host& host : job.hosts) {
    entries.push_back(HostfileEntry{
        .host = host.name, .slots = counted ? nproc_per_node->number : host.slots, .line = ++line});
  }
  return entries;
}

}  // namespace gangrun::config
