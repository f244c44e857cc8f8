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
if(DEFINED HDF5_IS_PARALLEL AND NOT HDF5_IS_PARALLEL)
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
