#include "config/job_values.hpp"

#include "slurm/hostlist.hpp"
#include "util/strings.hpp"

namespace gangrun::config {

using slurm::variable_text;

Expected<Options::Launcher> parse_launcher(std::string_view text) {
  std::string word = strings::to_lower(strings::trim(text));
  if (word == "auto") return Options::Launcher::automatic;
  if (word == "local") return Options::Launcher::local;
  if (word == "slurm") return Options::Launcher::slurm;
  // deepspeed's default pdsh runs one command on every host over ssh, which
  // is what gangrun's ssh start does.
  if (word == "ssh" || word == "pdsh") return Options::Launcher::ssh;
  // deepspeed's openmpi runs mpirun over the hostfile's hosts; gangrun
  // starts itself through it, one task per host (remote/mpirun_start.hpp).
  if (word == "openmpi") return Options::Launcher::openmpi;
  if (word == "mvapich" || word == "impi" || word == "mpich") {
    return fail_usage(strings::quoted(text) +
                      " is a deepspeed launcher gangrun does not use: gangrun starts itself "
                      "through Open MPI's mpirun (--launcher openmpi) or over ssh (--launcher "
                      "ssh) on the hosts of a hostfile; or start it under that MPI's own "
                      "launcher, one task per node ('mpiexec -ppn 1 -genv MASTER_ADDR HOST "
                      "gangrun ...': gangrun reads PMI_RANK and PMI_SIZE)");
  }
  return fail_usage(strings::quoted(text) +
                    " is not a launcher (expected auto, local, slurm, ssh, pdsh or openmpi)");
}

Expected<std::vector<std::string>> parse_launcher_args(std::string_view text) {
  std::vector<std::string> words;
  std::string word;
  bool in_word = false;
  char quote = 0;
  for (char c : text) {
    if (quote != 0) {
      if (c == quote) {
        quote = 0;
      } else {
        word += c;
      }
    } else if (c == '\'' || c == '"') {
      quote = c;
      in_word = true;
    } else if (c == ' ' || c == '\t' || c == '\n') {
      if (in_word) words.push_back(std::move(word));
      word.clear();
      in_word = false;
    } else {
      word += c;
      in_word = true;
    }
  }
  if (quote != 0) return fail_usage(std::string("unterminated ") + quote + " quote");
  if (in_word) words.push_back(std::move(word));
  return words;
}

namespace {

// A Slurm job's values (job_values.hpp says which).
Expected<LayeredValues> slurm_layer(const slurm::Job& job, bool worker_per_task) {
  LayeredValues values;
  auto put = [&](std::string_view option, std::string text, std::string origin) {
    values[std::string(option)] =
        from_job_variables(std::move(text), option, std::move(origin), Source::slurm);
  };

  if (job.place == slurm::Place::allocation) {
    put(opt::nnodes, std::to_string(job.num_nodes.value), variable_text(job.num_nodes));
    if (job.gpus_on_node) {
      put(opt::nproc_per_node, std::to_string(job.gpus_on_node->value),
          variable_text(*job.gpus_on_node));
    }
    return values;
  }

  GANGRUN_TRY_ASSIGN(
      hosts, slurm::expand_hostlist(job.node_list.value).map_error([&](const Error& error) {
        return Error(ErrorCode::usage, job.node_list.variable + ": " + error.message());
      }));
  if (hosts->empty()) {
    return fail_usage(variable_text(job.node_list) + " names no node");
  }
  std::string job_and_step = variable_text(job.job_id);
  if (job.step_id) job_and_step += ", " + variable_text(*job.step_id);
  put(opt::rdzv_id, slurm::run_id(job), job_and_step);
  // One node keeps the single-node defaults, 127.0.0.1 and a free port, so
  // that two runs in one interactive step do not meet at the same port.
  int nodes = worker_per_task && job.num_tasks ? job.num_tasks->value : job.num_nodes.value;
  if (nodes > 1) {
    put(opt::master_addr, hosts->front(), slurm::head_node_origin(job));
    put(opt::master_port, std::to_string(slurm::store_port(job)), job_and_step);
  }

  if (worker_per_task && job.num_tasks && job.procid) {
    put(opt::nnodes, std::to_string(job.num_tasks->value),
        variable_text(*job.num_tasks) + ", one node per task with --worker-per-task");
    put(opt::node_rank, std::to_string(job.procid->value), variable_text(*job.procid));
    put(opt::nproc_per_node, "1", "one worker per task with --worker-per-task");
    return values;
  }
  put(opt::nnodes, std::to_string(job.num_nodes.value), variable_text(job.num_nodes));
  put(opt::node_rank, std::to_string(job.node_id->value), variable_text(*job.node_id));
  if (job.gpus_on_node) {
    put(opt::nproc_per_node, std::to_string(job.gpus_on_node->value),
        variable_text(*job.gpus_on_node));
  }
  return values;
}

// Another system's job's values (job_values.hpp says which).
LayeredValues scheduler_layer(const schedulers::Job& job) {
  LayeredValues values;
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

}  // namespace

Expected<LayeredValues> job_layer(const schedulers::Job& job, bool worker_per_task) {
  if (job.is_slurm()) return slurm_layer(*job.slurm, worker_per_task);
  return scheduler_layer(job);
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

Expected<void> check_slurm_job(const Options& options) {
  if (!options.job || !options.job->is_slurm()) {
    if (options.launcher == Options::Launcher::slurm) {
      return fail_usage(
          "--launcher slurm needs a Slurm allocation, and SLURM_JOB_ID is not set: run gangrun "
          "in an sbatch script or an salloc shell");
    }
    return {};
  }
  const slurm::Job& job = *options.job->slurm;
  if (job.place != slurm::Place::step || !job.tasks_on_node) return {};
  int tasks = job.tasks_on_node->value;
  if (options.worker_per_task) {
    if (!job.num_tasks || !job.procid || !job.local_id) {
      return fail_usage(
          "--worker-per-task needs SLURM_STEP_NUM_TASKS, SLURM_PROCID and SLURM_LOCALID, which "
          "srun sets for each task; run gangrun as an srun task");
    }
    return {};
  }
  if (tasks <= 1) return {};
  return fail_usage(
      "this srun step runs " + std::to_string(tasks) + " tasks on this node (" +
      variable_text(*job.tasks_on_node) +
      "), but gangrun is one agent per node that starts the node's workers itself. Run "
      "'srun --ntasks-per-node=1 gangrun --nproc_per_node N ...' (or 'sbatch ... --wrap "
      "\"gangrun ...\"' without srun), or give --worker-per-task to make each srun task one "
      "worker");
}

}  // namespace gangrun::config
