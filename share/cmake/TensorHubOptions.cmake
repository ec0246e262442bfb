# Per-target compile settings shared by every TensorHub target.
set(CMAKE_EXPORT_COMPILE_COMMANDS ON)
if(NOT CMAKE_BUILD_TYPE AND NOT CMAKE_CONFIGURATION_TYPES)
  set(CMAKE_BUILD_TYPE RelWithDebInfo CACHE STRING "Build type" FORCE)
endif()

# Compiler cache: share/cmake/TensorHubCcache.cmake (included by the top-level CMakeLists.txt).

set(_th_san_flags "")
if(TENSORHUB_SANITIZE STREQUAL "address")
  set(_th_san_flags -fsanitize=address -fno-omit-frame-pointer)
elseif(TENSORHUB_SANITIZE STREQUAL "undefined")
  set(_th_san_flags -fsanitize=undefined -fno-sanitize-recover=undefined)
elseif(TENSORHUB_SANITIZE STREQUAL "address,undefined")
  # One build for both (CI): ASan and UBSan combine; TSan does not combine with ASan.
  set(_th_san_flags -fsanitize=address,undefined -fno-sanitize-recover=undefined -fno-omit-frame-pointer)
elseif(TENSORHUB_SANITIZE STREQUAL "thread")
  set(_th_san_flags -fsanitize=thread)
elseif(NOT TENSORHUB_SANITIZE STREQUAL "")
  message(FATAL_ERROR "TENSORHUB_SANITIZE must be '', address, undefined, address,undefined or thread")
endif()

# Precompiled headers for the test executables (share/cmake/TensorHubTesting.cmake) and the CLI
# (apps/tensorhub): the headers most of their sources include (GoogleTest, mpi.h,
# Boost.Program_options, nlohmann/json) are parsed once per build instead of once per source.
# ccache caches them and the compiles that use them (share/cmake/TensorHubCcache.cmake). OFF
# compiles every source alone (and shows a source that forgot an include the header gave it).
option(TENSORHUB_PCH "Precompiled headers for the tests and the CLI" ON)

# th_target_defaults(target): C++20, warnings (errors with TENSORHUB_WERROR), sanitizers, and no
# MPI C++ bindings: mpi.h of Open MPI 4 (and MPICH) pulls in its deprecated C++ bindings
# (mpicxx.h: <map>, <iostream>, ...) unless told not to: 0.9-5 s of each of the 92 compiles that
# include it under the ASan+UBSan lane's -O1 -g1, no measurable cost at -O2 (TensorHub uses the C
# API only). PRIVATE: programs that include TensorHub's headers
# keep whatever their own build chose.
function(th_target_defaults target)
  target_compile_features(${target} PUBLIC cxx_std_20)
  target_compile_definitions(${target} PRIVATE OMPI_SKIP_MPICXX=1 MPICH_SKIP_MPICXX=1)
  set_target_properties(${target} PROPERTIES CXX_EXTENSIONS OFF POSITION_INDEPENDENT_CODE ON)
  target_compile_options(${target} PRIVATE -Wall -Wextra -Wpedantic -Wshadow -Wnon-virtual-dtor)
  if(TENSORHUB_WERROR)
    target_compile_options(${target} PRIVATE -Werror)
  endif()
  if(_th_san_flags)
    target_compile_options(${target} PRIVATE ${_th_san_flags})
    target_link_options(${target} PUBLIC ${_th_san_flags})
  endif()
endfunction()
