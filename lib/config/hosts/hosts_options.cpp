// The options of hostfiles and starting gangrun on other hosts, as rows of the option table.
#include "config/hosts/hosts_values.hpp"
#include "config/option_apply.hpp"
#include "config/option_table.hpp"
#include "config/option_values.hpp"

namespace gangrun::config {

std::vector<OptionSpec> hosts_option_specs() {
  return {
      {.name = "hostfile",
       .short_name = 'H',
       .group = OptionGroup::hosts,
       .metavar = "FILE",
       .value_hint = ValueHint::file,
       .help = "hosts to run on (deepspeed's format: 'HOST slots=N' lines, # comments); gangrun "
               "starts itself on each over ssh, node ranks in file order. --include/--exclude "
               "then take HOST:SLOT,SLOT@HOST; a node count takes the first hosts, --num_gpus N "
               "slots 0..N-1 of each",
       .apply = into_settings<&Options::hosts, &HostsSettings::hostfile, non_empty_text>},
      {.name = "ssh_port",
       .group = OptionGroup::hosts,
       .metavar = "PORT",
       .help = "port of the hosts' ssh servers (ssh -p PORT). Default: ssh's own",
       .apply = into_settings<&Options::hosts, &HostsSettings::ssh_port, parse_ssh_port>},
      {.name = "no_ssh_check",
       .group = OptionGroup::hosts,
       .kind = OptionKind::flag,
       .help = "accepted for deepspeed compatibility: gangrun needs no separate ssh check (a host "
               "ssh cannot reach stops the whole job with ssh's message)",
       .apply = into_settings<&Options::hosts, &HostsSettings::no_ssh_check, parse_bool>},
  };
}

}  // namespace gangrun::config
