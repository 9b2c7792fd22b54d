// The layer kernels of reference_ops() (im2col and col2im, max pooling, dropout, embedding, the
// sequence kernels) as the plainest loops, in a base class of the reference implementation so that
// each file stays readable. Internal to herd::kernels.
#pragma once

#include "herd/ops.hpp"

#include <cstddef>
#include <cstdint>

namespace herd::kernels {

class reference_layer_ops : public ops {
public:
  void im2col(const float* x, int images, const window2d& window, float* columns) const override;
  void col2im(const float* columns, int images, const window2d& window, float* x) const override;
  void max_pool2d_forward(const float* x, int images, const window2d& window, float* y,
                          std::int32_t* argmax) const override;
  void max_pool2d_backward(const float* dy, const std::int32_t* argmax, int images,
                           const window2d& window, float* dx) const override;
  void dropout_forward(const float* x, float* y, std::size_t n, float p,
                       std::uint64_t seed) const override;
  void dropout_backward(const float* dy, float* dx, std::size_t n, float p,
                        std::uint64_t seed) const override;
  void sequence_tokens(const float* x, int rows, int cols, int steps, std::int32_t* ids,
                       std::int32_t* lengths) const override;
  void embedding_forward(const float* table, int vocab, int dim, const std::int32_t* ids,
                         int tokens, float* y) const override;
  void embedding_backward(const float* dy, const std::int32_t* ids, int tokens, int vocab, int dim,
                          float* table_grad) const override;
  void unfold1d(const float* x, const std::int32_t* lengths, const sequence_window& window,
                float* columns) const override;
  void fold1d(const float* columns, const std::int32_t* lengths, const sequence_window& window,
              float* x) const override;
  void sequence_max_pool_forward(const float* x, const std::int32_t* lengths,
                                 const sequence_window& window, int filters, float* y,
                                 std::int32_t* argmax) const override;
  void sequence_max_pool_backward(const float* dy, const std::int32_t* argmax,
                                  const sequence_window& window, int filters,
                                  float* dx) const override;
};

} // namespace herd::kernels
