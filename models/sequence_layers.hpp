// Layers over token sequences of variable length (text): the embedding of token ids, and 1-D
// convolutions of several widths each followed by a global max pool over time (the sentence
// classifier of Kim, 2014). A batch holds rows x T values, T at most the declared length L and
// each row as long as its own sequence; the layers compute over the batch's T steps only, and
// never let padding reach a result.
#pragma once

#include "herd/layers.hpp"
#include "herd/ops.hpp"

#include <cstddef>
#include <string>
#include <vector>

namespace herd::models {

/// Token ids to vectors: takes {L} token ids and gives {L, dim}, channels-last, the table's row of
/// each id; a padding step gives zeros and adds nothing to the gradient. It reads the ids the
/// model computed from the batch (pass::sequences), so it must be the first layer. The slice is
/// the table, vocab x dim; its gradient is a scatter-add of the output gradient into the rows of
/// the batch's ids.
class embedding final : public layer {
public:
  embedding(const shape& input, std::size_t vocab, std::size_t dim);

  std::string describe() const override;
  std::size_t parameter_count() const override { return vocab_ * dim_; }
  /// weight {vocab, dim}: PyTorch's nn.Embedding layout.
  std::vector<parameter_tensor> parameter_tensors() const override {
    return {{"weight", {vocab_, dim_}}};
  }
  /// N(0, 1), as PyTorch's nn.Embedding: the convolution after it is He-initialised for inputs of
  /// unit variance.
  void initialise(float* params, std::mt19937_64& rng) const override;
  bool takes_tokens() const override { return true; }
  std::size_t vocabulary() const override { return vocab_; }
  /// T steps (1 <= T <= L) to T x dim.
  std::size_t output_elements(std::size_t input_elements) const override;
  void forward(const pass& p, const float* params, const tensor& x, tensor& y,
               layer_scratch& scratch) const override;
  /// The table's gradient; token ids have none, so dx must be null.
  void backward(const pass& p, const float* params, const tensor& x, const tensor& y,
                const tensor& dy, float* param_grads, tensor* dx,
                layer_scratch& scratch) const override;

private:
  std::size_t vocab_;
  std::size_t dim_;
};

/// For each of its widths, a 1-D convolution of `filters` filters plus bias over each sequence,
/// then the maximum of each filter over the sequence's positions: takes {L, C} and gives
/// {filters x widths}, the widths' maxima one after the other.
///
/// Positions: all widths share one set per sequence, those of the widest window W padded by W / 2
/// zeros on both sides: n positions for a sequence of n steps when W is odd, n + 1 when it is
/// even. Width w's window at position t covers steps t - w/2 to t - w/2 + w - 1, with zeros
/// outside the sequence, so every sequence of at least one step, even one shorter than a width,
/// has its windows, and padding steps of the batch are never read.
///
/// Computed as one unfold of the widest window (kernels::ops::unfold1d), a GEMM per width that
/// reads its band of those columns and writes its filters' columns of one conv output, and one
/// masked max pool over all widths' filters. The slice holds each width's weights (filters x
/// (w x C), row-major, window step-major), then all biases (filters x widths).
class conv1d_max final : public layer {
public:
  conv1d_max(const shape& input, std::size_t filters, std::vector<std::size_t> widths);

  std::string describe() const override;
  std::size_t parameter_count() const override;
  /// Per width w, "weight.w<w>" {filters, w, C} (window step-major: PyTorch's nn.Conv1d holds
  /// {filters, C, w}), then "bias" {widths, filters}.
  std::vector<parameter_tensor> parameter_tensors() const override;
  /// He initialisation over each width's fan-in, w x C; zero biases.
  void initialise(float* params, std::mt19937_64& rng) const override;
  /// T x C (1 <= T <= L) to filters x widths.
  std::size_t output_elements(std::size_t input_elements) const override;
  /// The unfolded columns and their gradient, the conv output (then its gradient), the argmax of
  /// the pool and, for input without token lengths, a length per sample.
  scratch_need scratch(std::size_t batch, std::size_t input_elements) const override;
  /// Without pass::sequences every sample is as long as the input is wide.
  void forward(const pass& p, const float* params, const tensor& x, tensor& y,
               layer_scratch& scratch) const override;
  void backward(const pass& p, const float* params, const tensor& x, const tensor& y,
                const tensor& dy, float* param_grads, tensor* dx,
                layer_scratch& scratch) const override;

private:
  kernels::sequence_window window(std::size_t batch, std::size_t steps) const;
  /// Where width i's weights start in the slice, and where its band starts in a window.
  std::size_t weight_offset(std::size_t i) const;
  std::size_t band_offset(std::size_t i) const;
  /// The sequence lengths in the ops' memory: the pass's, or `steps` for every sample.
  const std::int32_t* lengths(const pass& p, std::size_t batch, std::size_t steps,
                              layer_scratch& scratch) const;

  std::size_t channels_;
  std::size_t filters_;
  std::vector<std::size_t> widths_;
  std::size_t widest_ = 0;
};

} // namespace herd::models
