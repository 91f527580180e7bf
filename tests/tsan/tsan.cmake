# ThreadSanitizer build (-DCTORCH_TSAN=ON, best with clang): libctorch and
# the concurrency tests (tests/c/test_concurrency.c; test_optim.c, whose
# threads share one optimizer; test_op_library.c, which registers operators
# while other threads call them) are instrumented; they run as
# tsan.concurrency, tsan.optim and tsan.op_library. Any report whose stack has a ctorch frame
# fails it; reports only in LibTorch frames are suppressed in tsan.supp.
#   CC=clang-14 CXX=clang++-14 cmake -S . -B build-tsan -G Ninja -DCTORCH_TSAN=ON
#   ninja -C build-tsan test_concurrency && ctest --test-dir build-tsan -R tsan
option(CTORCH_TSAN "Build libctorch and the concurrency test with ThreadSanitizer" OFF)
if(CTORCH_TSAN)
  set(CTORCH_TSAN_FLAGS -fsanitize=thread -fno-omit-frame-pointer -g)
  target_compile_options(ctorch PRIVATE ${CTORCH_TSAN_FLAGS})
  # clang links the TSan runtime into the executable only: the library keeps
  # its __tsan_* references undefined (-z undefs overrides --no-undefined).
  target_link_options(ctorch PRIVATE -fsanitize=thread -Wl,-z,undefs)
  foreach(name concurrency optim op_library)
    if(TARGET test_${name})
      target_compile_options(test_${name} PRIVATE ${CTORCH_TSAN_FLAGS})
      target_link_options(test_${name} PRIVATE -fsanitize=thread)
      add_test(NAME tsan.${name}
        COMMAND ${CMAKE_CURRENT_LIST_DIR}/run_tsan.sh $<TARGET_FILE:test_${name}>)
      set_tests_properties(tsan.${name} PROPERTIES TIMEOUT 600)
    endif()
  endforeach()
endif()
