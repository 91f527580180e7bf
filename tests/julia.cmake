# Julia binding tests (included by tests/CMakeLists.txt when present).
#
# julia.runtests: bindings/julia/CTorch/test/runtests.jl against this build's
#   libctorch, with PyTorch reference models from the `models` fixture (the
#   model cross-checks are skipped when they are absent).
#
# Julia is started through scripts/julia, the start line the README and the
# demo use: it preloads libgcc_s (so C++ exceptions inside LibTorch unwind
# through libgcc_s, not the libunwind Debian's julia links) and, for julia
# < 1.6, the libunwind julia was built against (Debian 12's libunwind 1.6
# makes Julia's own exceptions segfault), found in CTORCH_JULIA_LIBUNWIND
# (default: ${CMAKE_BINARY_DIR}/julia-libunwind or /opt/ctorch/julia-libunwind;
# bindings/julia/get-libunwind.sh puts it there). Without it, runtests.jl
# detects the broken unwinder and exits 77 (reported as skipped).
# The tests run with 4 Julia threads, so the threads testset is real.
find_program(CTORCH_JULIA julia)
if(CTORCH_JULIA)
  set(_jl_unwind_default "")
  foreach(_cand $ENV{CTORCH_JULIA_LIBUNWIND}
                ${CMAKE_BINARY_DIR}/julia-libunwind/libunwind.so.8
                /opt/ctorch/julia-libunwind/libunwind.so.8)
    if(NOT _jl_unwind_default AND EXISTS "${_cand}")
      set(_jl_unwind_default "${_cand}")
    endif()
  endforeach()
  set(CTORCH_JULIA_LIBUNWIND "${_jl_unwind_default}" CACHE FILEPATH
      "libunwind.so.8 compatible with the installed julia (empty: the system one)")
  set(_jl_start ${CMAKE_SOURCE_DIR}/scripts/julia)
  set(_jl_env "JULIA=${CTORCH_JULIA};CTORCH_JULIA_LIBUNWIND=${CTORCH_JULIA_LIBUNWIND};CTORCH_LIBRARY=$<TARGET_FILE:ctorch>")
  add_test(NAME julia.runtests
    COMMAND ${_jl_start} --threads=4 ${CMAKE_SOURCE_DIR}/bindings/julia/CTorch/test/runtests.jl)
  set_tests_properties(julia.runtests PROPERTIES
    ENVIRONMENT "${_jl_env};JULIA_NUM_THREADS=4;CTORCH_TEST_MODELS=${CMAKE_BINARY_DIR}/models"
    SKIP_RETURN_CODE 77
    TIMEOUT 900)
  set_tests_properties(julia.runtests PROPERTIES FIXTURES_REQUIRED models)
  add_test(NAME julia.example
    COMMAND ${_jl_start} ${CMAKE_SOURCE_DIR}/examples/julia/demo.jl)
  set_tests_properties(julia.example PROPERTIES
    ENVIRONMENT "${_jl_env}"
    SKIP_RETURN_CODE 77
    TIMEOUT 600)
  add_test(NAME example.julia_train
    COMMAND ${_jl_start} ${CMAKE_SOURCE_DIR}/examples/julia/train_convnet.jl
      ${CMAKE_BINARY_DIR}/tests/train_julia 40)
  set_tests_properties(example.julia_train PROPERTIES
    ENVIRONMENT "${_jl_env}" SKIP_RETURN_CODE 77 TIMEOUT 600 FIXTURES_SETUP train_julia)
  ctorch_training_check(julia)
else()
  message(STATUS "ctorch: julia not found; the Julia binding is not tested")
endif()
