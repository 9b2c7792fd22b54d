// HERD_SKIP_WITHOUT_CUDA_DEVICE(): the first line of every gpu-labelled test; without a usable
// device the test skips with the runtime's reason (CUDA error 35 on a machine with no driver).
#pragma once

#include "kernels/cuda/cuda_ops.hpp"
#include "kernels/cuda/device.hpp"

#include <gtest/gtest.h>

#define HERD_SKIP_WITHOUT_CUDA_DEVICE()                                                            \
  do {                                                                                             \
    if (!::herd::kernels::cuda::cuda_device_available())                                           \
      GTEST_SKIP() << "no CUDA device: "                                                           \
                   << ::herd::kernels::cuda::query_devices().unavailable_reason;                   \
  } while (false)
