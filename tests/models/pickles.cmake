# torch.save pickles written by Python (tests/models/make_pickles.py) for
# c.test_pickle, which loads them with ct_pickle_load / ct_pickle_load_buffer
# and saves each back with ct_pickle_save (c_NAME.pt); models.check_pickles
# then reads those with Python's torch.load. Include from tests/CMakeLists.txt
# AFTER the foreach that creates the c.test_* tests.
if(NOT DEFINED CTORCH_TEST_PYTHON)
  set(CTORCH_TEST_PYTHON /usr/bin/python3 CACHE FILEPATH "Python with torch for tests")
endif()

add_test(NAME models.pickles
  COMMAND ${CTORCH_TEST_PYTHON} ${CMAKE_CURRENT_LIST_DIR}/make_pickles.py ${CMAKE_BINARY_DIR}/pickles)
set_tests_properties(models.pickles PROPERTIES
  FIXTURES_SETUP pickles
  SKIP_RETURN_CODE 77)

if(TEST c.test_pickle)
  set_tests_properties(c.test_pickle PROPERTIES
    FIXTURES_REQUIRED pickles
    FIXTURES_SETUP c_pickles
    ENVIRONMENT "CTORCH_TEST_PICKLES=${CMAKE_BINARY_DIR}/pickles")
  add_test(NAME models.check_pickles
    COMMAND ${CTORCH_TEST_PYTHON} ${CMAKE_CURRENT_LIST_DIR}/check_pickles.py ${CMAKE_BINARY_DIR}/pickles)
  set_tests_properties(models.check_pickles PROPERTIES
    FIXTURES_REQUIRED "pickles;c_pickles"
    SKIP_RETURN_CODE 77)
endif()
