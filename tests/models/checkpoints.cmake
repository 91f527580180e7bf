# Checkpoints made by PyTorch (tests/models/make_checkpoints.py) for
# c.test_checkpoints. Include from tests/CMakeLists.txt AFTER the foreach
# that creates the c.test_* tests.
add_test(NAME models.checkpoints
  COMMAND ${CTORCH_TEST_PYTHON} ${CMAKE_CURRENT_LIST_DIR}/make_checkpoints.py
          ${CMAKE_BINARY_DIR}/checkpoints)
set_tests_properties(models.checkpoints PROPERTIES
  FIXTURES_SETUP checkpoints SKIP_RETURN_CODE 77)
if(TEST c.test_checkpoints)
  set_tests_properties(c.test_checkpoints PROPERTIES
    FIXTURES_REQUIRED checkpoints
    ENVIRONMENT "CTORCH_TEST_CHECKPOINTS=${CMAKE_BINARY_DIR}/checkpoints")
endif()
