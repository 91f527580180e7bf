# CUDA example checks (included by tests/CMakeLists.txt when present).
#
# cuda.example_compiles: configures and builds examples/cuda standalone with
#   nvcc against this build tree (CTORCH_BUILD_DIR). Needs only the CUDA
#   toolkit, not a GPU: this runs in CPU-only CI too (~10 s).
# cuda.example_runs: runs it. Exits 77 (reported as skipped) when no CUDA
#   device is usable, which is always the case with a CPU-only LibTorch.
find_program(CTORCH_NVCC nvcc
  HINTS ${CUDAToolkit_BIN_DIR} $ENV{CUDA_HOME}/bin /usr/local/cuda/bin)
if(CTORCH_NVCC)
  set(_ex_build ${CMAKE_CURRENT_BINARY_DIR}/example_cuda)
  add_test(NAME cuda.example_compiles
    COMMAND sh -c "rm -rf '${_ex_build}' && \"${CMAKE_COMMAND}\" -S '${CMAKE_SOURCE_DIR}/examples/cuda' -B '${_ex_build}' -G '${CMAKE_GENERATOR}' -DCMAKE_MAKE_PROGRAM='${CMAKE_MAKE_PROGRAM}' -DCMAKE_CUDA_COMPILER='${CTORCH_NVCC}' -DCTORCH_BUILD_DIR='$<TARGET_FILE_DIR:ctorch>' && \"${CMAKE_COMMAND}\" --build '${_ex_build}'")
  set_tests_properties(cuda.example_compiles PROPERTIES
    FIXTURES_SETUP cuda_example TIMEOUT 120)
  add_test(NAME cuda.example_runs COMMAND ${_ex_build}/h_example)
  # The example links the toolkit's shared CUDA runtime: find it next to nvcc,
  # as a machine without the toolkit's ld.so.conf entry (the 2.6 chroot) must.
  get_filename_component(_cuda_root "${CTORCH_NVCC}" DIRECTORY)
  get_filename_component(_cuda_root "${_cuda_root}" DIRECTORY)
  set_tests_properties(cuda.example_runs PROPERTIES
    FIXTURES_REQUIRED cuda_example SKIP_RETURN_CODE 77 TIMEOUT 60
    ENVIRONMENT "LD_LIBRARY_PATH=${_cuda_root}/lib64:${_cuda_root}/lib:$ENV{LD_LIBRARY_PATH}")
else()
  message(STATUS "ctorch: nvcc not found; the CUDA example is not compile-checked")
endif()
