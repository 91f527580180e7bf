# AOTInductor packages (.pt2), made at test time with the test Python's torch
# by make_packages.py (on torch without AOTInductor, such as Debian 12's 1.13,
# it makes none and the tests check the not-supported path instead).
# c.test_package, the pytest suite (test_package.py), the Julia suite and tools.ctorch_cli read them from
# CTORCH_TEST_PACKAGES.
add_test(NAME packages.make COMMAND ${CTORCH_TEST_PYTHON}
  ${CMAKE_CURRENT_LIST_DIR}/make_packages.py ${CMAKE_BINARY_DIR}/packages)
set_tests_properties(packages.make PROPERTIES FIXTURES_SETUP packages TIMEOUT 1200)
foreach(_t c.test_package c.test_op_library python.pytest abuse.generated julia.runtests)
  if(TEST ${_t})
    set_property(TEST ${_t} APPEND PROPERTY FIXTURES_REQUIRED packages)
    set_property(TEST ${_t} APPEND PROPERTY ENVIRONMENT
      "CTORCH_TEST_PACKAGES=${CMAKE_BINARY_DIR}/packages")
  endif()
endforeach()
