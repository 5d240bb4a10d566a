// Hostfiles over ssh: gangrun starts itself on every host of the hostfile
// (after --include/--exclude/--num_nodes/--num_gpus, config/hosts/hostfile.hpp)
// with OpenSSH, as deepspeed does with pdsh. Each copy is one node of a
// static rendezvous (node rank = the host's place in the file, the store on
// the first host); the gangrun that called ssh waits for every copy and
// ends with the job's code.
//
// Teardown: ssh passes no signal without a terminal, so each remote
// command watches its stdin, a pipe this gangrun holds open and never
// writes; when it closes (this gangrun stops the job, ends, or is killed
// by any signal, or the connection drops), the remote side sends SIGTERM to
// its gangrun, which stops its workers.
#pragma once

#include "config/options.hpp"
#include "util/env.hpp"
#include "util/error.hpp"

#include <optional>
#include <string>
#include <vector>

namespace gangrun::remote {

// Whether options ask for the ssh start (--launcher ssh or pdsh, or a
// hostfile naming other hosts; config/hosts/hosts_values.cpp decided). A usage
// error when --launcher auto meets a hostfile inside a Slurm job, where
// both could place the nodes.
Expected<bool> starts_through_ssh(const config::Options& options);

// What every copy runs besides its node's own options: `arguments` (argv
// without argv[0]) less the options that choose hosts, nodes, ranks, the
// store address and the per-node count, which ssh_command() gives anew.
// Words from the program on are kept as they are.
std::vector<std::string> remote_arguments(const std::vector<std::string>& arguments);

// The variables the copies get, as deepspeed exports them: those whose names
// start with MLFLOW, PYTHON, MV2, UCX or NCCL, and PATH; PYTHONPATH gets
// `cwd` in front. (run_through_ssh adds the .deepspeed_env files' lines,
// config/deepspeed/deepspeed_env_file.hpp.)
EnvMap exported_variables(const EnvMap& env, const std::string& cwd);

// What the copies on every host get (over ssh or through mpirun):
// exported_variables(), then the lines of the .deepspeed_env files
// (config/deepspeed/deepspeed_env_file.hpp), which win, as deepspeed adds them after.
// Errors: a .deepspeed_env file that cannot be read.
Expected<EnvMap> variables_for_hosts(const EnvMap& env, const std::string& cwd);

// "node1 (2), node2 (4)": every host and its worker count, for the line
// that says where the job starts.
std::string hosts_and_slots(const config::Options& options);

// The ssh command line for host `index` of options.hosts.hosts, argv[0] =
// ssh's path: `ssh -o BatchMode=yes [-p PORT] LAUNCHER_ARGS HOST 'sh -c
// SCRIPT'`, where SCRIPT enters cwd and runs `env VARS self --launcher
// local --nnodes N --node_rank I --master_addr FIRST_HOST --master_port P
// --nproc_per_node SLOTS [--include localhost:IDS, for ids other than
// 0..SLOTS-1 unless --accelerator cpu] [--rdzv_id RUN_ID] REMOTE_ARGS`
// under the stdin watch described above. run_id: the same for every host
// (tool_start.hpp's run_id_for_hosts).
std::vector<std::string> ssh_command(const config::Options& options, std::size_t index,
                                     const std::string& ssh, const std::string& self,
                                     const std::vector<std::string>& remote_args,
                                     const std::string& cwd, const EnvMap& exported,
                                     const std::optional<std::string>& run_id);

// Where the hosts came from: "-H/--hostfile FILE", or "the hosts of PBS job
// 17.pbs (PBS_NODEFILE=PATH)" when a scheduler's job script runs gangrun.
std::string hosts_origin(const config::Options& options);

// The dry run's `job:` line, the same as under every other system
// (schedulers::job_line), when the hosts are a PBS or LSF job's: this
// gangrun, on the job's first host, is node 0 of the hosts. Empty under a
// hostfile.
std::string hosts_job_line(const config::Options& options);

// "gangrun dry run: gangrun would start itself on N hosts over ssh, ORIGIN,
// one command per host:", `job_line` (hosts_job_line()) and one quoted
// command per host.
std::string ssh_dry_run_text(const std::vector<std::vector<std::string>>& commands,
                             const std::string& origin, const std::string& job_line);

// ssh_dry_run_text() of the commands run_through_ssh() would run. Errors:
// a .deepspeed_env file that cannot be read.
Expected<std::string> ssh_dry_run_for(const config::Options& options,
                                      const std::vector<std::string>& arguments, const EnvMap& env);

// Starts every host's copy through ssh (found on PATH), stops the others
// as soon as one ends with a failure, and passes TERM, INT, HUP and QUIT on
// as the stop above. The copies get exported_variables() and the lines of
// the .deepspeed_env files. Returns the job's exit code: 3 (a network failure, with
// an error line naming the host) when ssh itself failed (its code 255),
// else the code of the first host to end with a failure, else 0. Errors: ssh or gangrun's own path
// not found, ssh not started. Call from the main thread.
Expected<int> run_through_ssh(const config::Options& options,
                              const std::vector<std::string>& arguments, const EnvMap& env);

}  // namespace gangrun::remote
