# aarch64 Linux, glibc 2.28 or newer: the wheel's manylinux_2_28_aarch64. Programs the build
# runs (gen_man, which writes the manual page) run under qemu-aarch64 (Debian's qemu-user)
# with Debian's arm64 C library (libc6-arm64-cross) as their root.
set(GANGRUN_ZIG_TARGET aarch64-linux-gnu.2.28)
include(${CMAKE_CURRENT_LIST_DIR}/zig.cmake)
if(NOT CMAKE_CROSSCOMPILING_EMULATOR)
  find_program(GANGRUN_QEMU_AARCH64 qemu-aarch64)
  if(GANGRUN_QEMU_AARCH64)
    set(CMAKE_CROSSCOMPILING_EMULATOR ${GANGRUN_QEMU_AARCH64} -L /usr/aarch64-linux-gnu)
  endif()
endif()
