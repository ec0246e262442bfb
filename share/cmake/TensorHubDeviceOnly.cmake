# -DTENSORHUB_DEVICE_ONLY=ON: lib/core, lib/device and their tests alone, for the GPU machine
# (CMake, a compiler, the CUDA toolkit; no MPI, gRPC, HDF5, hwloc, UCX, maybe no GoogleTest, no
# nlohmann_json, no libxxhash). Included from the top-level CMakeLists.txt instead of
# TensorHubDependencies.cmake; scripts/device/gpu-check.sh configures it.
#   xxHash:        libxxhash through pkg-config when installed, else its header (header-only,
#                  XXH_INLINE_ALL) from TENSORHUB_EXTRA_INCLUDE_DIR: gpu-check.sh --prepare-carry
#                  copies Debian's /usr/include/xxhash.h there.
#   nlohmann_json: lib/core (manifests) needs it; without it lib/core and test_core are skipped
#                  (lib/device needs only lib/core's headers). TENSORHUB_EXTRA_INCLUDE_DIR may
#                  point at a copied include tree holding nlohmann/json.hpp.
#   GoogleTest:    find_package(GTest), else the sources in TENSORHUB_GTEST_SOURCE_DIR (e.g. a
#                  copy of Debian's /usr/src/googletest: gpu-check.sh --prepare-carry).
find_package(Threads REQUIRED)
include(TensorHubCuda)

set(TENSORHUB_EXTRA_INCLUDE_DIR "" CACHE PATH
    "Extra header tree for the device-only build (nlohmann/json.hpp, xxhash.h; gpu-check.sh --prepare-carry)")
find_package(PkgConfig QUIET)
if(PkgConfig_FOUND)
  pkg_check_modules(XXHASH QUIET IMPORTED_TARGET libxxhash)
endif()
if(NOT TARGET PkgConfig::XXHASH)
  if(NOT TENSORHUB_EXTRA_INCLUDE_DIR OR NOT EXISTS ${TENSORHUB_EXTRA_INCLUDE_DIR}/xxhash.h)
    message(FATAL_ERROR "No libxxhash: install it (Debian: libxxhash-dev), or pass -DTENSORHUB_EXTRA_INCLUDE_DIR=<dir "
                        "with xxhash.h> (scripts/device/gpu-check.sh --prepare-carry copies it)")
  endif()
  add_library(PkgConfig::XXHASH INTERFACE IMPORTED)
  set_target_properties(PkgConfig::XXHASH PROPERTIES
    INTERFACE_INCLUDE_DIRECTORIES ${TENSORHUB_EXTRA_INCLUDE_DIR}
    INTERFACE_COMPILE_DEFINITIONS XXH_INLINE_ALL)
  message(STATUS "TensorHub (device only): xxHash header-only from ${TENSORHUB_EXTRA_INCLUDE_DIR}")
endif()

find_package(nlohmann_json 3 QUIET)
if(NOT nlohmann_json_FOUND AND TENSORHUB_EXTRA_INCLUDE_DIR AND EXISTS ${TENSORHUB_EXTRA_INCLUDE_DIR}/nlohmann/json.hpp)
  add_library(nlohmann_json::nlohmann_json INTERFACE IMPORTED)
  set_target_properties(nlohmann_json::nlohmann_json PROPERTIES INTERFACE_INCLUDE_DIRECTORIES ${TENSORHUB_EXTRA_INCLUDE_DIR})
  set(nlohmann_json_FOUND ON)
endif()
if(nlohmann_json_FOUND)
  add_subdirectory(lib/core)
else()
  message(STATUS "TensorHub (device only): no nlohmann_json: lib/core and test_core skipped")
endif()
add_subdirectory(lib/device)

if(TENSORHUB_BUILD_TESTS)
  enable_testing()
  set(TENSORHUB_GTEST_SOURCE_DIR "" CACHE PATH "GoogleTest sources when find_package(GTest) finds none")
  find_package(GTest QUIET)
  if(NOT GTest_FOUND)
    if(NOT TENSORHUB_GTEST_SOURCE_DIR OR NOT EXISTS ${TENSORHUB_GTEST_SOURCE_DIR}/CMakeLists.txt)
      message(FATAL_ERROR "No GoogleTest: install it, or pass -DTENSORHUB_GTEST_SOURCE_DIR=<googletest sources> "
                          "(scripts/device/gpu-check.sh --prepare-carry copies /usr/src/googletest)")
    endif()
    set(INSTALL_GTEST OFF CACHE BOOL "" FORCE)
    set(BUILD_GMOCK OFF CACHE BOOL "" FORCE)
    add_subdirectory(${TENSORHUB_GTEST_SOURCE_DIR} ${PROJECT_BINARY_DIR}/_googletest EXCLUDE_FROM_ALL)
  endif()
  include(TensorHubTesting)
  if(TARGET tensorhub_core)
    # The same sources as test_core in tests/unit/CMakeLists.txt (keep the two lists equal).
    set(_th_u ${PROJECT_SOURCE_DIR}/tests/unit)
    tensorhub_add_unit_test(test_core
      SOURCES ${_th_u}/test_units.cpp ${_th_u}/test_dtype_tensor.cpp ${_th_u}/test_manifest.cpp
              ${_th_u}/test_manifest_json.cpp ${_th_u}/test_manifest_check.cpp ${_th_u}/test_env.cpp
              ${_th_u}/test_trace.cpp
      LIBS tensorhub_core nlohmann_json::nlohmann_json)
  endif()
  add_subdirectory(tests/device)
endif()
