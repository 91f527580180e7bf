# libFuzzer targets (tests/fuzz), built only with -DCTORCH_FUZZ=ON and clang:
#   CC=clang-14 CXX=clang++-14 cmake -S . -B build-fuzz -G Ninja -DCTORCH_FUZZ=ON
#   ninja -C build-fuzz fuzz_targets && tests/fuzz/run_fuzz.py build-fuzz
# libctorch is then compiled with ASan and libFuzzer's coverage
# instrumentation (LibTorch itself is not instrumented).
option(CTORCH_FUZZ "Build the libFuzzer targets in tests/fuzz (clang only)" OFF)
if(CTORCH_FUZZ)
  if(NOT CMAKE_CXX_COMPILER_ID MATCHES "Clang")
    message(FATAL_ERROR "CTORCH_FUZZ needs clang (CXX=clang++-14)")
  endif()
  set(CTORCH_FUZZ_FLAGS -fsanitize=address -fno-omit-frame-pointer -g)
  target_compile_options(ctorch PRIVATE ${CTORCH_FUZZ_FLAGS} -fsanitize=fuzzer-no-link)
  # The ASan runtime comes with the fuzz executables (-z undefs overrides
  # --no-undefined for the library).
  target_link_options(ctorch PRIVATE -fsanitize=address -Wl,-z,undefs)
  set(CTORCH_FUZZ_TARGETS)
  foreach(t module_load pickle_load dlpack op_register script_compile op_call)
    add_executable(fuzz_${t} ${CMAKE_CURRENT_LIST_DIR}/fuzz_${t}.cc)
    target_compile_options(fuzz_${t} PRIVATE ${CTORCH_FUZZ_FLAGS} -fsanitize=fuzzer)
    target_link_options(fuzz_${t} PRIVATE -fsanitize=address,fuzzer)
    target_link_libraries(fuzz_${t} PRIVATE ctorch)
    if(t STREQUAL "module_load")  # its mutator reads and writes archives with LibTorch's zip
      target_link_libraries(fuzz_${t} PRIVATE ${TORCH_LIBRARIES})
    endif()
    set_target_properties(fuzz_${t} PROPERTIES RUNTIME_OUTPUT_DIRECTORY ${CMAKE_BINARY_DIR})
    list(APPEND CTORCH_FUZZ_TARGETS fuzz_${t})
  endforeach()
  add_custom_target(fuzz_targets DEPENDS ${CTORCH_FUZZ_TARGETS})
endif()
