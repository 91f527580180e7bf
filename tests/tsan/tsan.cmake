# ThreadSanitizer build (-DCTORCH_TSAN=ON, best with clang): libctorch and
# the concurrency test (tests/c/test_concurrency.c) are instrumented; the
# test runs as tsan.concurrency. Any report whose stack has a ctorch frame
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
  if(TARGET test_concurrency)
    target_compile_options(test_concurrency PRIVATE ${CTORCH_TSAN_FLAGS})
    target_link_options(test_concurrency PRIVATE -fsanitize=thread)
    add_test(NAME tsan.concurrency
      COMMAND ${CMAKE_CURRENT_LIST_DIR}/run_tsan.sh $<TARGET_FILE:test_concurrency>)
    set_tests_properties(tsan.concurrency PROPERTIES TIMEOUT 600)
  endif()
endif()
