// The sequential model: the mlp preset computes bit for bit what the MLP computed before models
// became sequential stacks of layers, the model.layers grammar, shape inference and its messages,
// and the presets.
#include "herd/dataset.hpp"
#include "herd/ops.hpp"
#include "herd/sequential.hpp"

#include <cmath>
#include <gtest/gtest.h>
#include <string>
#include <vector>

namespace {

using herd::models::build_model;
using herd::models::model_choice;
using herd::models::model_error;
using herd::models::shape;
using herd::models::tensor;

// What build_model(choice, input, classes) throws, or "" when it builds.
std::string build_error(const model_choice& choice, const shape& input, std::size_t classes,
                        std::string* key = nullptr) {
  try {
    build_model(choice, input, classes);
  } catch (const model_error& error) {
    if (key != nullptr)
      *key = error.key();
    return error.what();
  }
  return "";
}

model_choice layers(std::string text) {
  model_choice choice;
  choice.layers = std::move(text);
  return choice;
}

#define EXPECT_CONTAINS(text, part)                                                                \
  EXPECT_NE(std::string(text).find(part), std::string::npos) << "in: " << (text)

// The 784-256-128-10 MLP at seed 7 on 32 synthetic samples, computed with the reference kernels
// by the MLP class this model replaced (before the change, printed with %a): the loss, gradient
// entries of every layer's weights and biases, the sum of the whole gradient, initial
// parameters, and an evaluation. The preset must reproduce all of them exactly: the same
// initialisation order and the same arithmetic.
TEST(sequential, the_mlp_preset_is_bit_identical_to_the_mlp_it_replaced) {
  const auto& ops = herd::kernels::reference_ops();
  const auto model = build_model(model_choice{}, {1, 28, 28}, 10);
  ASSERT_EQ(model->parameter_count(), 235146u);
  const tensor params = model->initial_parameters(7);
  const auto data = herd::models::make_synthetic_dataset(64, 784, 10, 3);
  tensor x({32, 784});
  for (std::size_t i = 0; i < x.size(); ++i)
    x[i] = data.images[i];
  const std::vector<std::int32_t> labels(data.labels.begin(), data.labels.begin() + 32);
  tensor grads({model->parameter_count()});
  const auto work = model->make_workspace();
  EXPECT_EQ(model->loss_and_gradient(ops, params.data(), x, labels, grads.data(), *work),
            0x1.96e2cep+1f);

  struct entry {
    std::size_t index;
    float grad;
    float param;
  };
  const entry expected[] = {
      {0, 0x1.7eaa2ap-7f, 0x1.6915c6p-5f},
      {1, 0x1.e5619p-11f, -0x1.9267f8p-5f},
      {783, -0x1.ef7342p-12f, 0x1.ed7306p-5f},
      {200704, -0x1.7ab1c4p-8f, 0.0f},
      {200959, 0x1.456446p-9f, 0.0f},
      {200960, 0x1.06b534p-12f, -0x1.e2b73ap-6f},
      {233727, 0x1.d5baap-7f, -0x1.0f028cp-4f},
      {233778, -0x1.301172p-9f, 0.0f},
      {233856, -0x1.6d9604p-10f, -0x1.510c66p-11f},
      {235135, -0x1.18f348p-3f, -0x1.1eebb8p-4f},
      {235145, -0x1.895362p-6f, 0.0f},
  };
  for (const auto& e : expected) {
    EXPECT_EQ(grads[e.index], e.grad) << "gradient " << e.index;
    EXPECT_EQ(params[e.index], e.param) << "parameter " << e.index;
  }
  double sum = 0.0;
  for (std::size_t i = 0; i < grads.size(); ++i)
    sum += grads[i];
  EXPECT_EQ(sum, 0x1.48985042de9afp+6);

  const auto result = model->evaluate(ops, params.data(), data, 20, *work);
  EXPECT_EQ(result.mean_loss, 0x1.90fd47ap+1);
  EXPECT_EQ(result.correct, 4u);
  EXPECT_EQ(result.samples, 64u);
}

TEST(sequential, the_mlp_preset_is_flatten_then_dense_and_relu_layers) {
  model_choice choice;
  choice.hidden = {256, 128};
  const auto model = build_model(choice, {1, 28, 28}, 10);
  EXPECT_EQ(model->name(), "mlp");
  EXPECT_EQ(model->describe(), "1x28x28: flatten, dense 256, relu, dense 128, relu, dense 10");
  EXPECT_EQ(model->classes(), 10u);
  EXPECT_EQ(model->input_shape(), (shape{1, 28, 28}));
  choice.hidden = {};
  EXPECT_EQ(build_model(choice, {784}, 10)->describe(), "784: flatten, dense 10");
  // The same layers written out are the same structure (a checkpoint of one resumes the other).
  const auto written =
      build_model(layers("flatten, dense 256, relu, dense 128, relu, dense 10"), {1, 28, 28}, 10);
  EXPECT_EQ(written->name(), "sequential");
  EXPECT_EQ(written->describe(), model->describe());
}

// Each layer's tensors (what herd export writes) cover its slice exactly, in every layer kind
// with parameters; their shapes are the documented ones.
TEST(sequential, every_layers_parameter_tensors_cover_its_slice) {
  const auto texts = build_model(layers("embedding 20 4, conv1d-max 3 2 3, relu, dense 2"), {9}, 2);
  const auto images =
      build_model(layers("conv 4 3x3 pad 1, relu, maxpool 2x2, flatten, dense 5"), {2, 6, 6}, 5);
  for (const auto* built : {texts.get(), images.get()}) {
    const auto& model = dynamic_cast<const herd::models::sequential&>(*built);
    for (const auto& layer : model.layers()) {
      std::size_t covered = 0;
      for (const auto& tensor : layer->parameter_tensors())
        covered += herd::models::elements(tensor.dims);
      EXPECT_EQ(covered, layer->parameter_count()) << layer->describe();
    }
  }
  const auto& text_layers = dynamic_cast<const herd::models::sequential&>(*texts).layers();
  EXPECT_EQ(text_layers[0]->parameter_tensors()[0].dims, (shape{20, 4}));
  const auto conv1d = text_layers[1]->parameter_tensors();
  ASSERT_EQ(conv1d.size(), 3u);
  EXPECT_EQ(conv1d[0].name, "weight.w2");
  EXPECT_EQ(conv1d[0].dims, (shape{3, 2, 4}));
  EXPECT_EQ(conv1d[1].dims, (shape{3, 3, 4}));
  EXPECT_EQ(conv1d[2].dims, (shape{2, 3}));
  const auto& image_layers = dynamic_cast<const herd::models::sequential&>(*images).layers();
  EXPECT_EQ(image_layers[0]->parameter_tensors()[0].dims, (shape{4, 2, 3, 3}));
  EXPECT_EQ(image_layers[4]->parameter_tensors()[0].dims, (shape{5, 36}));
}

TEST(sequential, the_grammar_reads_kinds_and_arguments_separated_by_commas_and_spaces) {
  const auto specs = herd::models::parse_layers("  flatten,dense   128 ,relu, dense 10  ");
  ASSERT_EQ(specs.size(), 4u);
  EXPECT_EQ(specs[0].kind, "flatten");
  EXPECT_TRUE(specs[0].arguments.empty());
  EXPECT_EQ(specs[1].kind, "dense");
  EXPECT_EQ(specs[1].arguments, std::vector<std::string>{"128"});
  EXPECT_EQ(specs[1].text, "dense   128");
  EXPECT_EQ(specs[3].arguments, std::vector<std::string>{"10"});
}

TEST(sequential, malformed_layers_are_refused_naming_the_layer) {
  std::string key;
  EXPECT_CONTAINS(build_error(layers("flatten,, dense 10"), {784}, 10, &key), "layer 2 is empty");
  EXPECT_EQ(key, "model.layers");
  EXPECT_CONTAINS(build_error(layers("flatten, dense 10,"), {784}, 10), "layer 3 is empty");
  // An unknown name is said first, without the shape it would have taken.
  EXPECT_CONTAINS(build_error(layers("flatten, lstm 32, dense 10"), {784}, 10),
                  "model.layers: layer 2 of 3 (lstm 32): unknown layer");
  EXPECT_CONTAINS(build_error(layers("flatten, lstm 32, dense 10"), {784}, 10),
                  "unknown layer \"lstm\"; the layers are: dense N, relu, flatten, conv FILTERS K "
                  "[stride S] [pad P], maxpool K [stride S], dropout P, embedding VOCAB DIM, "
                  "conv1d-max FILTERS W [W ...]");
  EXPECT_CONTAINS(build_error(layers("flatten, dense 10, softmax"), {784}, 10),
                  "unknown layer \"softmax\" (the loss applies softmax itself: end the model with "
                  "dense CLASSES)");
  EXPECT_CONTAINS(build_error(layers("dense"), {784}, 10), "lacks arguments; write dense N");
  EXPECT_CONTAINS(build_error(layers("dense 10 wide"), {784}, 10),
                  "\"wide\" is not an argument of dense");
  EXPECT_CONTAINS(build_error(layers("dense ten"), {784}, 10), "not \"ten\"");
  EXPECT_CONTAINS(build_error(layers("dense 0"), {784}, 10), "between 1 and");
  // Padding may be 0 (its default), and the message says so.
  EXPECT_CONTAINS(build_error(layers("conv 4 3 pad -1, flatten, dense 10"), {1, 8, 8}, 10),
                  "pad must be a whole number between 0 and 16777216, not \"-1\"");
  EXPECT_CONTAINS(build_error(layers("dense 10, relu 3"), {784}, 10), "relu, without arguments");
  EXPECT_CONTAINS(build_error(layers("flatten, relu"), {10}, 10), "no layer has parameters");
}

// A shape that does not fit names the layer, its index and the shapes on both sides.
TEST(sequential, a_shape_that_does_not_fit_names_the_layer_and_both_shapes) {
  std::string key;
  const auto unflattened = build_error(layers("dense 128, relu, dense 10"), {1, 28, 28}, 10, &key);
  EXPECT_EQ(key, "model.layers");
  EXPECT_CONTAINS(unflattened, "model.layers: layer 1 of 3 (dense 128) is given 1x28x28 by the "
                               "data's samples: dense takes a flat input, not 1x28x28; put "
                               "flatten before it");
  const auto wrong_end = build_error(layers("flatten, dense 128, relu, dense 12"), {784}, 10);
  EXPECT_CONTAINS(wrong_end, "layer 4 of 4 (dense 12), gives 12 but the loss needs 10 scores");
  EXPECT_CONTAINS(wrong_end, "end with dense 10");
  const auto after_relu = build_error(layers("flatten, relu, dense 4, relu, dense 3"), {2, 2}, 10);
  EXPECT_CONTAINS(after_relu, "gives 3 but the loss needs 10");
}

TEST(sequential, an_unknown_preset_names_the_presets_that_exist) {
  model_choice choice;
  choice.preset = "resnet";
  std::string key;
  EXPECT_CONTAINS(build_error(choice, {784}, 10, &key),
                  "model.preset = \"resnet\": unknown preset; the presets are: mlp, cnn, textcnn");
  EXPECT_EQ(key, "model.preset");
  EXPECT_EQ(herd::models::preset_names(), (std::vector<std::string>{"mlp", "cnn", "textcnn"}));
}

TEST(sequential, a_workspace_serves_only_the_model_that_made_it) {
  const auto a = build_model(layers("dense 3"), {4}, 3);
  const auto b = build_model(layers("dense 3"), {4}, 3);
  const auto work = b->make_workspace();
  tensor params = a->initial_parameters(1);
  tensor grads({a->parameter_count()});
  const tensor x({2, 4});
  const std::vector<std::int32_t> labels{0, 1};
  EXPECT_THROW(
      a->loss_and_gradient(herd::kernels::cpu_ops(), params.data(), x, labels, grads.data(), *work),
      std::invalid_argument);
}

TEST(sequential, flatten_copies_forward_and_backward) {
  const herd::models::flatten layer({2, 3});
  EXPECT_EQ(layer.output_shape(), shape{6});
  EXPECT_TRUE(layer.passes_through());
  tensor x({2, 6});
  for (std::size_t i = 0; i < x.size(); ++i)
    x[i] = static_cast<float>(i) - 3.0f;
  tensor y;
  tensor dx;
  herd::models::layer_scratch scratch(herd::kernels::host_memory());
  const herd::models::pass p{herd::kernels::cpu_ops(), true, 0};
  layer.forward(p, nullptr, x, y, scratch);
  EXPECT_EQ(y.to_host(), x.to_host());
  layer.backward(p, nullptr, x, y, x, nullptr, &dx, scratch);
  EXPECT_EQ(dx.to_host(), x.to_host());
}

} // namespace

namespace {

// probabilities() is the forward pass of evaluation: rows that sum to 1, whose argmax is what
// evaluate() counts as the prediction, and whose mean -log p(label) is loss().
TEST(sequential, probabilities_are_the_forward_pass_that_loss_and_evaluate_use) {
  const auto model = build_model(layers("dense 8, relu, dense 5"), {6}, 5);
  const auto data = herd::models::make_synthetic_dataset(37, 6, 5, 11);
  const auto& ops = herd::kernels::cpu_ops();
  const tensor params = model->initial_parameters(3);
  const auto work = model->make_workspace();
  tensor probs;
  model->probabilities(ops, params.data(), data.images, probs, *work);
  ASSERT_EQ(probs.rows(), data.size());
  ASSERT_EQ(probs.cols(), 5u);
  double log_loss = 0.0;
  std::size_t correct = 0;
  for (std::size_t r = 0; r < probs.rows(); ++r) {
    double sum = 0.0;
    std::size_t best = 0;
    for (std::size_t c = 0; c < 5; ++c) {
      sum += probs.row(r)[c];
      if (probs.row(r)[c] > probs.row(r)[best])
        best = c;
    }
    EXPECT_NEAR(sum, 1.0, 1e-5) << "row " << r;
    log_loss -= std::log(probs.row(r)[data.labels[r]]);
    correct += static_cast<std::int32_t>(best) == data.labels[r] ? 1 : 0;
  }
  EXPECT_NEAR(log_loss / data.size(),
              model->loss(ops, params.data(), data.images, data.labels, *work), 1e-4);
  const auto evaluated = model->evaluate(ops, params.data(), data, 10, *work);
  EXPECT_EQ(correct, evaluated.correct);
  EXPECT_GT(correct, 0u); // random parameters: some right, so the comparison means something
  EXPECT_LT(correct, data.size());
  // The interface's default evaluate() (what a hand-written model gets) agrees with the
  // sequential model's own, over batches that do not divide the dataset.
  const auto by_default = model->herd::models::model::evaluate(ops, params.data(), data, 10, *work);
  EXPECT_EQ(by_default.correct, evaluated.correct);
  EXPECT_EQ(by_default.samples, data.size());
  EXPECT_NEAR(by_default.mean_loss, evaluated.mean_loss, 1e-4);
}

} // namespace
