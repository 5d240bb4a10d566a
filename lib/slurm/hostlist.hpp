// Slurm hostlist expressions, the compressed form in which Slurm writes node
// lists (SLURM_JOB_NODELIST="node[01-04,07],gpu[1-2]"), expanded without
// asking Slurm.
#pragma once

#include "util/error.hpp"

#include <cstddef>
#include <string>
#include <string_view>
#include <vector>

namespace gangrun::slurm {

// Slurm's own limit on the hosts of one range ("a[0-65535]" is the largest).
inline constexpr std::size_t k_max_hosts_per_range = 65536;
// Our limit on the hosts of a whole expression, so that a typo such as
// "a[0-9999]b[0-9999]" fails instead of exhausting memory. Slurm 22.05 has
// none; 2^20 is ten times the largest cluster Slurm schedules.
inline constexpr std::size_t k_max_hosts = std::size_t{1} << 20;

// Expands a Slurm hostlist expression ("node[01-04,07],gpu[1-2]-ib x") into
// host names, in order, duplicates kept: exactly what `scontrol show hostnames`
// prints. Fails (ErrorCode::usage) with a message naming the expression and
// what is wrong in it ("invalid hostlist 'a[5-3]': range 5-3 runs backwards").
//
// Separators (',', ' ', '\t', '\n') outside brackets split hosts and collapse;
// an empty or blank expression is an empty list. A number's width is that of
// the low bound of its range ("a[08-11]": a08 .. a11). With several bracket
// groups in one host the last varies fastest, then the others from the first
// ("a[1-2]b[1-2]c[1-2]": a1b1c1 a1b1c2 a2b1c1 a2b1c2 a1b2c1 ...), as Slurm does.
//
// Where Slurm 22.05 differs, we follow newer Slurm or refuse: text after the
// last group is a suffix ("n[1-3]-ib": n1-ib n2-ib n3-ib; 22.05 rejects it);
// a '[' without its ']' is an error (22.05 expands "a[1" to "a]"), and so is
// a ']' without '[' (22.05 takes "a]" as a name but garbles "a]b[1,2]" into
// "a]b]" and "2]", "x[1]][2,3]" into "x[1]]]" and "3]"); a bound is
// digits only (22.05 reads "a[ 1]" and "a[+1]" as a01); a bound above 2^64-1
// is an error (22.05 clamps it). Hostlist functions ("feature{gpu}"), which
// only the Slurm controller can expand, are refused, as are more than
// k_max_hosts_per_range hosts in one range and k_max_hosts in all.
Expected<std::vector<std::string>> expand_hostlist(std::string_view expression);

}  // namespace gangrun::slurm
