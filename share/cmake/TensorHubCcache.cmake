# Compiler cache: ccache as the launcher of C, C++ and CUDA compiles when it is installed
# (scripts/bootstrap.sh installs it; never required; -DTENSORHUB_CCACHE=OFF to skip; a launcher
# the caller chose is kept).
#
# The cache is ccache's own (cache_dir, default ~/.cache/ccache, outside every work tree, one
# size cap: max_size, default 5 GB; `ccache -s` shows both), shared by every build of every
# clone on the machine. Two settings make a clone in another folder (CI's clean clone) hit what
# a developer's build stored, and the other way round:
#   CCACHE_BASEDIR=<this source tree>  absolute paths under it are hashed (and passed to the
#                                      compiler) relative to the build directory;
#   CCACHE_NOHASHDIR=1                 the build directory itself is not hashed (it would be for
#                                      -g builds: their debug info then names the folder of the
#                                      build that filled the cache).
# Precompiled headers (TENSORHUB_PCH) need, as ccache's manual
# says, CCACHE_SLOPPINESS=pch_defines,time_macros: a compile that uses the header is then cached
# under the header's compiled content, which ccache itself restores on a hit.
# Only builds with the same flags share objects: scripts/test.sh, scripts/dev.sh and CI's main
# lane all configure with -DCMAKE_BUILD_TYPE=RelWithDebInfo -O2 -DNDEBUG, warnings as errors.
option(TENSORHUB_CCACHE "Use ccache as the compiler launcher when it is installed" ON)
find_program(TENSORHUB_CCACHE_PROGRAM ccache)
set(TENSORHUB_CCACHE_LAUNCHER "")
if(TENSORHUB_CCACHE AND TENSORHUB_CCACHE_PROGRAM)
  set(TENSORHUB_CCACHE_LAUNCHER ${CMAKE_COMMAND} -E env CCACHE_BASEDIR=${PROJECT_SOURCE_DIR} CCACHE_NOHASHDIR=1
                                CCACHE_SLOPPINESS=pch_defines,time_macros ${TENSORHUB_CCACHE_PROGRAM})
  foreach(lang C CXX)
    if(NOT CMAKE_${lang}_COMPILER_LAUNCHER)
      set(CMAKE_${lang}_COMPILER_LAUNCHER ${TENSORHUB_CCACHE_LAUNCHER})
    endif()
  endforeach()
endif()
