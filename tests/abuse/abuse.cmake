# The abuse test, generated from include/ctorch.h at build time: every CT_API
# function with each pointer argument NULL in turn and integer arguments out
# of range, each call in a forked child (tests/abuse/gen_abuse.py).
set(CTORCH_ABUSE_DIR ${CMAKE_CURRENT_LIST_DIR})
add_custom_command(
  OUTPUT ${CMAKE_CURRENT_BINARY_DIR}/abuse_cases.c
  COMMAND ${CTORCH_TEST_PYTHON} ${CTORCH_ABUSE_DIR}/gen_abuse.py
          ${CMAKE_SOURCE_DIR}/include/ctorch.h ${CMAKE_CURRENT_BINARY_DIR}/abuse_cases.c
  DEPENDS ${CTORCH_ABUSE_DIR}/gen_abuse.py ${CMAKE_SOURCE_DIR}/include/ctorch.h
  COMMENT "Generating the abuse test from ctorch.h")
add_executable(abuse_test ${CTORCH_ABUSE_DIR}/abuse_main.c
                          ${CMAKE_CURRENT_BINARY_DIR}/abuse_cases.c)
target_include_directories(abuse_test PRIVATE ${CTORCH_ABUSE_DIR})
# The generated calls cast freely between pointer types on purpose.
target_compile_options(abuse_test PRIVATE -w)
target_link_libraries(abuse_test PRIVATE ctorch m)
add_test(NAME abuse.generated COMMAND abuse_test)
set_tests_properties(abuse.generated PROPERTIES ENVIRONMENT "OMP_NUM_THREADS=1" TIMEOUT 900)
# Every aten::/prim:: operator on numbers, strings and lists with boundary
# values, each call in a forked child: fails on a crash or a hang
# (tests/abuse/op_sweep.py; the guards are in src/op_guards.cpp).
add_test(NAME abuse.op_sweep COMMAND ${CTORCH_TEST_PYTHON} ${CTORCH_ABUSE_DIR}/op_sweep.py)
set_tests_properties(abuse.op_sweep PROPERTIES
  ENVIRONMENT "CTORCH_LIBRARY=$<TARGET_FILE:ctorch>;OMP_NUM_THREADS=1" TIMEOUT 600)
