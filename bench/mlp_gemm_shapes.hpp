// The GEMMs of the MLP 784-256-128-10 as models/layers.cpp calls them (weights stored outputs x
// inputs): forward y = x W^T, weight gradient dW = dy^T x, input gradient dx = dy W (not needed
// for the first layer). Shared by the CPU and CUDA kernel benchmarks.
#pragma once

#include "herd/ops.hpp"

#include <string>
#include <vector>

namespace herd::bench {

struct gemm_shape {
  std::string name;
  kernels::transpose trans_a;
  kernels::transpose trans_b;
  int m;
  int n;
  int k;
};

/// The MLP's GEMMs at each batch size, named like "b32_fc2_weight_grad".
inline std::vector<gemm_shape> mlp_gemm_shapes(const std::vector<int>& batches) {
  using kernels::transpose;
  struct layer {
    const char* name;
    int inputs;
    int outputs;
  };
  const layer layers[] = {{"fc1", 784, 256}, {"fc2", 256, 128}, {"fc3", 128, 10}};
  std::vector<gemm_shape> shapes;
  for (const int batch : batches) {
    const std::string prefix = "b" + std::to_string(batch) + "_";
    for (const layer& l : layers) {
      shapes.push_back({prefix + l.name + "_forward", transpose::no, transpose::yes, batch,
                        l.outputs, l.inputs});
      shapes.push_back({prefix + l.name + "_weight_grad", transpose::yes, transpose::no, l.outputs,
                        l.inputs, batch});
      if (l.inputs != 784)
        shapes.push_back({prefix + l.name + "_input_grad", transpose::no, transpose::no, batch,
                          l.inputs, l.outputs});
    }
  }
  return shapes;
}

} // namespace herd::bench
