# Files for c.test_dtypes made by PyTorch (tests/models/make_dtype_models.py):
# a quantized TorchScript model and reference values. Include from
# tests/CMakeLists.txt AFTER the foreach that creates the c.test_* tests.
add_test(NAME models.dtype
  COMMAND ${CTORCH_TEST_PYTHON} ${CMAKE_CURRENT_LIST_DIR}/make_dtype_models.py
          ${CMAKE_BINARY_DIR}/dtype_models)
set_tests_properties(models.dtype PROPERTIES FIXTURES_SETUP dtype_models SKIP_RETURN_CODE 77)
if(TEST c.test_dtypes)
  set_tests_properties(c.test_dtypes PROPERTIES
    FIXTURES_REQUIRED dtype_models
    ENVIRONMENT "CTORCH_TEST_DTYPE_MODELS=${CMAKE_BINARY_DIR}/dtype_models")
endif()
