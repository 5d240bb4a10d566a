# x86_64 Linux, glibc 2.28 or newer (RHEL 8, Ubuntu 20.04): the wheel's manylinux_2_28_x86_64.
set(GANGRUN_ZIG_TARGET x86_64-linux-gnu.2.28)
include(${CMAKE_CURRENT_LIST_DIR}/zig.cmake)
