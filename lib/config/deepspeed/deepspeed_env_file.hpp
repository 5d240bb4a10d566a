// deepspeed's .deepspeed_env files: KEY=VALUE lines that the deepspeed runner
// exports to the workers of every node when it starts the nodes itself (over
// ssh, pdsh, MPI or Slurm). A launch on one node, or nodes each started by
// hand (deepspeed --no_ssh), does not read them; neither does gangrun then.
#pragma once

#include "util/env.hpp"
#include "util/error.hpp"

#include <string>
#include <string_view>

namespace gangrun::config {

// The variables of the files deepspeed reads, in its order: the file named
// $DS_ENV_FILE (default .deepspeed_env) in $HOME, then in cwd; a later file's
// value wins. A relative DS_ENV_FILE is found in each directory; an absolute
// one is that file. Missing files are skipped. In each line, KEY and VALUE
// are trimmed of blanks at both ends and otherwise taken as they are (the
// remote shell deepspeed goes through would expand $ in a value; gangrun
// passes it literally). Blank lines and lines starting with # are skipped
// (deepspeed fails on them). Usage errors, naming the file and line: a line
// without '=' or with an empty name, a NUL in a name or value; and, naming
// the file, one that cannot be read or is larger than 1 MiB
// (read_user_file in config_file.hpp).
Expected<EnvMap> read_deepspeed_env_files(const EnvMap& env, const std::string& cwd);

// The variables of one file's text; `file` names it in errors.
Expected<EnvMap> parse_deepspeed_env(std::string_view text, const std::string& file);

}  // namespace gangrun::config
