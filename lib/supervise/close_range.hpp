#pragma once
// Closing every descriptor in a range, in a forked child (async-signal-safe).
//
// close_descriptors() is how the shim closes what a worker must not inherit. close_range(2)
// came with Linux 5.9, and RHEL 8 and its kin run 4.18: there the system call fails with
// ENOSYS, every descriptor of gangrun's would stay open in the shims and the workers, and the
// copies of Boost's status pipe would keep gangrun waiting for its end of file forever. So it
// falls back to the descriptors /proc/self/fd lists, as glibc's closefrom() does, and without
// /proc to closing each number up to the open-file limit.
//
// close_range() for C libraries without its wrapper: glibc before 2.34. Boost 1.81's Process
// v2 calls ::close_range whenever the kernel headers are 5.11 or newer, and the wheel's binary
// is built against glibc 2.28's declarations (docs/building.md, "The wheel"), so process.cpp
// includes this before Boost's headers. The definition is the system call itself, as glibc's
// wrapper is.
#include <unistd.h>

#if defined(__GLIBC__) && !__GLIBC_PREREQ(2, 34)
#define GANGRUN_DEFINES_CLOSE_RANGE 1
extern "C" int close_range(unsigned int first, unsigned int last, int flags) noexcept;
#endif

namespace gangrun::supervise {

// Closes every open descriptor from first to last, both included.
void close_descriptors(unsigned int first, unsigned int last) noexcept;

}  // namespace gangrun::supervise
