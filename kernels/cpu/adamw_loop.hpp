// cpu_ops' AdamW loop, in a file of its own: it is compiled without errno (see CMakeLists.txt), so
// that its square root vectorises.
#pragma once

#include <cstddef>

namespace herd::kernels {

/// AdamW over n floats in float (kernels::adam_hyper's rule): params *= decay (1 - lr x weight
/// decay), m and v move towards grads and grads^2, then params -= step_size m / (sqrt(v)
/// second_scale + eps), with the step's bias corrections in step_size and second_scale.
void adamw_loop(float* params, const float* grads, float* m, float* v, std::size_t n, float decay,
                float beta1, float beta2, float eps, float step_size, float second_scale);

} // namespace herd::kernels
