// gangrun's real main, all of app/main.cpp: the hidden probe mode
// (probe/probe_mode.hpp) when gangrun was re-executed to probe a device,
// else parse the command line, hand the Command to its subcommand's
// handler, report an error, and the one top-level catch.
#pragma once

namespace gangrun {

// Returns the process exit code (util/exit_codes.hpp). When gangrun was
// stopped by a signal it re-raises that signal with its default action
// after the workers are gone, so a shell sees 128+S.
int main(int argc, char** argv);

}  // namespace gangrun
