# The MPI tests, each an mpirun of a real Open MPI job on this machine (shared memory and TCP on
# loopback). As root (CI's container) Open MPI wants its two confirmations; --oversubscribe lets 8
# ranks share 2 cores; the shared-memory transport keeps its backing files in /tmp (a container's
# /dev/shm is often 64 MB) and copies through them (no ptrace-based single copy in containers).
set(SEEDANCE_MPIRUN ${MPIEXEC_EXECUTABLE} --allow-run-as-root --oversubscribe
    --mca btl_vader_single_copy_mechanism none --mca btl_vader_backing_directory /tmp)
if(SEEDANCE_BUILD_TESTS)
  add_executable(train_collective_mpi_test collective_mpi_test.cc)
  target_link_libraries(train_collective_mpi_test PRIVATE seedance_train absl::strings GTest::gtest)
  if(SEEDANCE_SANITIZE)
    target_compile_options(train_collective_mpi_test PRIVATE -O0)
  endif()
  foreach(n 2 3 4 8)
    add_test(NAME train_collective_mpi_np${n}
             COMMAND ${SEEDANCE_MPIRUN} -np ${n} $<TARGET_FILE:train_collective_mpi_test>)
    set_tests_properties(train_collective_mpi_np${n} PROPERTIES TIMEOUT 300
                         ENVIRONMENT "${SEEDANCE_TRAIN_MPI_ENV}")
  endforeach()
endif()

# `mpirun -np 4 seedance train` on scikit-learn's digits and breast-cancer sets (exported once per
# test run by tools/train_fixtures/export_datasets.py): convergence against the FP32 all-reduce,
# and the failures that must end cleanly (train_cli_test.py).
if(SEEDANCE_BUILD_TESTS)
  add_test(NAME train_datasets_setup
           COMMAND /usr/bin/python3 ${PROJECT_SOURCE_DIR}/tools/train_fixtures/export_datasets.py
                   ${CMAKE_CURRENT_BINARY_DIR}/datasets)
  set_tests_properties(train_datasets_setup PROPERTIES FIXTURES_SETUP train_datasets
                       SKIP_RETURN_CODE 77 TIMEOUT 120)
  add_test(NAME train_cli_test
           COMMAND /usr/bin/python3 ${CMAKE_CURRENT_SOURCE_DIR}/train_cli_test.py
                   $<TARGET_FILE:seedance> $<TARGET_FILE:seedance-train>
                   ${CMAKE_CURRENT_BINARY_DIR}/datasets)
  set_tests_properties(train_cli_test PROPERTIES FIXTURES_REQUIRED train_datasets
                       SKIP_RETURN_CODE 77 TIMEOUT 900 ENVIRONMENT "${SEEDANCE_TRAIN_MPI_ENV}")
endif()
