# Cross-compiles with `zig cc` / `zig c++` (the ziglang package on PyPI) for one target,
# GANGRUN_ZIG_TARGET, such as x86_64-linux-gnu.2.28: the binary links against that glibc
# version's symbols only (zig ships the stubs of every glibc release) and against zig's
# own libc++, libc++abi and libunwind statically, so it needs nothing but the C library
# of any distribution with that glibc or a newer one. Included by the per-target files
# beside this one; see docs/building.md, "The wheel".
#
# The zig executable: the cache variable GANGRUN_ZIG, else $ZIG, else `zig` on PATH.
# scripts/build-wheel passes the one installed in .venv-wheel/.
if(NOT GANGRUN_ZIG_TARGET MATCHES "^([a-z0-9_]+)-linux-gnu\\.[0-9.]+$")
  message(FATAL_ERROR "GANGRUN_ZIG_TARGET must be ARCH-linux-gnu.GLIBC, not '${GANGRUN_ZIG_TARGET}'")
endif()
# Another architecture than the build machine's is a cross build: programs the build runs
# (gen_man) then need CMAKE_CROSSCOMPILING_EMULATOR. The same architecture is not, and they
# run as they are.
if(NOT CMAKE_MATCH_1 STREQUAL CMAKE_HOST_SYSTEM_PROCESSOR)
  set(CMAKE_SYSTEM_NAME Linux)
  set(CMAKE_SYSTEM_PROCESSOR ${CMAKE_MATCH_1})
endif()

if(NOT GANGRUN_ZIG)
  if(DEFINED ENV{ZIG})
    set(GANGRUN_ZIG "$ENV{ZIG}")
  else()
    find_program(GANGRUN_ZIG zig)
  endif()
endif()
if(NOT GANGRUN_ZIG OR NOT EXISTS "${GANGRUN_ZIG}")
  message(FATAL_ERROR "zig not found: set ZIG or -DGANGRUN_ZIG to the zig executable "
                      "(scripts/install-deps installs the ziglang package into .venv-wheel/)")
endif()
set(GANGRUN_ZIG "${GANGRUN_ZIG}" CACHE FILEPATH "The zig executable that compiles and links")
# try_compile projects read this file again: they get the values from here.
list(APPEND CMAKE_TRY_COMPILE_PLATFORM_VARIABLES GANGRUN_ZIG GANGRUN_ZIG_TARGET)

# A compiler given as a list: the executable, then the arguments every call starts with.
set(CMAKE_C_COMPILER "${GANGRUN_ZIG}" cc -target ${GANGRUN_ZIG_TARGET})
set(CMAKE_CXX_COMPILER "${GANGRUN_ZIG}" c++ -target ${GANGRUN_ZIG_TARGET})
# zig's own archiver, which knows every target's object files.
foreach(lang C CXX)
  set(CMAKE_${lang}_ARCHIVE_CREATE "\"${GANGRUN_ZIG}\" ar qc <TARGET> <LINK_FLAGS> <OBJECTS>")
  set(CMAKE_${lang}_ARCHIVE_APPEND "\"${GANGRUN_ZIG}\" ar q <TARGET> <LINK_FLAGS> <OBJECTS>")
  set(CMAKE_${lang}_ARCHIVE_FINISH "\"${GANGRUN_ZIG}\" ranlib <TARGET>")
endforeach()

# Nothing of the build machine's own libraries or headers: Debian's /usr/include holds
# glibc 2.36's headers, whose declarations would ask for symbols newer than the target's.
set(CMAKE_FIND_ROOT_PATH_MODE_PROGRAM NEVER)
set(CMAKE_FIND_ROOT_PATH_MODE_LIBRARY ONLY)
set(CMAKE_FIND_ROOT_PATH_MODE_INCLUDE ONLY)
set(CMAKE_FIND_ROOT_PATH_MODE_PACKAGE ONLY)
