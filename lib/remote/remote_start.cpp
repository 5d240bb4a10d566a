#include "remote/remote_start.hpp"

#include "launch/program.hpp"
#include "remote/mpirun_start.hpp"
#include "remote/srun_start.hpp"
#include "remote/ssh_start.hpp"
#include "util/exit_codes.hpp"

#include <array>

namespace gangrun::remote {

namespace {

// srun before ssh: inside a Slurm job a hostfile is refused unless
// --launcher ssh asks for it, and that refusal is ssh's to give once srun
// declined. mpirun's question refuses nothing, so it comes last.
constexpr auto k_remote_starts = std::to_array<RemoteStart>({
    {.name = "srun",
     .applies = starts_through_srun,
     .dry_run = srun_dry_run_for,
     .run = run_through_srun,
     .runs_preflight = true},
    {.name = "ssh",
     .applies = starts_through_ssh,
     .dry_run = ssh_dry_run_for,
     .run = run_through_ssh,
     .runs_preflight = true},
    {.name = "mpirun",
     .applies = starts_through_mpirun,
     .dry_run = mpirun_dry_run_for,
     .run = run_through_mpirun,
     .runs_preflight = false},
});

}  // namespace

std::span<const RemoteStart> remote_starts() { return k_remote_starts; }

Expected<const RemoteStart*> remote_start_for(const config::Options& options) {
  for (const RemoteStart& start : k_remote_starts) {
    GANGRUN_TRY_ASSIGN(applies, start.applies(options));
    if (*applies) return &start;
  }
  return nullptr;
}

Expected<std::optional<int>> start_remotely(const config::Options& options,
                                            const std::vector<std::string>& arguments,
                                            const EnvMap& env, std::ostream& out) {
  GANGRUN_TRY_ASSIGN(start, remote_start_for(options));
  if (*start == nullptr) return std::nullopt;
  // Devices are each node's own and are checked there.
  GANGRUN_TRY(launch::resolve_program(options, env));
  if (options.dry_run) {
    GANGRUN_TRY_ASSIGN(text, (*start)->dry_run(options, arguments, env));
    out << *text;
    return exit_codes::k_success;
  }
  GANGRUN_TRY_ASSIGN(code, (*start)->run(options, arguments, env));
  return *code;
}

std::string self_option(std::string_view name) { return "--" + std::string(name); }

}  // namespace gangrun::remote
