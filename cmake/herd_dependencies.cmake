# Every dependency comes from a Debian 12 package (or the CUDA toolkit in /usr/local/cuda);
# nothing is downloaded at build time. scripts/install-deps.sh installs what is missing.

find_package(Threads REQUIRED)
find_package(ZLIB REQUIRED)
find_package(nlohmann_json 3.10 REQUIRED)
# cereal (libcereal-dev): the checkpoints' archives. Header-only; its config in
# /usr/lib/<arch>/cmake/cereal defines the imported target cereal::cereal.
find_package(cereal CONFIG QUIET)
if(NOT cereal_FOUND OR NOT TARGET cereal::cereal)
  message(FATAL_ERROR "cereal not found: run scripts/install-deps.sh (apt-get install libcereal-dev)")
endif()
# Gloo (libgloo-dev): the CPU data plane's TCP transport. Its config lives in /usr/share/cmake/Gloo
# and defines the imported target `gloo`.
find_package(Gloo CONFIG QUIET)
if(NOT Gloo_FOUND OR NOT TARGET gloo)
  message(FATAL_ERROR "Gloo not found: run scripts/install-deps.sh (apt-get install libgloo-dev)")
endif()

# CAF and OpenBLAS ship no usable CMake targets; herd_external_targets.cmake makes them, here and
# in the installed package (find_package(herd) runs the same file).
include(herd_external_targets)

# CUDA: detected, never required. CI compiles the CUDA code (nvcc is present there) and the GPU
# tests skip without a device. -DHERD_WITH_CUDA=OFF forces a CPU-only build.
include(CheckLanguage)
# The toolkit's usual home, for machines where nvcc is installed but not on PATH.
if(NOT DEFINED ENV{CUDACXX} AND NOT CMAKE_CUDA_COMPILER AND EXISTS /usr/local/cuda/bin/nvcc)
  set(ENV{CUDACXX} /usr/local/cuda/bin/nvcc)
endif()
check_language(CUDA)
set(herd_cuda_default OFF)
if(CMAKE_CUDA_COMPILER)
  set(herd_cuda_default ON)
endif()
option(HERD_WITH_CUDA "Build the CUDA kernels (auto-detected)" ${herd_cuda_default})
if(HERD_WITH_CUDA)
  if(NOT CMAKE_CUDA_COMPILER)
    message(FATAL_ERROR "HERD_WITH_CUDA=ON but no CUDA compiler was found (set CUDACXX or put nvcc on PATH)")
  endif()
  if(NOT DEFINED CMAKE_CUDA_ARCHITECTURES)
    # H100/H200 (sm_90). Left unset, CMake 3.25 with nvcc 13 would pick sm_75.
    set(CMAKE_CUDA_ARCHITECTURES 90)
  endif()
  enable_language(CUDA)
  set(CMAKE_CUDA_STANDARD 17)
  set(CMAKE_CUDA_STANDARD_REQUIRED ON)
  find_package(CUDAToolkit REQUIRED)
  # herd_nccl, when NCCL is there (the installed package finds it the same way).
  include(herd_cuda_targets)
  set(herd_nccl_default OFF)
  if(TARGET herd_nccl)
    set(herd_nccl_default ON)
  endif()
  option(HERD_WITH_NCCL "Use NCCL for the GPU data plane (auto-detected)" ${herd_nccl_default})
  if(HERD_WITH_NCCL AND NOT TARGET herd_nccl)
    message(FATAL_ERROR "HERD_WITH_NCCL=ON but NCCL was not found next to the CUDA toolkit "
                        "(set NCCL_LIBRARY to libnccl.so and NCCL_INCLUDE_DIR to nccl.h's folder)")
  endif()
  message(STATUS "Herd: CUDA on (architectures ${CMAKE_CUDA_ARCHITECTURES}), NCCL ${HERD_WITH_NCCL}")
else()
  set(HERD_WITH_NCCL OFF)
  message(STATUS "Herd: CUDA off (CPU-only build)")
endif()
