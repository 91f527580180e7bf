# Julia binding tests (included by tests/CMakeLists.txt when present).
#
# julia.runtests: bindings/julia/CTorch/test/runtests.jl against this build's
#   libctorch, with PyTorch reference models from the `models` fixture (the
#   model cross-checks are skipped when they are absent).
#
# LD_PRELOAD: libgcc_s first, so C++ exceptions inside LibTorch unwind through
# libgcc_s instead of the libunwind that Debian's julia links (otherwise every
# C++ throw aborts the process). On Debian 12 with Debian 11's julia 1.5.3 the
# system libunwind (1.6) also breaks Julia's *own* exceptions thrown through
# JIT-compiled code (segfault in unw_step); the libunwind julia was built
# against (1.3.2, Debian 11) fixes that. bindings/julia/get-libunwind.sh puts
# it in a private directory; point CTORCH_JULIA_LIBUNWIND at the .so (the
# default looks in ${CMAKE_BINARY_DIR}/julia-libunwind). Without it,
# runtests.jl detects the broken unwinder and exits 77 (reported as skipped).
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
  set(_jl_preload "/lib/x86_64-linux-gnu/libgcc_s.so.1")
  if(CTORCH_JULIA_LIBUNWIND)
    string(APPEND _jl_preload ":${CTORCH_JULIA_LIBUNWIND}")
  endif()
  set(_jl_project ${CMAKE_SOURCE_DIR}/bindings/julia/CTorch)
  add_test(NAME julia.runtests
    COMMAND ${CTORCH_JULIA} --startup-file=no --project=${_jl_project}
            ${_jl_project}/test/runtests.jl)
  set_tests_properties(julia.runtests PROPERTIES
    ENVIRONMENT "LD_PRELOAD=${_jl_preload};CTORCH_LIBRARY=$<TARGET_FILE:ctorch>;CTORCH_TEST_MODELS=${CMAKE_BINARY_DIR}/models"
    SKIP_RETURN_CODE 77
    TIMEOUT 900)
  set_tests_properties(julia.runtests PROPERTIES FIXTURES_REQUIRED models)
  add_test(NAME julia.example
    COMMAND ${CTORCH_JULIA} --startup-file=no --project=${_jl_project}
            ${CMAKE_SOURCE_DIR}/examples/julia/demo.jl)
  set_tests_properties(julia.example PROPERTIES
    ENVIRONMENT "LD_PRELOAD=${_jl_preload};CTORCH_LIBRARY=$<TARGET_FILE:ctorch>"
    SKIP_RETURN_CODE 77
    TIMEOUT 600)
else()
  message(STATUS "ctorch: julia not found; the Julia binding is not tested")
endif()
