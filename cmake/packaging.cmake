# pkg-config file, the build tree's CMake package, and the packages cpack makes
# (included from the top-level CMakeLists.txt after install(EXPORT ctorchTargets ...)).

# ctorch.pc is relocatable: its prefix is ${pcfiledir} plus the way up from
# <libdir>/pkgconfig to the prefix.
file(RELATIVE_PATH CTORCH_PC_TO_PREFIX
  "${CMAKE_INSTALL_PREFIX}/${CMAKE_INSTALL_LIBDIR}/pkgconfig" "${CMAKE_INSTALL_PREFIX}")
if(CTORCH_PC_TO_PREFIX STREQUAL "")
  set(CTORCH_PC_TO_PREFIX ".")
endif()
configure_file(${CMAKE_CURRENT_LIST_DIR}/ctorch.pc.in ${CMAKE_BINARY_DIR}/ctorch.pc @ONLY)
install(FILES ${CMAKE_BINARY_DIR}/ctorch.pc DESTINATION ${CMAKE_INSTALL_LIBDIR}/pkgconfig
  COMPONENT dev)

# The build tree is a CMake package too: -Dctorch_DIR=<build> finds
# <build>/ctorchConfig.cmake, which includes this file.
export(EXPORT ctorchTargets NAMESPACE ctorch:: FILE ${CMAKE_BINARY_DIR}/ctorchTargets.cmake)

# ---- Packages (cpack, in the build directory) -------------------------------------
#   cpack -G DEB   Debian packages for the Debian release it is built on, installed
#                  under /usr: libctorch0 (the library and the ctorch command) and
#                  libctorch-dev (header, CMake package, pkg-config file). Their
#                  dependencies on Debian's LibTorch packages come from
#                  dpkg-shlibdeps (dpkg-dev), as Debian's own packages get them.
#   cpack -G TGZ   one relocatable tarball of the whole install (for a build against
#                  a PyPI LibTorch: its RUNPATH still points at that torch).
set(CPACK_PACKAGE_NAME "libctorch")
set(CPACK_PACKAGE_VENDOR "ctorch")
set(CPACK_PACKAGE_CONTACT "ctorch developers <ctorch@localhost>")
set(CPACK_PACKAGE_DESCRIPTION_SUMMARY "Stable C interface to LibTorch")
set(CPACK_PACKAGE_VERSION ${PROJECT_VERSION})
set(CPACK_GENERATOR "DEB;TGZ")
set(CPACK_PACKAGE_FILE_NAME "libctorch-${PROJECT_VERSION}-Linux-${CMAKE_SYSTEM_PROCESSOR}")
set(CPACK_ARCHIVE_COMPONENT_INSTALL OFF)
set(CPACK_DEB_COMPONENT_INSTALL ON)
set(CPACK_COMPONENTS_ALL runtime dev)
set(CPACK_DEBIAN_PACKAGE_SECTION "libs")
set(CPACK_DEBIAN_FILE_NAME DEB-DEFAULT)
set(CPACK_DEBIAN_PACKAGE_SHLIBDEPS ON)
set(CPACK_DEBIAN_RUNTIME_PACKAGE_NAME "libctorch0")
set(CPACK_DEBIAN_RUNTIME_PACKAGE_SECTION "libs")
set(CPACK_COMPONENT_RUNTIME_DESCRIPTION
  "Stable C interface to LibTorch (library)\n libctorch.so: tensors, TorchScript modules, values, operators, autograd\n and distributed training from any language with a C FFI; the ctorch command.")
set(CPACK_DEBIAN_DEV_PACKAGE_NAME "libctorch-dev")
set(CPACK_DEBIAN_DEV_PACKAGE_SECTION "libdevel")
set(CPACK_DEBIAN_DEV_PACKAGE_DEPENDS "libctorch0 (= ${PROJECT_VERSION})")
set(CPACK_COMPONENT_DEV_DESCRIPTION
  "Stable C interface to LibTorch (development files)\n ctorch.h, the CMake package (find_package(ctorch)) and ctorch.pc.")
# Debian's layout: /usr, and the package's own RUNPATH-free library (the
# LibTorch it needs is in the system's library directories).
set(CPACK_PACKAGING_INSTALL_PREFIX "/usr")
include(CPack)
