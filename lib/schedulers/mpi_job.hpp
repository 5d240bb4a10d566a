// What an MPI launcher's variables say about the gangrun it started: Open
// MPI's mpirun/mpiexec (OMPI_COMM_WORLD_*, PMIx), MVAPICH2's mpirun_rsh
// (MV2_COMM_WORLD_*), MPICH's Hydra and Intel MPI (PMI_RANK, PMI_SIZE,
// MPI_LOCALRANKID, MPI_LOCALNRANKS). Pure: only the EnvMap is read.
//
// No MPI launcher names the host of rank 0 in the tasks' environment (Open
// MPI's OMPI_MCA_orte_hnp_uri is mpirun's own host, which need not run a
// task), so the head comes from MASTER_ADDR/MASTER_PORT when the user
// exported them to every task (`mpirun -x MASTER_ADDR=...`, as gangrun's
// own --launcher openmpi does), or from the user's --master_addr.
//
// srun --mpi=pmi2 sets PMI_RANK and PMI_SIZE too, but no MPI_LOCALNRANKS,
// which every Hydra sets: such a task in a Slurm step is left to the Slurm
// reader (slurm/job_environment.hpp). Open MPI's and Hydra's tasks under
// Slurm (their daemons started through srun) are MPI's.
#pragma once

#include "schedulers/job.hpp"

namespace gangrun::schedulers {

// The job, or nullopt when no MPI launcher started this process (none of
// the rank and size variables above is set). Each MPI task is one gangrun
// agent (a node): num_nodes is the world size, node_rank the task's world
// rank; with worker_per_task that agent runs one worker (workers_per_node
// 1, local_rank and tasks_on_node say where it stands on its host).
// head: MASTER_ADDR when set, else 127.0.0.1 when every task runs on this
// host, else unset (check_mpi_head() says what to do). port: MASTER_PORT
// when set, else one derived from the job id (as for Slurm jobs, so that
// concurrent jobs on one head do not meet), else unset. Usage errors name
// the variable and its text: a rank or size that is not a count, a rank
// outside the world, several tasks on this host without worker_per_task
// (gangrun is one agent per node that starts the node's workers itself).
Expected<std::optional<Job>> read_mpi_job(const EnvMap& env, bool worker_per_task);

// The usage error for a job of several agents whose head nothing names:
// neither its variables (no MASTER_ADDR) nor the user (ask this only when
// no --master_addr or --rdzv_endpoint was given). It names the rank
// variable and says how to export MASTER_ADDR or which option to give.
Expected<void> check_mpi_head(const Job& job);

}  // namespace gangrun::schedulers
