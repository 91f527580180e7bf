# Finds LibTorch for CMakeLists.txt: find_package(Torch), or, with
# CTORCH_CPU_ONLY, a CUDA torch wheel used CPU-only.
#
# CPU-only use of a CUDA LibTorch from a PyPI torch wheel on a machine without
# the CUDA toolkit (CTORCH_CPU_ONLY). The wheel's TorchConfig.cmake cannot be
# used there: its Caffe2Config.cmake looks for the toolkit and stops ("Your
# installed Caffe2 version uses CUDA but I cannot find the CUDA libraries").
# This defines what CMakeLists.txt reads from find_package(Torch) -- the
# variables TORCH_INSTALL_PREFIX, TORCH_INCLUDE_DIRS, TORCH_LIBRARY,
# TORCH_LIBRARIES, Torch_VERSION and the imported targets c10 and torch_cpu --
# from the wheel's own files, as torch.utils.cpp_extension does for a CPU
# extension: its headers, libtorch_cpu.so and libc10.so (no libtorch.so, which
# needs libtorch_cuda.so), the compile definitions Caffe2Targets.cmake gives
# torch_cpu, and the C++ standard TorchConfig.cmake asks for.
set(_ct_wheel "")
foreach(_ct_p IN LISTS Torch_DIR CMAKE_PREFIX_PATH)
  foreach(_ct_rel "." ".." "../.." "../../..")
    if(EXISTS "${_ct_p}/${_ct_rel}/share/cmake/Torch/TorchConfig.cmake" AND
       EXISTS "${_ct_p}/${_ct_rel}/lib/libtorch_cpu.so")
      get_filename_component(_ct_wheel "${_ct_p}/${_ct_rel}" REALPATH)
      break()
    endif()
  endforeach()
  if(_ct_wheel)
    break()
  endif()
endforeach()
set(CTORCH_CPU_ONLY AUTO CACHE STRING
  "Build without CUDA against a CUDA torch wheel, bypassing its TorchConfig.cmake: ON, OFF, or AUTO (when no CUDA toolkit is found)")
set(_ct_cpu_only OFF)
if(CTORCH_CPU_ONLY STREQUAL "AUTO" AND _ct_wheel)
  # What the wheel's Caffe2Config.cmake would look for: nvcc under
  # CUDAToolkit_ROOT, $CUDA_PATH, $CUDA_HOME, on PATH or in /usr/local/cuda.
  file(STRINGS "${_ct_wheel}/share/cmake/Caffe2/Caffe2Config.cmake" _ct_uses_cuda
       REGEX "set\\(CAFFE2_USE_CUDA 1\\)")
  find_program(_ct_nvcc nvcc HINTS "${CUDAToolkit_ROOT}" ENV CUDA_PATH ENV CUDA_HOME
               PATH_SUFFIXES bin PATHS /usr/local/cuda/bin NO_CACHE)
  if(_ct_uses_cuda AND NOT _ct_nvcc)
    set(_ct_cpu_only ON)
    message(STATUS "ctorch: the torch wheel is a CUDA build and no CUDA toolkit was found: CPU-only (CTORCH_CPU_ONLY=AUTO)")
  endif()
elseif(NOT CTORCH_CPU_ONLY STREQUAL "AUTO" AND CTORCH_CPU_ONLY)
  set(_ct_cpu_only ON)
endif()
if(NOT _ct_cpu_only)
  find_package(Torch REQUIRED)
  return()
endif()
if(NOT _ct_wheel)
  message(FATAL_ERROR "ctorch: CTORCH_CPU_ONLY needs a torch directory (with share/cmake/Torch "
    "and lib/libtorch_cpu.so) on CMAKE_PREFIX_PATH or Torch_DIR, for example "
    "-DCMAKE_PREFIX_PATH=\"$(python -c 'import torch.utils; print(torch.utils.cmake_prefix_path)')/..;...\"")
endif()
set(TORCH_INSTALL_PREFIX "${_ct_wheel}")
set(Torch_DIR "${_ct_wheel}/share/cmake/Torch")  # where find_package(Torch) would have been
set(TORCH_INCLUDE_DIRS "${_ct_wheel}/include" "${_ct_wheel}/include/torch/csrc/api/include")
file(STRINGS "${_ct_wheel}/share/cmake/Torch/TorchConfigVersion.cmake" _ct_v
     REGEX "set\\(PACKAGE_VERSION \"[0-9.]+")
string(REGEX REPLACE ".*\"([0-9.]+).*" "\\1" Torch_VERSION "${_ct_v}")
file(STRINGS "${_ct_wheel}/share/cmake/Caffe2/Caffe2Targets.cmake" _ct_defs
     REGEX "INTERFACE_COMPILE_DEFINITIONS \"[^\"]*USE_DISTRIBUTED")
string(REGEX REPLACE ".*INTERFACE_COMPILE_DEFINITIONS \"([^\"]*)\".*" "\\1" _ct_defs "${_ct_defs}")
string(REPLACE "\\;" ";" _ct_defs "${_ct_defs}")  # file(STRINGS) escapes the semicolons
set(_ct_std cxx_std_17)
file(STRINGS "${_ct_wheel}/share/cmake/Torch/TorchConfig.cmake" _ct_std20 REGEX "cxx_std_20")
if(_ct_std20)
  set(_ct_std cxx_std_20)
endif()

add_library(c10 SHARED IMPORTED)
set_target_properties(c10 PROPERTIES
  IMPORTED_LOCATION "${_ct_wheel}/lib/libc10.so"
  INTERFACE_INCLUDE_DIRECTORIES "${TORCH_INCLUDE_DIRS}")
add_library(torch_cpu SHARED IMPORTED)
set_target_properties(torch_cpu PROPERTIES
  IMPORTED_LOCATION "${_ct_wheel}/lib/libtorch_cpu.so"
  INTERFACE_INCLUDE_DIRECTORIES "${TORCH_INCLUDE_DIRS}"
  INTERFACE_COMPILE_DEFINITIONS "${_ct_defs}"
  INTERFACE_COMPILE_FEATURES ${_ct_std}
  INTERFACE_LINK_LIBRARIES c10)
set(TORCH_LIBRARY "${_ct_wheel}/lib/libtorch_cpu.so")
set(TORCH_LIBRARIES torch_cpu c10)
set(Torch_FOUND TRUE)
message(STATUS "ctorch: CPU-only against the torch ${Torch_VERSION} wheel in ${_ct_wheel} "
  "(libtorch_cpu, libc10; no CUDA toolkit used)")
