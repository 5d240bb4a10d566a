#pragma once
// close_range(2) for C libraries without its wrapper: glibc before 2.34. Boost 1.81's
// Process v2 calls ::close_range whenever the kernel headers are 5.11 or newer, and the
// wheel's binary is built against glibc 2.28's declarations (docs/building.md, "The
// wheel"), so process.cpp includes this before Boost's headers. The definition, in
// close_range.cpp, is the system call itself, as glibc's wrapper is.
#include <unistd.h>

#if defined(__GLIBC__) && !__GLIBC_PREREQ(2, 34)
#define GANGRUN_DEFINES_CLOSE_RANGE 1
extern "C" int close_range(unsigned int first, unsigned int last, int flags) noexcept;
#endif
