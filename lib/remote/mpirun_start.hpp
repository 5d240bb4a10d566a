// deepspeed's `--launcher openmpi` and accelerate's `--mpirun_hostfile FILE`:
// gangrun starts itself through Open MPI's mpirun on every host of the
// hostfile (after --include/--exclude/--num_nodes/--num_gpus,
// config/hosts/hostfile.hpp), one MPI task per host. Each copy is one node of a
// static rendezvous that reads its node rank and the node count from the
// task's variables (schedulers/mpi_job.hpp), and the store's host from the
// MASTER_ADDR and MASTER_PORT mpirun exports to every task. The gangrun that
// called mpirun passes signals on and ends with mpirun's code, which is the
// first failed task's.
//
// Each host is an app context of its own (`-np 1 --host H ... : -np 1
// --host H2 ...`): MPI numbers the tasks in the contexts' order, so task i
// runs on host i whatever order mpirun keeps its node pool in (Open MPI
// puts its own host first), and each host gets its own worker count and
// devices.
//
// Teardown: SIGTERM to mpirun, which passes it to every task (each gangrun
// stops its workers); mpirun killed outright, its daemons lose their
// connection to it and kill their tasks, whose workers' shims end with them.
#pragma once

#include "config/options.hpp"
#include "util/env.hpp"
#include "util/error.hpp"

#include <optional>
#include <string>
#include <vector>

namespace gangrun::remote {

// Whether options ask for the mpirun start (--launcher openmpi, or
// accelerate's --mpirun_hostfile; config/hosts/hosts_values.cpp read the hosts).
// Never an error: config refused what contradicts it. Expected for
// RemoteStart (remote_start.hpp).
Expected<bool> starts_through_mpirun(const config::Options& options);

// The mpirun command line, argv[0] = mpirun's path: `mpirun
// [--allow-run-as-root] --wdir CWD LAUNCHER_ARGS` then, per host, `-np 1
// --host HOST -x NAME[=VALUE]... self --nproc_per_node SLOTS [--include
// localhost:IDS] [--rdzv_id RUN_ID] REMOTE_ARGS`, the contexts joined by
// ':'; run_id is the same for every host (tool_start.hpp's
// run_id_for_hosts). Exported to
// every task: MASTER_ADDR (the first host, or the user's --master_addr),
// MASTER_PORT (--master_port, else 29500), GANGRUN_JOB_SECRET by name only
// (its value stays out of the command line), and `exported` (PATH,
// PYTHONPATH with cwd in front, NCCL_*, ..., the .deepspeed_env lines).
// remote_args: ssh_start's remote_arguments() of gangrun's own arguments.
std::vector<std::string> mpirun_command(const config::Options& options, const std::string& mpirun,
                                        const std::string& self,
                                        const std::vector<std::string>& remote_args,
                                        const std::string& cwd, const EnvMap& exported,
                                        bool as_root, const std::optional<std::string>& run_id);

// "gangrun dry run: gangrun would start itself on N host(s) through
// mpirun, one task per host:", the job line of a PBS or LSF job's hosts
// (hosts_job_line) and the quoted command. Errors: a
// .deepspeed_env file that cannot be read.
Expected<std::string> mpirun_dry_run_for(const config::Options& options,
                                         const std::vector<std::string>& arguments,
                                         const EnvMap& env);

// Runs mpirun (found on PATH) with mpirun_command(), passing TERM, INT,
// HUP and QUIT on as TERM, USR1 and USR2 as they are (mpirun forwards
// them to every task). Returns mpirun's exit code, or 128+S if mpirun was
// killed by S. Errors: mpirun or gangrun's own path not found, mpirun not
// started. Call from the main thread.
Expected<int> run_through_mpirun(const config::Options& options,
                                 const std::vector<std::string>& arguments, const EnvMap& env);

}  // namespace gangrun::remote
