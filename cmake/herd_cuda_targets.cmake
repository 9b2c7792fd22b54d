# herd_nccl: NCCL's library and header as an imported target, found next to the CUDA toolkit with
# find_library/find_path when Herd is configured and again when a consumer calls find_package(herd)
# (herdConfig.cmake includes this file), so that no path of the machine Herd was built on ends up
# in the installed package. Needs find_package(CUDAToolkit) first; NCCL_LIBRARY and
# NCCL_INCLUDE_DIR may be set to point elsewhere.
if(NOT TARGET herd_nccl)
  find_library(NCCL_LIBRARY nccl HINTS ${CUDAToolkit_LIBRARY_DIR})
  find_path(NCCL_INCLUDE_DIR nccl.h HINTS ${CUDAToolkit_INCLUDE_DIRS})
  if(NCCL_LIBRARY AND NCCL_INCLUDE_DIR)
    add_library(herd_nccl UNKNOWN IMPORTED)
    set_target_properties(herd_nccl PROPERTIES
      IMPORTED_LOCATION ${NCCL_LIBRARY}
      INTERFACE_INCLUDE_DIRECTORIES ${NCCL_INCLUDE_DIR})
  endif()
endif()
