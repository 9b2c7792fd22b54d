// What Herd trains: a model is the architecture only. Its parameters and their gradients are each
// one contiguous float buffer that the caller owns (one per worker replica, in the memory of the
// ops it computes with), and the scratch space of a pass lives in a workspace the model makes, so
// one model object serves many replicas and evaluations on different threads. The worker, the
// evaluator, checkpoints and the cluster code know this interface and nothing else.
//
// Write your own model by deriving from `model` (docs/models.md); Herd's own models are
// sequential stacks of layers (include/herd/sequential.hpp).
#pragma once

#include "herd/dataset.hpp"
#include "herd/ops.hpp"
#include "herd/tensor.hpp"

#include <cstddef>
#include <cstdint>
#include <memory>
#include <stdexcept>
#include <string>
#include <vector>

namespace herd::models {

/// One sample's shape, without the batch dimension: {784}, or {1, 28, 28} (channels, height,
/// width). A batch is always a rank-2 tensor, batch x elements(shape), row-major.
using shape = std::vector<std::size_t>;

/// The number of floats one sample of `of` holds (the product of its dimensions).
std::size_t elements(const shape& of);
/// "1x28x28"
std::string shape_text(const shape& of);

/// A model that cannot be built as asked: an unknown preset or layer, a malformed layer, or a
/// shape that does not fit. what() is a whole sentence; key() is the setting it comes from
/// ("model.layers", "model.preset", "model.hidden").
class model_error : public std::invalid_argument {
public:
  model_error(std::string key, const std::string& message)
      : std::invalid_argument(message), key_(std::move(key)) {}
  const std::string& key() const { return key_; }

private:
  std::string key_;
};

/// The result of evaluating parameters on a dataset.
struct evaluation {
  double mean_loss = 0.0;
  std::size_t correct = 0;
  std::size_t samples = 0;
  double accuracy() const {
    return samples == 0 ? 0.0 : static_cast<double>(correct) / static_cast<double>(samples);
  }
};

/// Scratch space of one replica's passes: activations and their gradients. Opaque to callers; a
/// model makes its own (make_workspace()) and may move it into the memory of the ops it is used
/// with. One workspace serves one thread at a time.
class model_workspace {
public:
  virtual ~model_workspace() = default;
};

/// Told, while a backward pass runs, how much of the gradient is final, so that a caller can
/// start reducing parts of it (buckets) before the pass ends. Parameters are laid out in forward
/// order and backward visits the layers in reverse, so what is final grows from the end of the
/// buffer towards its start: one number says it.
class gradient_progress {
public:
  virtual ~gradient_progress() = default;
  /// grads[begin, parameter_count()) is final: nothing later in this pass writes it. Called with
  /// `begin` never increasing, the last time with 0. The writes have been issued to the pass's
  /// ops: on the host they are done; on a GPU they are queued on the ops' stream, and a reader
  /// on another stream waits for that stream first.
  virtual void final_from(std::size_t begin) = 0;
};

class model {
public:
  virtual ~model() = default;

  /// For logs: "mlp", "cnn", "sequential", or a user model's own.
  virtual std::string name() const = 0;
  /// The model's structure in words, e.g. "1x28x28: flatten, dense 256, relu, dense 10". A
  /// checkpoint stores it, and a run resumes only from a checkpoint with the same description.
  virtual std::string describe() const = 0;
  /// One sample's shape; a batch holds elements(input_shape()) floats per row (a model of token
  /// sequences, shape {L}, also takes narrower batches: docs/models.md).
  virtual const shape& input_shape() const = 0;
  /// Classes of the classification (the width of the scores).
  virtual std::size_t classes() const = 0;
  /// Floats in the parameter buffer, and in the gradient buffer.
  virtual std::size_t parameter_count() const = 0;

  /// Initial parameters (host memory) drawn from `seed`: the same seed gives the same replica.
  virtual tensor initial_parameters(std::uint64_t seed) const = 0;

  /// A fresh workspace for this model's passes.
  virtual std::unique_ptr<model_workspace> make_workspace() const = 0;
  /// Sets `work` as if it had made `passes` training passes (loss_and_gradient calls): a resumed
  /// run's replica, so that a model whose passes draw randomness from their count (dropout's
  /// masks) draws what the uninterrupted run drew. By default nothing: a model that draws no
  /// randomness, or keeps none in its workspace.
  virtual void set_passes(model_workspace& /*work*/, std::uint64_t /*passes*/) const {}

  /// Forward and backward on one batch (x: rows x elements(input_shape()), one label per row):
  /// overwrites `grads` (parameter_count() floats) with the gradient of the batch's mean loss and
  /// returns that loss. `params`, `x` and `grads` are in ops.memory(); the labels are on the host.
  /// `work` must come from this model's make_workspace().
  virtual float loss_and_gradient(const kernels::ops& ops, const float* params, const tensor& x,
                                  const std::vector<std::int32_t>& labels, float* grads,
                                  model_workspace& work) const = 0;

  /// loss_and_gradient() that tells `progress` as parts of the gradient become final. This
  /// default calls loss_and_gradient() and then progress.final_from(0): right for any model,
  /// with nothing final early. Herd's sequential models report each layer's part as soon as its
  /// backward has written it.
  virtual float loss_and_gradient_with_progress(const kernels::ops& ops, const float* params,
                                                const tensor& x,
                                                const std::vector<std::int32_t>& labels,
                                                float* grads, model_workspace& work,
                                                gradient_progress& progress) const;

  /// The offsets, other than 0, that loss_and_gradient_with_progress() passes to final_from()
  /// before the pass ends (in any order): gradient buckets (comm.bucket-mb) are cut there, so
  /// that a bucket is final as soon as the layers it holds are. By default none: the default
  /// pass reports only the end. A model that reports other offsets lists them here, or its
  /// gradient is reduced in one bucket once the pass ends.
  virtual std::vector<std::size_t> gradient_final_points() const { return {}; }

  /// Forward only, as in evaluation: the batch's mean loss.
  virtual float loss(const kernels::ops& ops, const float* params, const tensor& x,
                     const std::vector<std::int32_t>& labels, model_workspace& work) const = 0;

  /// Forward only, as in evaluation: reshapes `probs` (in ops.memory()) to x.rows() x classes()
  /// and writes each row's class probabilities into it (what `herd predict` prints).
  virtual void probabilities(const kernels::ops& ops, const float* params, const tensor& x,
                             tensor& probs, model_workspace& work) const = 0;

  /// Mean loss and correct predictions over a whole (host) dataset, in batches of `batch_size`
  /// copied into ops.memory(); `params` are in ops.memory(). This default calls probabilities()
  /// once per batch and scores it on the host: the loss is the mean of -log p[label] (p clamped
  /// to 1e-30 so that a certain mistake costs about 69, not infinity), a prediction is correct
  /// when its label's probability is the row's largest (the first of equals). Override it where
  /// the model has a faster way.
  virtual evaluation evaluate(const kernels::ops& ops, const float* params, const dataset& data,
                              std::size_t batch_size, model_workspace& work) const;
};

} // namespace herd::models
