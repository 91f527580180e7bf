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
  set_tests_properties(cuda.example_runs PROPERTIES
    FIXTURES_REQUIRED cuda_example SKIP_RETURN_CODE 77 TIMEOUT 60)
else()
  message(STATUS "ctorch: nvcc not found; the CUDA example is not compile-checked")
endif()
