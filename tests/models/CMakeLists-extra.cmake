# Extra CTest registrations for the model tests. Include from tests/CMakeLists.txt
# AFTER the foreach that creates the c.test_* tests.
#
# c.test_models needs the PyTorch-made models (fixture "models", set up by
# models.make) and writes c_module.pt / c_module_io.pt, which
# models.check_c_module reads back with Python's torch.jit.load.
if(TEST c.test_models AND TEST models.make)
  set_tests_properties(c.test_models PROPERTIES
    FIXTURES_REQUIRED models
    FIXTURES_SETUP c_module)
  add_test(NAME models.check_c_module
    COMMAND ${CTORCH_TEST_PYTHON} ${CMAKE_CURRENT_LIST_DIR}/check_c_module.py
            ${CMAKE_BINARY_DIR}/models/c_module.pt ${CMAKE_BINARY_DIR}/models/c_module_io.pt)
  set_tests_properties(models.check_c_module PROPERTIES
    FIXTURES_REQUIRED "models;c_module"
    SKIP_RETURN_CODE 77)
endif()

if(TEST c.test_load_library AND TEST models.make)
  set_tests_properties(c.test_load_library PROPERTIES FIXTURES_REQUIRED models)
endif()
