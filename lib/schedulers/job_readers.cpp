// The one list of the systems gangrun reads a job from, in the order they
// are asked. The first whose variables are set wins, so the order decides
// where one system's variables show through another's:
// - an MPI launcher's task comes first: Open MPI's mpirun starts its daemons
//   on a Slurm allocation's nodes through srun, so its tasks see a Slurm
//   step too (mpi_job.hpp says how a task of srun --mpi=pmi2 is left to
//   Slurm);
// - then Slurm, whose reader reads more of a job than the others;
// - then Kubeflow and SkyPilot, whose pods and nodes start gangrun on every
//   node, before PBS and LSF, whose job script runs on the first one.
#include "schedulers/job.hpp"
#include "schedulers/mpi_job.hpp"
#include "schedulers/readers.hpp"

#include <string_view>

namespace gangrun::schedulers {

namespace {

using Reader = Expected<std::optional<AnyJob>> (*)(const EnvMap& env, const Context& context);

struct JobReader {
  std::string_view system;  // for whoever reads this list
  Reader read;
};

// A reader of some job type, as a reader of AnyJob.
template <typename Found>
Expected<std::optional<AnyJob>> as_any(Expected<std::optional<Found>> found) {
  if (!found) return tl::unexpected(found.error());
  if (!*found) return std::optional<AnyJob>();
  return std::optional<AnyJob>(AnyJob(std::move(**found)));
}

constexpr JobReader k_job_readers[] = {
    {"MPI", [](const EnvMap& env,
               const Context& c) { return as_any(read_mpi_job(env, c.worker_per_task)); }},
    {"Slurm", [](const EnvMap& env, const Context&) { return as_any(slurm::read_job(env)); }},
    {"Kubeflow", [](const EnvMap& env, const Context&) { return as_any(read_kubeflow_job(env)); }},
    {"SkyPilot", [](const EnvMap& env, const Context&) { return as_any(read_skypilot_job(env)); }},
    {"PBS", [](const EnvMap& env, const Context& c) { return as_any(read_pbs_job(env, c)); }},
    {"LSF", [](const EnvMap& env, const Context& c) { return as_any(read_lsf_job(env, c)); }},
};

}  // namespace

Expected<std::optional<AnyJob>> read_job(const EnvMap& env, const Context& context) {
  for (const JobReader& reader : k_job_readers) {
    GANGRUN_TRY_ASSIGN(found, reader.read(env, context));
    if (*found) return found;
  }
  return std::optional<AnyJob>();
}

}  // namespace gangrun::schedulers
