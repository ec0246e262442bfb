# Installation: what an outside MPI trainer gets from `cmake --install <build> --prefix P`.
#
#   P/include/tensorhub/hub.hpp, core/*.hpp, config.hpp   public headers (need only MPI + C++20)
#   P/lib/libtensorhub.so.<major.minor>                    the library (internals linked in)
#   P/bin/tensorhub                                        the command-line tool
#   P/lib/cmake/TensorHub/                                 find_package(TensorHub) -> TensorHub::tensorhub
#   P/lib/pkgconfig/tensorhub.pc                           pkg-config --cflags --libs tensorhub
#
# Included at the end of the top-level CMakeLists.txt, once every target exists.
#
# Why a separate shared library (tensorhub_shared, file name libtensorhub.so) instead of
# installing the static layers or making the in-tree `tensorhub` target SHARED:
#  * Static archives would hand every consumer our private dependencies: gRPC, Protobuf,
#    xxHash, the generated protocol code. The shared library links them privately; consumers
#    need MPI and the installed headers, nothing else.
#  * The in-tree CLI and tests link internal layers (coord, mpi) next to `tensorhub`. If
#    `tensorhub` itself were shared, those processes would hold two copies of core, coord and
#    the generated Protobuf descriptors (ODR violations that ASan reports, double registration
#    of tensorhub.proto). So in-tree targets stay static, and the shared library is linked from
#    the same (position-independent) object files: nothing is compiled twice.
#  * Exported symbols: hub and core (the API the installed headers declare). Everything that
#    comes from the internal static archives (mpi, transport, coord, transfer, proto) is hidden
#    with --exclude-libs, so it cannot clash with a consumer's own gRPC/Protobuf code.
include(GNUInstallDirs)
include(CMakePackageConfigHelpers)

get_target_property(_th_hub_src tensorhub SOURCE_DIR)
get_target_property(_th_core_src tensorhub_core SOURCE_DIR)
get_target_property(_th_core_bin tensorhub_core BINARY_DIR)

add_library(tensorhub_shared SHARED $<TARGET_OBJECTS:tensorhub> $<TARGET_OBJECTS:tensorhub_core>)
# The static `tensorhub` brings every internal layer and third-party library the objects need;
# its own members are already present as objects, so the linker takes nothing twice.
target_link_libraries(tensorhub_shared PRIVATE tensorhub PUBLIC MPI::MPI_CXX)
target_compile_features(tensorhub_shared INTERFACE cxx_std_20)
target_include_directories(tensorhub_shared INTERFACE
  $<BUILD_INTERFACE:${_th_hub_src}/include>
  $<BUILD_INTERFACE:${_th_core_src}/include>
  $<BUILD_INTERFACE:${_th_core_bin}/include>
  $<INSTALL_INTERFACE:${CMAKE_INSTALL_INCLUDEDIR}>)
# Pre-1.0: any minor release may change the ABI, so the soname carries major.minor.
set_target_properties(tensorhub_shared PROPERTIES
  OUTPUT_NAME tensorhub
  EXPORT_NAME tensorhub
  LINKER_LANGUAGE CXX
  VERSION ${PROJECT_VERSION}
  SOVERSION ${PROJECT_VERSION_MAJOR}.${PROJECT_VERSION_MINOR})
if(CMAKE_SYSTEM_NAME STREQUAL "Linux")
  target_link_options(tensorhub_shared PRIVATE LINKER:--exclude-libs,ALL)
  # The .so is complete: no symbol left for the executable to provide (sanitizer runtimes may).
  if(TENSORHUB_SANITIZE STREQUAL "" AND NOT TENSORHUB_FUZZ)
    target_link_options(tensorhub_shared PRIVATE LINKER:--no-undefined)
  endif()
endif()

# The CLI links the internal layers statically and needs nothing from P/lib today; the RPATH
# keeps an installed tree relocatable if it ever links libtensorhub.so.
set_target_properties(tensorhub_cli PROPERTIES INSTALL_RPATH "$ORIGIN/../${CMAKE_INSTALL_LIBDIR}")

install(TARGETS tensorhub_shared EXPORT TensorHubTargets
  LIBRARY DESTINATION ${CMAKE_INSTALL_LIBDIR})
install(TARGETS tensorhub_cli RUNTIME DESTINATION ${CMAKE_INSTALL_BINDIR})

# Headers: the hub API and all of core (MPI-free; every symbol it declares is in the library),
# plus the generated config.hpp. tests/package compiles each installed header on its own.
install(DIRECTORY ${_th_hub_src}/include/ ${_th_core_src}/include/
  DESTINATION ${CMAKE_INSTALL_INCLUDEDIR} FILES_MATCHING PATTERN "*.hpp")
install(FILES ${_th_core_bin}/include/tensorhub/config.hpp DESTINATION ${CMAKE_INSTALL_INCLUDEDIR}/tensorhub)

# CMake package: relocatable (paths relative to the installed config file).
set(_th_cmake_dir ${CMAKE_INSTALL_LIBDIR}/cmake/TensorHub)
install(EXPORT TensorHubTargets NAMESPACE TensorHub:: DESTINATION ${_th_cmake_dir})
configure_package_config_file(${CMAKE_CURRENT_LIST_DIR}/TensorHubConfig.cmake.in
  ${PROJECT_BINARY_DIR}/TensorHubConfig.cmake INSTALL_DESTINATION ${_th_cmake_dir})
write_basic_package_version_file(${PROJECT_BINARY_DIR}/TensorHubConfigVersion.cmake
  VERSION ${PROJECT_VERSION} COMPATIBILITY SameMinorVersion)
install(FILES ${PROJECT_BINARY_DIR}/TensorHubConfig.cmake ${PROJECT_BINARY_DIR}/TensorHubConfigVersion.cmake
  DESTINATION ${_th_cmake_dir})

# pkg-config: prefix relative to the .pc file, so `--prefix` at install time is honoured.
file(RELATIVE_PATH _th_pc_to_prefix "/${CMAKE_INSTALL_LIBDIR}/pkgconfig" "/")
string(REGEX REPLACE "/$" "" _th_pc_to_prefix "${_th_pc_to_prefix}")
configure_file(${CMAKE_CURRENT_LIST_DIR}/tensorhub.pc.in ${PROJECT_BINARY_DIR}/tensorhub.pc @ONLY)
install(FILES ${PROJECT_BINARY_DIR}/tensorhub.pc DESTINATION ${CMAKE_INSTALL_LIBDIR}/pkgconfig)
