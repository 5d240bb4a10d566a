# libsodium 1.0.18 as a static library (gangrun_libsodium) from Debian's source
# (GANGRUN_SODIUM_SOURCE, set by static_dependencies.cmake). Its own build is autotools:
# configure and autoreconf cost more than compiling it, and cross-compiling through them
# with zig needs wrappers; this builds the same C files with what its configure finds on
# Linux with glibc 2.28, and no assembly and no SIMD variants (their files compile empty
# without the HAVE_*INTRIN_H macros, and the portable implementations are used; gangrun
# needs HMAC-SHA-256 and random bytes only). version.h is made as configure makes it.
set(sodium_dir "${GANGRUN_SODIUM_SOURCE}/src/libsodium")
file(STRINGS "${GANGRUN_SODIUM_SOURCE}/configure.ac" sodium_init REGEX "^AC_INIT\\(\\[libsodium\\],\\[[0-9.]+\\]")
string(REGEX MATCH "[0-9]+\\.[0-9]+\\.[0-9]+" VERSION "${sodium_init}")
if(NOT VERSION STREQUAL "1.0.18")
  message(FATAL_ERROR "${GANGRUN_SODIUM_SOURCE} is libsodium '${VERSION}'; this build describes 1.0.18")
endif()
set(SODIUM_LIBRARY_VERSION_MAJOR 10)  # configure.ac of 1.0.18
set(SODIUM_LIBRARY_VERSION_MINOR 3)
set(SODIUM_LIBRARY_MINIMAL_DEF "")
set(sodium_generated "${PROJECT_BINARY_DIR}/static-deps/libsodium/include/sodium")
configure_file("${sodium_dir}/include/sodium/version.h.in" "${sodium_generated}/version.h" @ONLY)

file(GLOB_RECURSE sodium_sources CONFIGURE_DEPENDS "${sodium_dir}/*.c")
add_library(gangrun_libsodium STATIC ${sodium_sources})
target_include_directories(gangrun_libsodium SYSTEM
  # sodium/version.h, made here, includes "export.h" beside the others.
  PUBLIC "${sodium_generated}/.." "${sodium_dir}/include" "${sodium_dir}/include/sodium"
  PRIVATE "${sodium_generated}")
target_compile_definitions(gangrun_libsodium
  PUBLIC SODIUM_STATIC
  PRIVATE CONFIGURED=1 _GNU_SOURCE=1 NATIVE_LITTLE_ENDIAN=1 HAVE_TI_MODE=1 HAVE_C_VARARRAYS=1
          HAVE_ATOMIC_OPS=1 HAVE_WEAK_SYMBOLS=1 HAVE_PTHREAD=1 HAVE_SYS_MMAN_H=1 HAVE_MMAP=1
          HAVE_MPROTECT=1 HAVE_MLOCK=1 HAVE_MADVISE=1 HAVE_GETPID=1 HAVE_POSIX_MEMALIGN=1
          HAVE_NANOSLEEP=1 HAVE_SYS_RANDOM_H=1 HAVE_GETRANDOM=1)
# As its configure does: signed overflow wraps, no strict aliasing, no warnings of ours.
target_compile_options(gangrun_libsodium PRIVATE -fwrapv -fno-strict-aliasing -w)
set_target_properties(gangrun_libsodium PROPERTIES C_STANDARD 99 POSITION_INDEPENDENT_CODE OFF)
