#include "supervise/close_range.hpp"

#include <fcntl.h>
#include <sys/resource.h>
#include <sys/syscall.h>

#include <cerrno>
#include <cstddef>
#include <cstdint>

#ifdef GANGRUN_DEFINES_CLOSE_RANGE
extern "C" int close_range(unsigned int first, unsigned int last, int flags) noexcept {
  return static_cast<int>(::syscall(SYS_close_range, first, last, flags));
}
#endif

namespace gangrun::supervise {
namespace {

// One record of getdents64(2); the C library declares it only from glibc 2.30 on.
struct DirectoryEntry {
  std::uint64_t inode;
  std::int64_t next_offset;
  unsigned short length;
  unsigned char type;
  char name[1];
};

// A descriptor's number from its name in /proc/self/fd; -1 for "." and "..".
long descriptor_number(const char* name) {
  if (*name == '\0') return -1;
  long number = 0;
  for (; *name != '\0'; ++name) {
    if (*name < '0' || *name > '9') return -1;
    number = number * 10 + (*name - '0');
  }
  return number;
}

// False when /proc/self/fd cannot be read (no /proc in this mount namespace).
bool close_listed_descriptors(unsigned int first, unsigned int last) {
  int directory = ::open("/proc/self/fd", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (directory < 0) return false;
  // The kernel lists a process's descriptors by number from where the last read stopped, so
  // closing the ones already read hides none of the others.
  alignas(DirectoryEntry) char buffer[4096];
  for (;;) {
    long bytes = ::syscall(SYS_getdents64, directory, buffer, sizeof buffer);
    if (bytes <= 0) break;
    for (long at = 0; at < bytes;) {
      const auto* entry = reinterpret_cast<const DirectoryEntry*>(buffer + at);
      at += entry->length;
      long fd = descriptor_number(entry->name);
      if (fd < 0 || fd == directory || fd < first || fd > last) continue;
      ::close(static_cast<int>(fd));
    }
  }
  ::close(directory);
  return true;
}

void close_each_number(unsigned int first, unsigned int last) {
  rlimit limit{};
  if (::getrlimit(RLIMIT_NOFILE, &limit) != 0 || limit.rlim_cur == RLIM_INFINITY) return;
  if (limit.rlim_cur == 0) return;
  auto highest = static_cast<unsigned int>(limit.rlim_cur - 1);
  for (unsigned int fd = first; fd <= last && fd <= highest; ++fd) ::close(static_cast<int>(fd));
}

}  // namespace

void close_descriptors(unsigned int first, unsigned int last) noexcept {
  if (first > last) return;
  if (::syscall(SYS_close_range, first, last, 0) == 0 || errno != ENOSYS) return;
  if (!close_listed_descriptors(first, last)) close_each_number(first, last);
}

}  // namespace gangrun::supervise
