# Python binding tests (bindings/python): included by tests/CMakeLists.txt.
#
# python.pytest      the pytest suite, run with the Python that has numpy, torch
#                    and pytest (CTORCH_TEST_PYTHON, /usr/bin/python3 by default);
#                    cross-checks every result against PyTorch.
# python.stdlib_only imports the binding with site-packages switched off
#                    (-I -S), proving it needs nothing beyond the standard library.
# python.path_python3 the `python3` first on PATH at configure time, when it is a
#                    different interpreter (a stdlib-only one on the dev machines);
#                    skipped where there is none.
set(CTORCH_PY_DIR ${CMAKE_SOURCE_DIR}/bindings/python)
set(CTORCH_PY_ENV
  "CTORCH_LIBRARY=$<TARGET_FILE:ctorch>"
  "CTORCH_TEST_KERNELS=$<TARGET_FILE:ctorch_test_kernels>"
  "CTORCH_TEST_MODELS=${CMAKE_BINARY_DIR}/models"
  "PYTHONDONTWRITEBYTECODE=1")

if(NOT DEFINED CTORCH_TEST_PYTHON)
  set(CTORCH_TEST_PYTHON /usr/bin/python3)
endif()

if(EXISTS ${CTORCH_TEST_PYTHON})
  add_test(NAME python.pytest
    COMMAND ${CTORCH_TEST_PYTHON} -m pytest -q -rs -p no:cacheprovider ${CTORCH_PY_DIR}/tests
    WORKING_DIRECTORY ${CTORCH_PY_DIR})
  set_tests_properties(python.pytest PROPERTIES
    ENVIRONMENT "${CTORCH_PY_ENV}"
    TIMEOUT 900
    SKIP_RETURN_CODE 5)
  if(TEST models.make)
    set_tests_properties(python.pytest PROPERTIES FIXTURES_REQUIRED models)
  endif()

  # The Python benchmark still runs against this binding (its numbers are
  # not looked at here; bench/run.sh times them).
  add_test(NAME bench.python_smoke
    COMMAND ${CTORCH_TEST_PYTHON} ${CMAKE_SOURCE_DIR}/bench/bench_python.py --smoke)
  set_tests_properties(bench.python_smoke PROPERTIES
    ENVIRONMENT "${CTORCH_PY_ENV}" TIMEOUT 300)

  add_test(NAME python.stdlib_only
    COMMAND ${CTORCH_TEST_PYTHON} -I -S -c
      "import sys; sys.path.insert(0, '${CTORCH_PY_DIR}'); import ctorch; t = (ctorch.arange(4) * 2)[1:]; assert t.tolist() == [2, 4, 6], t.tolist(); assert 'numpy' not in sys.modules and 'torch' not in sys.modules; print('ctorch', ctorch.version(), 'stdlib only: ok')")
  set_tests_properties(python.stdlib_only PROPERTIES ENVIRONMENT "${CTORCH_PY_ENV}")
endif()

find_program(CTORCH_PATH_PYTHON3 python3)
set(_ctorch_other_py "")
if(CTORCH_PATH_PYTHON3)
  get_filename_component(_a ${CTORCH_PATH_PYTHON3} REALPATH)
  get_filename_component(_b ${CTORCH_TEST_PYTHON} REALPATH)
  if(NOT _a STREQUAL _b)
    set(_ctorch_other_py ${CTORCH_PATH_PYTHON3})
  endif()
endif()
if(_ctorch_other_py)
  add_test(NAME python.path_python3
    COMMAND ${_ctorch_other_py} -c
      "import sys; sys.path.insert(0, '${CTORCH_PY_DIR}'); import ctorch; assert (ctorch.ones(3) + 1).tolist() == [2.0, 2.0, 2.0]; print(sys.executable, 'ok')")
  set_tests_properties(python.path_python3 PROPERTIES ENVIRONMENT "${CTORCH_PY_ENV}")
else()
  # Visible as skipped rather than silently absent.
  add_test(NAME python.path_python3 COMMAND ${CMAKE_COMMAND} -E echo
    "no separate python3 on PATH at configure time; skipped")
  set_tests_properties(python.path_python3 PROPERTIES DISABLED ON)
endif()
