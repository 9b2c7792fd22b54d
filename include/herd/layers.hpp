// The layers of Herd's sequential models. Layers own no parameters: each reads and writes a
// slice of the model's single parameter buffer (and gradient buffer), so a reduction is always
// one buffer. A layer is built for the shape of its input and knows the shape of its output
// (shape inference), so a model is checked when it is built, before anything runs.
//
// Activations are rank-2 tensors, batch x elements per sample. Most layers take exactly
// elements(input_shape()) per sample; sequence layers take sequences of any length up to their
// declared one, so their widths come from the tensors (output_elements() says how wide a layer's
// output is for a given input).
#pragma once

#include "herd/model.hpp"
#include "herd/ops.hpp"
#include "herd/tensor.hpp"

#include <cstddef>
#include <cstdint>
#include <memory>
#include <random>
#include <string>
#include <vector>

namespace herd::models {

/// A batch of token sequences as the sequence layers read it, in the ops' memory: the model
/// computes it once per batch from its float input (kernels::ops::sequence_tokens).
struct sequence_batch {
  /// rows x steps token ids, kernels::padding_id past each row's length.
  const std::int32_t* ids = nullptr;
  /// rows lengths, each in [1, steps].
  const std::int32_t* lengths = nullptr;
  /// The batch's longest sequence: the steps every layer computes over.
  std::size_t steps = 0;
};

/// What one pass hands every layer.
struct pass {
  const kernels::ops& ops;
  /// False in evaluation (layers such as dropout then pass their input through).
  bool training = true;
  /// Differs from step to step (and from layer to layer): dropout draws its mask from it.
  std::uint64_t seed = 0;
  /// The batch's token sequences when the model takes tokens (its first layer's takes_tokens()),
  /// else null.
  const sequence_batch* sequences = nullptr;
};

/// One tensor of a layer's parameter slice: its name and its shape, row-major.
struct parameter_tensor {
  std::string name; // "weight", "bias"
  shape dims;
};

/// Scratch space a layer asks for, for a batch of a given size.
struct scratch_need {
  std::size_t floats = 0;
  std::size_t ints = 0;
};

/// A layer's scratch in the ops' memory, kept from its forward pass to its backward pass (e.g.
/// pooling's argmax); the model grows it to scratch() before each forward pass and never shrinks
/// it, so a layer may grow it further in forward() (a convolution taking several images per call).
struct layer_scratch {
  explicit layer_scratch(const kernels::memory& where) : floats(where), ints(0, where) {}
  tensor floats;
  kernels::buffer<std::int32_t> ints;
};

class layer {
public:
  virtual ~layer() = default;

  /// The layer as model.layers writes it: "dense 128", "relu".
  virtual std::string describe() const = 0;
  const shape& input_shape() const { return input_; }
  const shape& output_shape() const { return output_; }

  /// Floats of this layer's slice of the parameter buffer (0: none).
  virtual std::size_t parameter_count() const { return 0; }
  /// The tensors its slice holds, in order, their elements adding up to parameter_count() (what
  /// `herd export` writes). Empty for a layer without parameters, or one that does not say (its
  /// slice is then exported flat).
  virtual std::vector<parameter_tensor> parameter_tensors() const { return {}; }
  /// Writes the initial values of this layer's slice, drawing from `rng` (the model's, shared by
  /// its layers in order).
  virtual void initialise(float* /*params*/, std::mt19937_64& /*rng*/) const {}

  /// True when the layer reads the batch's token ids (pass::sequences) rather than its input's
  /// values: the model then takes batches of token sequences, and the layer must come first.
  virtual bool takes_tokens() const { return false; }
  /// For a layer that takes tokens: how many ids it knows (0 to vocabulary() - 1); 0 where it
  /// bounds them no further than kernels::largest_token.
  virtual std::size_t vocabulary() const { return 0; }
  /// The elements per sample of this layer's output for `input_elements` per sample of input.
  /// Throws std::invalid_argument for a width the layer cannot take. By default the layer takes
  /// exactly elements(input_shape()) and gives elements(output_shape()).
  virtual std::size_t output_elements(std::size_t input_elements) const;

  /// Scratch for a batch of `batch` samples of `input_elements` each (beyond the input and output
  /// the model keeps anyway).
  virtual scratch_need scratch(std::size_t /*batch*/, std::size_t /*input_elements*/) const {
    return {};
  }
  /// True when the output is the input unchanged (flatten): the model then passes the buffer
  /// through without calling forward() or backward().
  virtual bool passes_through() const { return false; }

  /// y (batch x output_elements(x.cols())) from x. `scratch` holds at least
  /// scratch(batch, x.cols()) in the ops' memory.
  virtual void forward(const pass& p, const float* params, const tensor& x, tensor& y,
                       layer_scratch& scratch) const = 0;

  /// Given y = forward(x) (with the same pass and scratch) and dy = dL/dy: overwrites
  /// param_grads (this layer's slice) with dL/d(params) and, when dx is not null, writes dL/dx.
  virtual void backward(const pass& p, const float* params, const tensor& x, const tensor& y,
                        const tensor& dy, float* param_grads, tensor* dx,
                        layer_scratch& scratch) const = 0;

protected:
  layer(shape input, shape output) : input_(std::move(input)), output_(std::move(output)) {}

private:
  shape input_;
  shape output_;
};

/// A layer as model.layers writes it: "dense 128" is kind "dense", arguments {"128"}.
struct layer_spec {
  std::string kind;
  std::vector<std::string> arguments;
  std::string text; // as written, for messages
};

/// The layer kinds make_layer() knows, with their grammar, for messages and docs.
const std::vector<std::string>& layer_grammar();

/// Empty when make_layer() knows `kind`; else why not: "unknown layer \"relux\"; the layers
/// are: ...".
std::string unknown_layer(const std::string& kind);

/// The layer `spec` asks for, taking samples of shape `input`. Throws std::invalid_argument
/// saying what is wrong with the layer (unknown kind, bad arguments, an input shape it cannot
/// take); the model adds which layer it is.
std::unique_ptr<layer> make_layer(const layer_spec& spec, const shape& input);

/// Fully connected: y = x W^T + b with W stored outputs x inputs (row-major), then b; the slice
/// holds [W | b]. Takes a flat input ({n}).
class dense final : public layer {
public:
  dense(const shape& input, std::size_t outputs);

  std::size_t inputs() const { return input_shape().front(); }
  std::size_t outputs() const { return output_shape().front(); }
  std::string describe() const override;
  std::size_t parameter_count() const override { return inputs() * outputs() + outputs(); }
  /// weight {outputs, inputs}, bias {outputs}: PyTorch's nn.Linear layout.
  std::vector<parameter_tensor> parameter_tensors() const override {
    return {{"weight", {outputs(), inputs()}}, {"bias", {outputs()}}};
  }
  /// He initialisation (for the ReLUs that follow): W ~ N(0, 2 / inputs), b = 0.
  void initialise(float* params, std::mt19937_64& rng) const override;
  void forward(const pass& p, const float* params, const tensor& x, tensor& y,
               layer_scratch& scratch) const override;
  /// dL/d[W | b]; dx = dy W.
  void backward(const pass& p, const float* params, const tensor& x, const tensor& y,
                const tensor& dy, float* param_grads, tensor* dx,
                layer_scratch& scratch) const override;
};

/// max(x, 0), elementwise; any shape.
class relu final : public layer {
public:
  explicit relu(const shape& input) : layer(input, input) {}
  std::string describe() const override { return "relu"; }
  std::size_t output_elements(std::size_t input_elements) const override { return input_elements; }
  void forward(const pass& p, const float* params, const tensor& x, tensor& y,
               layer_scratch& scratch) const override;
  /// dx = dy where the forward output y was positive.
  void backward(const pass& p, const float* params, const tensor& x, const tensor& y,
                const tensor& dy, float* param_grads, tensor* dx,
                layer_scratch& scratch) const override;
};

/// Any shape to a flat one ({1, 28, 28} to {784}); the data stay where they are.
class flatten final : public layer {
public:
  explicit flatten(const shape& input) : layer(input, {elements(input)}) {}
  std::string describe() const override { return "flatten"; }
  std::size_t output_elements(std::size_t input_elements) const override { return input_elements; }
  bool passes_through() const override { return true; }
  void forward(const pass& p, const float* params, const tensor& x, tensor& y,
               layer_scratch& scratch) const override;
  void backward(const pass& p, const float* params, const tensor& x, const tensor& y,
                const tensor& dy, float* param_grads, tensor* dx,
                layer_scratch& scratch) const override;
};

/// Inverted dropout while training: each element is dropped with probability p, the others scaled
/// by 1 / (1 - p); the mask comes from the pass's seed (a new one every step). In evaluation the
/// input passes unchanged. Any shape.
class dropout final : public layer {
public:
  dropout(const shape& input, float probability);
  std::string describe() const override;
  std::size_t output_elements(std::size_t input_elements) const override { return input_elements; }
  void forward(const pass& p, const float* params, const tensor& x, tensor& y,
               layer_scratch& scratch) const override;
  void backward(const pass& p, const float* params, const tensor& x, const tensor& y,
                const tensor& dy, float* param_grads, tensor* dx,
                layer_scratch& scratch) const override;

private:
  float probability_;
};

/// The loss of every sequential model: softmax over each row of the logits followed by the mean
/// cross-entropy against the labels (one per row, in the ops' memory like the tensors).
class softmax_cross_entropy {
public:
  /// Writes the probabilities and returns the mean loss.
  static float forward(const kernels::ops& ops, const tensor& logits, const std::int32_t* labels,
                       tensor& probs);
  /// dL/dlogits of the mean loss: (probs - onehot) / rows.
  static void backward(const kernels::ops& ops, const tensor& probs, const std::int32_t* labels,
                       tensor& dlogits);
};

} // namespace herd::models
