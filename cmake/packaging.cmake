# pkg-config file and the build tree's CMake package (included from the top-level
# CMakeLists.txt after install(EXPORT ctorchTargets ...)).

# ctorch.pc is relocatable: its prefix is ${pcfiledir} plus the way up from
# <libdir>/pkgconfig to the prefix.
file(RELATIVE_PATH CTORCH_PC_TO_PREFIX
  "${CMAKE_INSTALL_PREFIX}/${CMAKE_INSTALL_LIBDIR}/pkgconfig" "${CMAKE_INSTALL_PREFIX}")
if(CTORCH_PC_TO_PREFIX STREQUAL "")
  set(CTORCH_PC_TO_PREFIX ".")
endif()
configure_file(${CMAKE_CURRENT_LIST_DIR}/ctorch.pc.in ${CMAKE_BINARY_DIR}/ctorch.pc @ONLY)
install(FILES ${CMAKE_BINARY_DIR}/ctorch.pc DESTINATION ${CMAKE_INSTALL_LIBDIR}/pkgconfig)

# The build tree is a CMake package too: -Dctorch_DIR=<build> finds
# <build>/ctorchConfig.cmake, which includes this file.
export(EXPORT ctorchTargets NAMESPACE ctorch:: FILE ${CMAKE_BINARY_DIR}/ctorchTargets.cmake)
