# Test registration helpers. All MPI tests go through tensorhub_add_mpi_test so the launcher
# (mpiexec, srun, ...) and its flags can be swapped in one place:
#   cmake -DMPIEXEC_EXECUTABLE=srun -DMPIEXEC_NUMPROC_FLAG=-n -DTENSORHUB_MPIEXEC_PREFLAGS=--mpi=pmix

# tensorhub_add_unit_test(NAME SOURCES... [LIBS ...]) — GoogleTest, no MPI, label "unit".
function(tensorhub_add_unit_test name)
  cmake_parse_arguments(T "" "" "SOURCES;LIBS;LABELS" ${ARGN})
  add_executable(${name} ${T_SOURCES})
  th_target_defaults(${name})
  target_link_libraries(${name} PRIVATE GTest::gtest GTest::gtest_main ${T_LIBS})
  add_test(NAME ${name} COMMAND ${name})
  set(labels unit ${T_LABELS})
  set_tests_properties(${name} PROPERTIES LABELS "${labels}" TIMEOUT 120)
  if(TENSORHUB_SANITIZE STREQUAL "thread")
    # UCX's memory hooks (libucm, not instrumented) catch the madvise of an exiting thread's stack
    # after TSan has torn that thread down, and crash inside TSan: no hooks under TSan.
    set_tests_properties(${name} PROPERTIES ENVIRONMENT "UCX_MEM_MMAP_HOOK_MODE=none")
  endif()
endfunction()

# tensorhub_add_mpi_test(NAME NP n SOURCES... [LIBS ...] [LABELS ...] [TIMEOUT s] [ARGS ...]
#                        [VARIANT v ENV VAR=value...])
# Runs the GoogleTest binary on n ranks; tests/mpi/mpi_main.cpp makes any rank's failure fail
# the whole run. VARIANT registers the binary again as NAME_npN_v with ENV set for its ranks
# (e.g. TENSORHUB_MPI_READ=rget).
function(tensorhub_add_mpi_test name)
  cmake_parse_arguments(T "" "NP;TIMEOUT;VARIANT" "SOURCES;LIBS;LABELS;ARGS;ENV" ${ARGN})
  set(_test ${name}_np${T_NP})
  if(T_VARIANT)
    set(_test ${_test}_${T_VARIANT})
  endif()
  if(NOT T_TIMEOUT)
    set(T_TIMEOUT 180)
  endif()
  if(NOT TARGET tensorhub_mpi_test_main)  # compiled once for every MPI test binary
    add_library(tensorhub_mpi_test_main OBJECT ${PROJECT_SOURCE_DIR}/tests/mpi/mpi_main.cpp)
    th_target_defaults(tensorhub_mpi_test_main)
    target_link_libraries(tensorhub_mpi_test_main PUBLIC GTest::gtest tensorhub_mpi)
  endif()
  if(NOT TARGET ${name})
    add_executable(${name} ${T_SOURCES})
    th_target_defaults(${name})
    target_link_libraries(${name} PRIVATE tensorhub_mpi_test_main GTest::gtest ${T_LIBS})
  endif()
  add_test(NAME ${_test}
           COMMAND ${MPIEXEC_EXECUTABLE} ${MPIEXEC_NUMPROC_FLAG} ${T_NP} ${TENSORHUB_MPIEXEC_PREFLAGS}
                   ${MPIEXEC_PREFLAGS} $<TARGET_FILE:${name}> ${MPIEXEC_POSTFLAGS} ${T_ARGS})
  set(labels mpi ${T_LABELS})
  set_tests_properties(${_test} PROPERTIES LABELS "${labels}" TIMEOUT ${T_TIMEOUT}
                       PROCESSORS 2 RUN_SERIAL TRUE)
  if(T_ENV)
    set_tests_properties(${_test} PROPERTIES ENVIRONMENT "${T_ENV}")
  endif()
endfunction()
