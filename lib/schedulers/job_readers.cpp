// The one list of the systems gangrun reads a job from, in the order they
// are asked. The first whose variables are set wins, so the order decides
// where one system's variables show through another's:
// - an MPI launcher's task comes first: Open MPI's mpirun starts its daemons
//   on a Slurm allocation's nodes through srun, so its tasks see a Slurm
//   step too (mpi_job.hpp says how a task of srun --mpi=pmi2 is left to
//   Slurm);
// - then Slurm, whose reader reads more of a job than the others (kept
//   whole in Job::slurm);
// - then Kubeflow and SkyPilot, whose pods and nodes start gangrun on every
//   node, before PBS and LSF, whose job script runs on the first one.
#include "schedulers/job.hpp"
#include "schedulers/mpi_job.hpp"
#include "schedulers/readers.hpp"

#include <string_view>

namespace gangrun::schedulers {

namespace {

using Reader = Expected<std::optional<Job>> (*)(const EnvMap& env, const Context& context);

struct JobReader {
  std::string_view system;  // for whoever reads this list
  Reader read;
};

// Slurm's reader, whose job becomes the one shape with all it read kept.
Expected<std::optional<Job>> read_slurm_job(const EnvMap& env, const Context&) {
  GANGRUN_TRY_ASSIGN(found, slurm::read_job(env));
  if (!*found) return std::optional<Job>();
  return std::optional<Job>(from_slurm(std::move(**found)));
}

constexpr JobReader k_job_readers[] = {
    {"MPI",
     [](const EnvMap& env, const Context& c) { return read_mpi_job(env, c.worker_per_task); }},
    {"Slurm", read_slurm_job},
    {"Kubeflow", [](const EnvMap& env, const Context&) { return read_kubeflow_job(env); }},
    {"SkyPilot", [](const EnvMap& env, const Context&) { return read_skypilot_job(env); }},
    {"PBS", read_pbs_job},
    {"LSF", read_lsf_job},
};

}  // namespace

Expected<std::optional<Job>> read_job(const EnvMap& env, const Context& context) {
  for (const JobReader& reader : k_job_readers) {
    GANGRUN_TRY_ASSIGN(found, reader.read(env, context));
    if (*found) return found;
  }
  return std::optional<Job>();
}

}  // namespace gangrun::schedulers
