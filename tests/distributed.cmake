# Distributed tests beyond tests/c/test_distributed.c (included by
# tests/CMakeLists.txt after the Python and Julia extras):
# distributed.mixed_group  one group of a PyTorch rank (torch.distributed with
#   Gloo, CTORCH_TEST_PYTHON), a C rank, a Python-ctypes rank and, where julia
#   is found, a Julia rank: all results must agree bit for bit.
# distributed.ddp_vs_torch ctorch's DistributedDataParallel (2 ranks) against
#   PyTorch's DDP and one process on the full batch.
# distributed.two_hosts    two network namespaces joined by a veth pair, one rank
#   in each (root; skipped without namespaces).
add_test(NAME distributed.two_hosts
  COMMAND sh ${CMAKE_CURRENT_SOURCE_DIR}/distributed/two_hosts.sh $<TARGET_FILE:test_distributed>)
set_tests_properties(distributed.two_hosts PROPERTIES SKIP_RETURN_CODE 77 TIMEOUT 400)
if(EXISTS ${CTORCH_TEST_PYTHON})
  set(_mixed_args --c-rank $<TARGET_FILE:test_distributed> --torch-python ${CTORCH_TEST_PYTHON})
  set(_mixed_env "CTORCH_LIBRARY=$<TARGET_FILE:ctorch>;PYTHONDONTWRITEBYTECODE=1")
  if(CTORCH_JULIA)
    list(APPEND _mixed_args --julia ${CMAKE_SOURCE_DIR}/scripts/julia)
    set(_mixed_env "${_mixed_env};${_jl_env}")
  endif()
  add_test(NAME distributed.mixed_group
    COMMAND ${CTORCH_TEST_PYTHON} ${CMAKE_CURRENT_SOURCE_DIR}/distributed/mixed_group.py ${_mixed_args})
  set_tests_properties(distributed.mixed_group PROPERTIES
    ENVIRONMENT "${_mixed_env}" SKIP_RETURN_CODE 77 TIMEOUT 600)
  add_test(NAME distributed.ddp_vs_torch
    COMMAND ${CTORCH_TEST_PYTHON} ${CMAKE_CURRENT_SOURCE_DIR}/distributed/ddp_vs_torch.py)
  set_tests_properties(distributed.ddp_vs_torch PROPERTIES
    ENVIRONMENT "CTORCH_LIBRARY=$<TARGET_FILE:ctorch>;PYTHONDONTWRITEBYTECODE=1"
    SKIP_RETURN_CODE 77 TIMEOUT 300)
endif()
