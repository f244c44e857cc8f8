# What both kernels' CMakeLists need alike: a parallel HDF5 >= 1.10 and MPI, and
# kernels/common built into the kernel.
#
#   include(${KERNEL_COMMON_DIR}/kernel.cmake)
#   kernel_executable(<name> <sources>...)
#
# KERNEL_COMMON_DIR is this directory: ../common of the kernel's tree, or given
# with -DKERNEL_COMMON_DIR=... where the kernel's tree was copied alone (the
# ReFrame build fixture copies kernels/<name> into its stage).

if(NOT CMAKE_BUILD_TYPE AND NOT CMAKE_CONFIGURATION_TYPES)
  set(CMAKE_BUILD_TYPE Release CACHE STRING "Build type" FORCE)
endif()

find_package(MPI REQUIRED COMPONENTS C)
set(HDF5_PREFER_PARALLEL TRUE)
find_package(HDF5 REQUIRED COMPONENTS C)
# Whether it is parallel, and its version, from its own H5pubconf.h: FindHDF5 (CMake
# 3.25) reads both from `h5pcc -showconfig` when it uses the wrapper, and a CMake-built
# HDF5 of the 1.10 branch (1.10.8, 1.10.9) answers there in words it does not parse
# (HDF5_IS_PARALLEL FALSE, no version), nor does its version "1.10.9.1" match the
# header regex FindHDF5 has.
find_file(KERNEL_H5PUBCONF H5pubconf.h PATHS ${HDF5_INCLUDE_DIRS} NO_DEFAULT_PATH)
if(KERNEL_H5PUBCONF)
  file(STRINGS "${KERNEL_H5PUBCONF}" _parallel REGEX "^#define H5_HAVE_PARALLEL 1")
  if(_parallel)
    set(HDF5_IS_PARALLEL TRUE)
  else()
    set(HDF5_IS_PARALLEL FALSE)
  endif()
  file(STRINGS "${KERNEL_H5PUBCONF}" _version REGEX "^#define H5_VERSION ")
  if(_version MATCHES "\"([0-9]+\\.[0-9]+\\.[0-9]+)")
    set(HDF5_VERSION "${CMAKE_MATCH_1}")
  endif()
endif()
if(NOT HDF5_IS_PARALLEL)
  message(FATAL_ERROR
    "${PROJECT_NAME} needs a parallel HDF5 (found ${HDF5_VERSION} at ${HDF5_INCLUDE_DIRS}, "
    "which is serial). Install libhdf5-openmpi-dev or set HDF5_ROOT / "
    "HDF5_C_COMPILER_EXECUTABLE to a parallel build.")
endif()
if(HDF5_VERSION VERSION_LESS 1.10)
  message(FATAL_ERROR "${PROJECT_NAME} needs HDF5 >= 1.10 (found ${HDF5_VERSION})")
endif()

function(kernel_executable name)
  add_executable(${name} ${ARGN} ${KERNEL_COMMON_DIR}/kernel_common.c)
  set_target_properties(${name} PROPERTIES C_STANDARD 99 C_EXTENSIONS ON)
  target_include_directories(${name} PRIVATE ${HDF5_INCLUDE_DIRS} ${KERNEL_COMMON_DIR})
  target_compile_definitions(${name} PRIVATE ${HDF5_DEFINITIONS})
  target_link_libraries(${name} PRIVATE MPI::MPI_C ${HDF5_C_LIBRARIES} m)
  if(CMAKE_C_COMPILER_ID MATCHES "GNU|Clang")
    target_compile_options(${name} PRIVATE -Wall -Wextra)
  endif()
  install(TARGETS ${name} RUNTIME DESTINATION bin)
endfunction()
