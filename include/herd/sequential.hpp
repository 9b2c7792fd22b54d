// A sequential model: a list of layers, each taking the previous one's output, under softmax
// cross-entropy. Herd's presets (`mlp`) and model.layers both build one (docs/models.md has the
// grammar).
#pragma once

#include "herd/dataset.hpp"
#include "herd/layers.hpp"
#include "herd/model.hpp"

#include <cstddef>
#include <memory>
#include <string>
#include <vector>

namespace herd::models {

class sequential final : public model {
public:
  /// The layers must chain (each one's input shape the previous one's output shape, the first's
  /// `input`) and end in `classes` scores; build_sequential() checks that with messages a user
  /// can act on, this constructor only asserts it.
  sequential(std::string name, shape input, std::vector<std::unique_ptr<layer>> layers,
             std::size_t classes);

  std::string name() const override { return name_; }
  std::string describe() const override;
  const shape& input_shape() const override { return input_; }
  std::size_t classes() const override { return classes_; }
  std::size_t parameter_count() const override { return parameter_count_; }
  /// Each layer's slice initialised in order from one generator seeded with `seed`.
  tensor initial_parameters(std::uint64_t seed) const override;
  std::unique_ptr<model_workspace> make_workspace() const override;
  /// Dropout's masks are seeded by the pass's number in the workspace.
  void set_passes(model_workspace& work, std::uint64_t passes) const override;
  float loss_and_gradient(const kernels::ops& ops, const float* params, const tensor& x,
                          const std::vector<std::int32_t>& labels, float* grads,
                          model_workspace& work) const override;
  /// Reports final_from(offset of layer i) once layer i's backward has written its slice.
  float loss_and_gradient_with_progress(const kernels::ops& ops, const float* params,
                                        const tensor& x, const std::vector<std::int32_t>& labels,
                                        float* grads, model_workspace& work,
                                        gradient_progress& progress) const override;
  /// Where each layer with parameters after the first begins.
  std::vector<std::size_t> gradient_final_points() const override;
  float loss(const kernels::ops& ops, const float* params, const tensor& x,
             const std::vector<std::int32_t>& labels, model_workspace& work) const override;
  void probabilities(const kernels::ops& ops, const float* params, const tensor& x, tensor& probs,
                     model_workspace& work) const override;
  evaluation evaluate(const kernels::ops& ops, const float* params, const dataset& data,
                      std::size_t batch_size, model_workspace& work) const override;

  /// Whether the model takes token sequences (its first layer takes tokens): then a batch may be
  /// 1 to elements(input_shape()) steps wide, each row a sequence of token ids padded at its end
  /// with negative values, and the model computes over the batch's longest sequence only.
  bool takes_tokens() const { return tokens_; }
  /// With takes_tokens(): the ids the first layer knows, 0 to vocabulary() - 1 (0: any id up to
  /// kernels::largest_token); 0 otherwise.
  std::size_t vocabulary() const { return tokens_ ? layers_.front()->vocabulary() : 0; }
  const std::vector<std::unique_ptr<layer>>& layers() const { return layers_; }
  /// Rows of one evaluation batch of token texts whose longest has `longest` steps, at most
  /// `batch_size`: rows x padded length stay within a bound (a training batch of 32 texts at a
  /// 4,096-byte cap), since a batch's activations grow with both.
  static std::size_t evaluation_rows(std::size_t batch_size, std::size_t longest);
  /// Where layer i's slice starts in the parameter buffer.
  std::size_t parameter_offset(std::size_t layer) const { return offsets_.at(layer); }

private:
  struct workspace;
  workspace& prepare(const kernels::ops& ops, const tensor& x,
                     const std::vector<std::int32_t>& labels, model_workspace& work) const;
  /// The batch's token ids and lengths into work.sequences, over its longest sequence.
  void read_tokens(const kernels::ops& ops, const tensor& x, workspace& work) const;
  /// A pass with the workspace's token sequences when the model takes tokens.
  pass make_pass(const kernels::ops& ops, bool training, std::uint64_t seed,
                 const workspace& work) const;
  /// Leaves the probabilities in work.probs; returns the batch's mean loss.
  float forward(const pass& p, const float* params, const tensor& x, workspace& work) const;

  std::string name_;
  shape input_;
  std::vector<std::unique_ptr<layer>> layers_;
  std::vector<std::size_t> offsets_;
  std::size_t classes_ = 0;
  std::size_t parameter_count_ = 0;
  bool tokens_ = false;
};

/// Checks token sequences as a model that takes tokens (`vocabulary` as
/// sequential::vocabulary()) reads them, before any step does: each value a token id (a whole
/// number below the vocabulary) or padding (any negative value), padding only at the end of a
/// row, and at least one token in each row. Dense rows, or a dataset's token texts. Throws
/// data_error naming `source` (the file), the sample and the position.
void check_token_rows(const tensor& rows, std::size_t vocabulary, const std::string& source);
void check_token_rows(const dataset& data, std::size_t vocabulary, const std::string& source);

/// The layers of a model.layers text: layers separated by commas, each a kind and its
/// arguments separated by spaces ("flatten, dense 128, relu, dense 10"). Throws model_error
/// (key model.layers) for an empty text or an empty layer.
std::vector<layer_spec> parse_layers(const std::string& text);

/// The presets model.preset names: mlp, cnn, textcnn.
const std::vector<std::string>& preset_names();

/// The layers of preset `name` for `classes` classes; `hidden` sizes the MLP's hidden layers.
/// Throws model_error (key model.preset) for an unknown preset, naming those that exist.
std::vector<layer_spec> preset_layers(const std::string& name, const std::vector<int>& hidden,
                                      std::size_t classes);

/// A sequential model of `specs` over samples of shape `input`, scoring `classes` classes.
/// Throws model_error (with `key`) naming the layer, its index and the shapes on both sides when
/// a layer cannot take its input, or when the last layer does not give `classes` scores.
std::unique_ptr<sequential> build_sequential(const std::string& name,
                                             const std::vector<layer_spec>& specs,
                                             const shape& input, std::size_t classes,
                                             const std::string& key);

/// What the [model] settings choose, without the configuration types.
struct model_choice {
  std::string preset = "mlp";        // model.preset
  std::string layers;                // model.layers; when not empty, it defines the model
  std::vector<int> hidden{256, 128}; // model.hidden: the mlp preset's hidden layers
};

/// The model `choice` asks for over samples of shape `input` with `classes` classes: model.layers
/// when set (named "sequential"), else the preset. Throws model_error naming the key at fault.
std::unique_ptr<sequential> build_model(const model_choice& choice, const shape& input,
                                        std::size_t classes);

} // namespace herd::models
