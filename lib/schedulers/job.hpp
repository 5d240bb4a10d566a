// The job gangrun runs in, in one shape for every system, read from the
// variables it sets: Slurm, PBS/Torque, LSF, Kubeflow's PyTorchJob,
// SkyPilot, and MPI launchers (Open MPI, MPICH/Hydra, Intel MPI). Slurm's
// reader (slurm/job_environment.hpp) reads more of a job than the others:
// its job carries that as Job::slurm. Only the environment and the files it
// names are read; nothing asks the scheduler.
#pragma once

#include "slurm/job_environment.hpp"
#include "slurm/variables.hpp"
#include "util/env.hpp"
#include "util/error.hpp"

#include <functional>
#include <optional>
#include <string>
#include <vector>

namespace gangrun::schedulers {

// A value and the variable it was read from ("PBS_JOBID", its text), so that
// --dry-run -v and messages can name where each derived option came from.
using slurm::Read;

// Who starts gangrun on the job's nodes.
enum class Start {
  // The scheduler (or mpirun) starts one gangrun on every node, and tells each
  // its node rank: Kubeflow's pods, SkyPilot's run section, mpirun's tasks.
  every_node,
  // The job script runs on the first node only, with the list of every node
  // (PBS, LSF): gangrun starts itself on the others over ssh, as it does
  // with a hostfile.
  first_node,
};

// One host of the job and how many slots (processes) the scheduler gave it
// there: PBS_NODEFILE repeats a host once per slot, LSB_MCPU_HOSTS pairs
// names with counts.
struct Host {
  std::string name;
  int slots = 0;
  bool operator==(const Host&) const = default;
};

struct Job {
  // "Slurm", "PBS", "LSF", "Kubeflow PyTorchJob", "SkyPilot", "Open MPI", ...
  std::string system;
  Start start = Start::every_node;
  // The run id's source (TORCHELASTIC_RUN_ID); Slurm's: SLURM_JOB_ID.
  std::optional<Read<std::string>> job_id;
  Read<int> num_nodes;  // how many gangrun agents the job has
  // every_node: this agent's node rank, the head node that hosts the store
  // (its name or address) and, when the system gives one, the store's port.
  std::optional<Read<int>> node_rank;
  std::optional<Read<std::string>> head;
  std::optional<Read<int>> port;
  // Workers per node, where the system says (SkyPilot's GPUs per node,
  // PET_NPROC_PER_NODE); one with one worker per MPI task.
  std::optional<Read<int>> workers_per_node;
  // MPI tasks: this task's index among the tasks on its host and how many
  // run there (OMPI_COMM_WORLD_LOCAL_RANK/_SIZE, MPI_LOCALRANKID/
  // MPI_LOCALNRANKS), for --worker-per-task's LOCAL_RANK as srun's are.
  std::optional<Read<int>> local_rank;
  std::optional<Read<int>> tasks_on_node;
  // first_node: every host in node order, this one first, and where the list
  // came from ("PBS_NODEFILE=/var/spool/pbs/aux/17.pbs").
  std::vector<Host> hosts;
  std::string hosts_origin;
  // A Slurm job: all that its reader read (its place, step, node list,
  // tasks, GPUs), which config/job_values.cpp and remote/srun_start.cpp
  // read. Of the fields above it sets system, job_id and num_nodes only;
  // the rest stay empty (srun, not this shape, starts gangrun on its nodes).
  std::optional<slurm::Job> slurm;
  bool is_slurm() const { return slurm.has_value(); }
  bool operator==(const Job&) const = default;
};

// A Slurm job in the one shape: system "Slurm", its job id and node count,
// and all of it in Job::slurm.
Job from_slurm(slurm::Job job);

// What a reader needs besides the environment: how to read a file the job
// names (config's read_user_file, so that this module opens no file itself),
// this host's name, to find it in a list of the job's hosts, and whether
// each MPI task runs one worker (--worker-per-task, mpi_job.hpp).
struct Context {
  std::function<Expected<std::string>(const std::string& path)> read_file;
  std::string host_name;
  bool worker_per_task = false;
};

// The job gangrun runs in, or nullopt under none: the first system whose
// variables are set, asked in the one order of job_readers.cpp (an MPI
// launcher's task, Slurm, Kubeflow, SkyPilot, PBS, LSF). A system whose
// variables are there but do not describe a job gangrun can run in gives
// the usage error, naming the variable or file and what to do; the systems
// after it are not asked.
Expected<std::optional<Job>> read_job(const EnvMap& env, const Context& context);

// Where the head came from, for messages and --dry-run -v: "the head node:
// MASTER_ADDR=train-master-0", "the head node: the first of SKYPILOT_NODE_IPS".
std::string head_origin(const Job& job);

// The job in one line, the same for every system, for the dry runs (the
// plan's, launch/dry_run.cpp, and the ssh start's, remote/ssh_start.cpp):
// "Slurm job 4711, node 1 of 3", "PBS job 1742.pbs-server, node 0 of 2,
// hosts from PBS_NODEFILE=PATH", "MPICH/Intel MPI (Hydra), no job id, node 1
// of 2". The node and the count are the caller's: the job's, unless an
// option set them.
std::string job_line(const Job& job, int node_rank, int nnodes);

}  // namespace gangrun::schedulers
