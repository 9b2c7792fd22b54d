// AdamW's loop; see adamw_loop.hpp.
#include "kernels/cpu/adamw_loop.hpp"

#include "kernels/cpu/vectorised.hpp"

#include <cmath>

namespace herd::kernels {

HERD_VECTORISED void adamw_loop(float* __restrict params, const float* __restrict grads,
                                float* __restrict m, float* __restrict v, std::size_t n,
                                float decay, float beta1, float beta2, float eps, float step_size,
                                float second_scale) {
  for (std::size_t i = 0; i < n; ++i) {
    const float gradient = grads[i];
    const float first = beta1 * m[i] + (1.0f - beta1) * gradient;
    const float second = beta2 * v[i] + (1.0f - beta2) * gradient * gradient;
    m[i] = first;
    v[i] = second;
    params[i] = params[i] * decay - step_size * first / (std::sqrt(second) * second_scale + eps);
  }
}

} // namespace herd::kernels
