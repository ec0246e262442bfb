# Every dependency comes from Debian packages (scripts/bootstrap.sh installs them).
find_package(MPI REQUIRED COMPONENTS C CXX)
find_package(Threads REQUIRED)

# MPI fault-tolerance extensions (ULFM: Open MPI 5 built with --with-ft=ulfm, e.g. Debian 13).
# TENSORHUB_HAVE_ULFM lands in tensorhub/config.hpp; lib/mpi/ulfm.hpp says "not available"
# without it. TENSORHUB_REQUIRE_ULFM=ON makes its absence a configure error (the ULFM CI lane).
option(TENSORHUB_REQUIRE_ULFM "Fail to configure unless the MPI has ULFM" OFF)
include(CheckCXXSourceCompiles)
set(CMAKE_REQUIRED_LIBRARIES MPI::MPI_CXX)
check_cxx_source_compiles([=[
#include <mpi.h>
#include <mpi-ext.h>
#ifndef MPIX_ERR_PROC_FAILED
#error no ULFM
#endif
int main() {
  MPI_Comm c = MPI_COMM_NULL; MPI_Group g; int f = 1;
  MPIX_Comm_revoke(c); MPIX_Comm_shrink(c, &c); MPIX_Comm_agree(c, &f);
  MPIX_Comm_get_failed(c, &g); MPIX_Comm_ack_failed(c, 0, &f);
  return 0;
}]=] TENSORHUB_HAVE_ULFM)
unset(CMAKE_REQUIRED_LIBRARIES)
if(TENSORHUB_HAVE_ULFM)
  set(TENSORHUB_HAVE_ULFM ON)
else()
  set(TENSORHUB_HAVE_ULFM OFF)
  if(TENSORHUB_REQUIRE_ULFM)
    message(FATAL_ERROR "TENSORHUB_REQUIRE_ULFM=ON but this MPI has no ULFM extensions (mpi-ext.h, MPIX_Comm_shrink)")
  endif()
endif()
message(STATUS "TensorHub: ULFM (MPI fault tolerance) ${TENSORHUB_HAVE_ULFM}")
find_package(nlohmann_json 3 REQUIRED)
find_package(PkgConfig REQUIRED)
pkg_check_modules(XXHASH REQUIRED IMPORTED_TARGET libxxhash)
pkg_check_modules(HWLOC REQUIRED IMPORTED_TARGET hwloc)
# cpp-httplib (libcpp-httplib-dev) serves the coordinator's Prometheus metrics (lib/coord).
pkg_check_modules(HTTPLIB REQUIRED IMPORTED_TARGET cpp-httplib)
find_package(Boost REQUIRED COMPONENTS program_options)
# Parallel HDF5 (libhdf5-openmpi-dev) for lib/snapshot: HDF5::HDF5, MPI-IO driver.
set(HDF5_PREFER_PARALLEL TRUE)
find_package(HDF5 REQUIRED COMPONENTS C)
if(NOT HDF5_IS_PARALLEL)
  message(FATAL_ERROR "lib/snapshot needs a parallel HDF5 (Debian: libhdf5-openmpi-dev); found a serial one")
endif()
find_package(Protobuf REQUIRED)
find_package(gRPC CONFIG REQUIRED)
find_program(TENSORHUB_GRPC_CPP_PLUGIN grpc_cpp_plugin REQUIRED)

# CUDA toolkit for lib/device (TENSORHUB_CUDA=AUTO|ON|OFF): share/cmake/TensorHubCuda.cmake.
include(TensorHubCuda)

# UCX (libucx-dev) for the `ucx` transport: AUTO builds it when pkg-config finds ucx, ON
# requires it, OFF skips it. TENSORHUB_HAVE_UCX lands in tensorhub/config.hpp.
set(TENSORHUB_WITH_UCX "AUTO" CACHE STRING "Build the ucx transport: AUTO, ON or OFF")
set_property(CACHE TENSORHUB_WITH_UCX PROPERTY STRINGS AUTO ON OFF)
set(TENSORHUB_HAVE_UCX OFF)
if(NOT TENSORHUB_WITH_UCX STREQUAL "OFF")
  pkg_check_modules(UCX QUIET IMPORTED_TARGET ucx)
  if(UCX_FOUND)
    set(TENSORHUB_HAVE_UCX ON)
  elseif(TENSORHUB_WITH_UCX STREQUAL "ON")
    message(FATAL_ERROR "TENSORHUB_WITH_UCX=ON but pkg-config finds no ucx (Debian: libucx-dev)")
  endif()
endif()
if(TENSORHUB_HAVE_UCX)
  message(STATUS "TensorHub: ucx transport ON (UCX ${UCX_VERSION})")
else()
  message(STATUS "TensorHub: ucx transport OFF")
endif()

# How tests and scripts launch MPI jobs. Open MPI on Debian disables osc/ucx in
# /etc/openmpi/openmpi-mca-params.conf; the dynamic-window data plane needs it.
set(TENSORHUB_MPIEXEC_PREFLAGS "" CACHE STRING "Extra flags for mpiexec in tests")
execute_process(COMMAND ${MPIEXEC_EXECUTABLE} --version OUTPUT_VARIABLE _th_mpiexec_version ERROR_QUIET)
if(_th_mpiexec_version MATCHES "Open MPI|OpenRTE" AND TENSORHUB_MPIEXEC_PREFLAGS STREQUAL "")
  set(TENSORHUB_MPIEXEC_PREFLAGS --oversubscribe --mca osc ucx)
  execute_process(COMMAND id -u OUTPUT_VARIABLE _th_uid OUTPUT_STRIP_TRAILING_WHITESPACE)
  if(_th_uid STREQUAL "0")
    list(APPEND TENSORHUB_MPIEXEC_PREFLAGS --allow-run-as-root)
  endif()
endif()
