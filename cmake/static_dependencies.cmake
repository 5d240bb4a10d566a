# The dependencies of a GANGRUN_STATIC_DEPS build (the wheel's binary), under the target
# names the system's packages give them, so lib/ links them unchanged:
# - header-only: Boost (Asio, Process v2), CLI11, nlohmann/json, tl-expected, spdlog with
#   fmt (SPDLOG_HEADER_ONLY, FMT_HEADER_ONLY), the headers of Debian's -dev packages, each
#   directory linked into a private include directory (Debian's /usr/include also holds
#   glibc 2.36's headers, which must not shadow the target's);
# - compiled here, as static libraries, from Debian's sources (the .dsc's orig tarball with
#   Debian's patches, which scripts/install-deps fetches, checks and unpacks into
#   GANGRUN_DEPS_SOURCE_DIR): yaml-cpp with its own CMake build, libsodium with ours
#   (cmake/libsodium.cmake; its own build is autotools).
set(GANGRUN_DEPS_SOURCE_DIR "${PROJECT_SOURCE_DIR}/.cache/wheel-sources" CACHE PATH
    "Where scripts/install-deps unpacked the sources of yaml-cpp and libsodium")
set(GANGRUN_DEPS_HEADER_ROOT "/usr/include" CACHE PATH
    "Where the header-only libraries' directories are (Debian's -dev packages put them in /usr/include)")

set(GANGRUN_YAML_CPP_SOURCE "${GANGRUN_DEPS_SOURCE_DIR}/yaml-cpp")
set(GANGRUN_SODIUM_SOURCE "${GANGRUN_DEPS_SOURCE_DIR}/libsodium")
foreach(dir IN ITEMS "${GANGRUN_YAML_CPP_SOURCE}/CMakeLists.txt" "${GANGRUN_SODIUM_SOURCE}/src/libsodium")
  if(NOT EXISTS "${dir}")
    message(FATAL_ERROR "${dir} not found: GANGRUN_STATIC_DEPS builds yaml-cpp and libsodium from "
                        "their sources, which scripts/install-deps unpacks into GANGRUN_DEPS_SOURCE_DIR")
  endif()
endforeach()

# ---- header-only libraries --------------------------------------------------------------
set(header_dir "${PROJECT_BINARY_DIR}/static-deps/include")
file(MAKE_DIRECTORY "${header_dir}")
# directory under GANGRUN_DEPS_HEADER_ROOT -> the Debian package that holds it
foreach(entry IN ITEMS boost:libboost1.81-dev CLI:libcli11-dev nlohmann:nlohmann-json3-dev
                       tl:libexpected-dev spdlog:libspdlog-dev fmt:libfmt-dev
                       level_zero:libze-dev)
  string(REPLACE ":" ";" entry "${entry}")
  list(GET entry 0 dir)
  list(GET entry 1 package)
  if(NOT IS_DIRECTORY "${GANGRUN_DEPS_HEADER_ROOT}/${dir}")
    message(FATAL_ERROR "${GANGRUN_DEPS_HEADER_ROOT}/${dir} not found (Debian package ${package})")
  endif()
  file(CREATE_LINK "${GANGRUN_DEPS_HEADER_ROOT}/${dir}" "${header_dir}/${dir}" SYMBOLIC)
endforeach()
file(STRINGS "${GANGRUN_DEPS_HEADER_ROOT}/boost/version.hpp" boost_version REGEX "define BOOST_LIB_VERSION ")
if(NOT boost_version MATCHES "\"1_81\"")
  message(FATAL_ERROR "${GANGRUN_DEPS_HEADER_ROOT}/boost is not Boost 1.81 (${boost_version})")
endif()

foreach(name IN ITEMS Boost::headers CLI11::CLI11 nlohmann_json::nlohmann_json tl::expected spdlog::spdlog)
  add_library(${name} INTERFACE IMPORTED)
  target_include_directories(${name} SYSTEM INTERFACE "${header_dir}")
endforeach()
# Debian's spdlog uses Debian's fmt (its tweakme.h says SPDLOG_FMT_EXTERNAL); both compile
# into each file that uses them.
target_compile_definitions(spdlog::spdlog INTERFACE SPDLOG_HEADER_ONLY SPDLOG_FMT_EXTERNAL FMT_HEADER_ONLY)

# ---- compiled from source ---------------------------------------------------------------
# Their own code builds with their own warnings, none of ours, and never as a unity build.
set(unity_build ${CMAKE_UNITY_BUILD})
set(CMAKE_UNITY_BUILD OFF)
set(YAML_CPP_BUILD_TESTS OFF CACHE BOOL "" FORCE)
set(YAML_CPP_BUILD_TOOLS OFF CACHE BOOL "" FORCE)
set(YAML_CPP_BUILD_CONTRIB OFF CACHE BOOL "" FORCE)
set(YAML_CPP_INSTALL OFF CACHE BOOL "" FORCE)
set(YAML_BUILD_SHARED_LIBS OFF CACHE BOOL "" FORCE)
# No `format` target of its own: ours has the name.
set(YAML_CPP_CLANG_FORMAT_EXE OFF CACHE FILEPATH "" FORCE)  # found, and false: no search
# yaml-cpp 0.7 asks for CMake 3.4, whose compatibility CMake 4 has dropped.
set(CMAKE_POLICY_VERSION_MINIMUM 3.5)
add_subdirectory("${GANGRUN_YAML_CPP_SOURCE}" "${PROJECT_BINARY_DIR}/static-deps/yaml-cpp" EXCLUDE_FROM_ALL SYSTEM)

include(${CMAKE_CURRENT_LIST_DIR}/libsodium.cmake)
add_library(PkgConfig::sodium ALIAS gangrun_libsodium)
set(CMAKE_UNITY_BUILD ${unity_build})
