#include "supervise/close_range.hpp"

#ifdef GANGRUN_DEFINES_CLOSE_RANGE
#include <sys/syscall.h>

extern "C" int close_range(unsigned int first, unsigned int last, int flags) noexcept {
  return static_cast<int>(::syscall(SYS_close_range, first, last, flags));
}
#endif
