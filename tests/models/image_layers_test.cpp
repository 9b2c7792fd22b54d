// The convolution, max-pooling and dropout layers: finite-difference gradient checks of each
// (parameters and inputs), their shapes and grammar, a small CNN's whole gradient, the cnn
// preset, and a small CNN that learns.
#include "herd/dataset.hpp"
#include "herd/ops.hpp"
#include "herd/sequential.hpp"
#include "models/image_layers.hpp"

#include <cmath>
#include <functional>
#include <gtest/gtest.h>
#include <random>
#include <string>

#include "support/delegating_ops.hpp"
#include "support/gradient_check.hpp"

namespace {

using herd::testing::expect_gradient_matches;
using herd::testing::random_tensor;
using herd::testing::weighted;

using herd::models::build_model;
using herd::models::layer_scratch;
using herd::models::layer_spec;
using herd::models::model_choice;
using herd::models::pass;
using herd::models::shape;
using herd::models::tensor;

const herd::kernels::ops& ops = herd::kernels::cpu_ops();

std::unique_ptr<herd::models::layer> make(const std::string& text, const shape& input) {
  return herd::models::make_layer(herd::models::parse_layers(text).front(), input);
}

// A scratch sized as a model sizes it before the forward pass of `batch` rows of `width`.
layer_scratch scratch_for(const herd::models::layer& layer, const herd::kernels::memory& where,
                          std::size_t batch, std::size_t width) {
  layer_scratch scratch(where);
  const auto need = layer.scratch(batch, width);
  if (need.floats > 0)
    scratch.floats.reshape({need.floats});
  if (need.ints > 0)
    scratch.ints.resize(need.ints);
  return scratch;
}

// loss = <layer(x), r>: checks dL/dx and, when the layer has any, dL/d(params).
void check_layer(const herd::models::layer& layer, std::size_t batch, std::uint64_t seed,
                 const pass& p, const char* what) {
  tensor params({std::max<std::size_t>(layer.parameter_count(), 1)});
  std::mt19937_64 rng(seed);
  layer.initialise(params.data(), rng);
  for (std::size_t i = 0; i < layer.parameter_count(); ++i) // non-zero biases too
    if (params[i] == 0.0f)
      params[i] = 0.1f * static_cast<float>(i % 7) - 0.3f;
  tensor x = random_tensor({batch, herd::models::elements(layer.input_shape())}, seed + 1);
  const tensor upstream =
      random_tensor({batch, herd::models::elements(layer.output_shape())}, seed + 2);
  layer_scratch scratch = scratch_for(layer, ops.memory(), batch, x.cols());
  tensor y;
  tensor dx;
  tensor grads({params.size()});
  layer.forward(p, params.data(), x, y, scratch);
  layer.backward(p, params.data(), x, y, upstream, grads.data(), &dx, scratch);
  ASSERT_EQ(dx.size(), x.size());
  auto loss = [&] {
    tensor out;
    layer_scratch fresh = scratch_for(layer, ops.memory(), batch, x.cols());
    layer.forward(p, params.data(), x, out, fresh);
    return weighted(out, upstream);
  };
  if (layer.parameter_count() > 0)
    expect_gradient_matches(params.data(), layer.parameter_count(), grads.data(), loss, what);
  expect_gradient_matches(x.data(), x.size(), dx.data(), loss, what);
}

TEST(image_layers, conv_shapes_parameters_and_description) {
  const auto conv = make("conv 8 3x3 pad 1", {1, 28, 28});
  EXPECT_EQ(conv->output_shape(), (shape{8, 28, 28}));
  EXPECT_EQ(conv->parameter_count(), 8u * 9 + 8);
  EXPECT_EQ(conv->describe(), "conv 8 3x3 pad 1");
  const auto strided = make("conv 4 3x2 stride 2", {3, 9, 8});
  EXPECT_EQ(strided->output_shape(), (shape{4, 4, 4}));
  EXPECT_EQ(strided->describe(), "conv 4 3x2 stride 2x2");
  const auto pool = make("maxpool 2", {8, 28, 28});
  EXPECT_EQ(pool->output_shape(), (shape{8, 14, 14}));
  EXPECT_EQ(pool->describe(), "maxpool 2x2");
  EXPECT_EQ(make("maxpool 3 stride 2", {1, 7, 7})->output_shape(), (shape{1, 3, 3}));
  EXPECT_EQ(make("dropout 0.25", {5, 2})->describe(), "dropout 0.25");
}

TEST(image_layers, gradient_check_conv_with_padding_and_stride) {
  check_layer(*make("conv 3 3x2 stride 1x2 pad 1", {2, 5, 6}), 2, 51, pass{ops, true, 0}, "conv");
  check_layer(*make("conv 2 3", {1, 4, 4}), 3, 52, pass{ops, true, 0}, "conv unpadded");
}

// A GPU's ops take a convolution's images several per call (ops::images_per_call): im2col and
// gemm_batched over a chunk, each image's weight and bias gradients summed per chunk. The CPU's
// ops with that hint run the same path.
class chunking_ops final : public herd::testing::delegating_ops {
public:
  int images_per_call() const override { return 5; }
};

struct conv_pass {
  tensor y;
  tensor grads;
  tensor dx;
};

conv_pass forward_and_backward(const herd::models::layer& layer, const herd::kernels::ops& with,
                               const tensor& params, const tensor& x, const tensor& dy) {
  layer_scratch scratch = scratch_for(layer, with.memory(), x.rows(), x.cols());
  conv_pass result{tensor(), tensor({params.size()}), tensor()};
  const pass p{with, true, 0};
  layer.forward(p, params.data(), x, result.y, scratch);
  layer.backward(p, params.data(), x, result.y, dy, result.grads.data(), &result.dx, scratch);
  return result;
}

TEST(image_layers, conv_in_chunks_of_images_matches_one_image_at_a_time) {
  const chunking_ops chunks;
  const auto layer = make("conv 3 3x2 stride 1x2 pad 1", {2, 5, 6});
  check_layer(*layer, 7, 53, pass{chunks, true, 0}, "conv in chunks"); // chunks of 5 and 2
  tensor params({layer->parameter_count()});
  std::mt19937_64 rng(54);
  layer->initialise(params.data(), rng);
  for (std::size_t i = 0; i < params.size(); ++i) // non-zero biases
    params[i] += 0.01f * static_cast<float>(i % 5);
  for (const std::size_t images : {std::size_t{1}, std::size_t{6}, std::size_t{13}}) {
    const tensor x = random_tensor({images, herd::models::elements(layer->input_shape())}, 55);
    const tensor dy = random_tensor({images, herd::models::elements(layer->output_shape())}, 56);
    const conv_pass one = forward_and_backward(*layer, ops, params, x, dy);
    const conv_pass chunked = forward_and_backward(*layer, chunks, params, x, dy);
    EXPECT_EQ(chunked.y.to_host(), one.y.to_host()) << images << " images";
    EXPECT_EQ(chunked.dx.to_host(), one.dx.to_host()) << images << " images";
    EXPECT_LT(
        herd::models::relative_difference(chunked.grads.data(), one.grads.data(), params.size()),
        1e-6)
        << images << " images";
  }
}

TEST(image_layers, gradient_check_maxpool_plain_and_overlapping) {
  check_layer(*make("maxpool 2", {2, 4, 6}), 2, 61, pass{ops, true, 0}, "maxpool 2");
  check_layer(*make("maxpool 3 stride 1", {1, 5, 5}), 2, 62, pass{ops, true, 0}, "maxpool 3/1");
}

TEST(image_layers, gradient_check_dropout_and_its_mask) {
  const auto layer = make("dropout 0.3", {40});
  check_layer(*layer, 3, 71, pass{ops, true, 17}, "dropout");
  // About p of a large input is dropped, the rest scaled; another seed draws another mask; in
  // evaluation the input passes unchanged.
  const auto wide = make("dropout 0.3", {10000});
  tensor x({1, 10000});
  x.fill(1.0f);
  tensor y;
  tensor z;
  layer_scratch scratch(ops.memory());
  wide->forward(pass{ops, true, 1}, nullptr, x, y, scratch);
  wide->forward(pass{ops, true, 2}, nullptr, x, z, scratch);
  std::size_t dropped = 0;
  std::size_t differ = 0;
  for (std::size_t i = 0; i < y.size(); ++i) {
    dropped += y[i] == 0.0f;
    differ += y[i] != z[i];
    if (y[i] != 0.0f) {
      ASSERT_FLOAT_EQ(y[i], 1.0f / 0.7f);
    }
  }
  EXPECT_NEAR(static_cast<double>(dropped) / 10000.0, 0.3, 0.03);
  EXPECT_GT(differ, 1000u);
  wide->forward(pass{ops, false, 1}, nullptr, x, y, scratch);
  EXPECT_EQ(y.to_host(), x.to_host());
}

TEST(image_layers, gradient_check_a_whole_small_cnn) {
  model_choice choice;
  choice.layers = "conv 3 3 pad 1, relu, maxpool 2, flatten, dense 5, relu, dense 3";
  const auto model = build_model(choice, {2, 6, 6}, 3);
  EXPECT_EQ(model->parameter_count(), (3u * 18 + 3) + (27u * 5 + 5) + (5u * 3 + 3));
  tensor params = model->initial_parameters(81);
  for (std::size_t i = 0; i < params.size(); ++i)
    if (params[i] == 0.0f)
      params[i] = 0.05f;
  const tensor x = random_tensor({4, 72}, 82);
  const std::vector<std::int32_t> labels{0, 2, 1, 2};
  const auto work = model->make_workspace();
  tensor grads({model->parameter_count()});
  model->loss_and_gradient(ops, params.data(), x, labels, grads.data(), *work);
  auto loss = [&] {
    const auto scratch = model->make_workspace();
    return double{model->loss(ops, params.data(), x, labels, *scratch)};
  };
  expect_gradient_matches(params.data(), params.size(), grads.data(), loss, "small cnn");
}

TEST(image_layers, the_cnn_preset_over_fashion_mnist_shapes) {
  model_choice choice;
  choice.preset = "cnn";
  const auto model = build_model(choice, {1, 28, 28}, 10);
  EXPECT_EQ(model->name(), "cnn");
  EXPECT_EQ(model->describe(), "1x28x28: conv 32 3x3 pad 1, relu, maxpool 2x2, conv 64 3x3 pad 1, "
                               "relu, maxpool 2x2, flatten, dense 128, relu, dense 10");
  EXPECT_EQ(model->parameter_count(),
            (32u * 9 + 32) + (64u * 288 + 64) + (3136u * 128 + 128) + (128u * 10 + 10));
  // It needs images: flat samples are refused at the first convolution.
  try {
    build_model(choice, {784}, 10);
    ADD_FAILURE() << "the cnn preset took flat samples";
  } catch (const herd::models::model_error& refused) {
    EXPECT_NE(std::string(refused.what())
                  .find("layer 1 of 10 (conv 32 3x3 pad 1) is given 784 by the data's samples: "
                        "conv takes images (channels x height x width), not 784"),
              std::string::npos)
        << refused.what();
  }
}

TEST(image_layers, windows_and_arguments_that_do_not_fit_are_refused) {
  auto refusal = [](const std::string& text, const shape& input) {
    model_choice choice;
    choice.layers = text;
    try {
      build_model(choice, input, 2);
    } catch (const herd::models::model_error& refused) {
      return std::string(refused.what());
    }
    return std::string("built");
  };
  EXPECT_NE(
      refusal("conv 4 5, flatten, dense 2", {1, 3, 3}).find("its 5x5 window does not fit 3x3"),
      std::string::npos);
  EXPECT_NE(refusal("maxpool 4, flatten, dense 2", {1, 2, 2}).find("layer 1 of 3 (maxpool 4)"),
            std::string::npos);
  EXPECT_NE(refusal("conv 4 3 pad, flatten, dense 2", {1, 3, 3}).find("pad needs a value"),
            std::string::npos);
  EXPECT_NE(refusal("conv 4 3 dilation 2, flatten, dense 2", {1, 3, 3})
                .find("\"dilation\" is not an argument of conv"),
            std::string::npos);
  EXPECT_NE(refusal("flatten, dropout 0.99999999, dense 2", {4})
                .find("must lie in [0, 1), not \"0.99999999\" (1 as a float)"),
            std::string::npos);
  EXPECT_NE(refusal("flatten, dropout 1.5, dense 2", {4}).find("must lie in [0, 1)"),
            std::string::npos);
  EXPECT_EQ(refusal("conv 4 3, flatten, dense 2", {1, 3, 3}), "built"); // a 1x1 output fits
  // A pad as large as the window: outputs of padding alone, and a huge one would take memory
  // for them before any other check.
  EXPECT_NE(refusal("conv 4 3 pad 100000, flatten, dense 2", {1, 28, 28})
                .find("pad 100000 is not below the 3x3 window"),
            std::string::npos);
  EXPECT_NE(refusal("conv 4 3x5 pad 3, flatten, dense 2", {1, 28, 28}).find("pad 2 at most"),
            std::string::npos);
  EXPECT_EQ(refusal("conv 4 3x5 pad 2, flatten, dense 2", {1, 28, 28}), "built");
}

// Training with dropout draws a new mask every step (evaluation none), and a small CNN learns a
// synthetic problem of 8x8 images.
TEST(image_layers, a_small_cnn_with_dropout_learns) {
  auto data = herd::models::make_synthetic_dataset(512, 64, 4, 3);
  data.sample_shape = {1, 8, 8};
  model_choice choice;
  choice.layers = "conv 4 3 pad 1, relu, maxpool 2, flatten, dropout 0.2, dense 4";
  const auto model = build_model(choice, data.input_shape(), 4);
  tensor params = model->initial_parameters(5);
  tensor grads({model->parameter_count()});
  const auto work = model->make_workspace();
  const auto before = model->evaluate(ops, params.data(), data, 128, *work);
  tensor x({64, 64});
  std::vector<std::int32_t> labels(64);
  for (int step = 0; step < 200; ++step) {
    const std::size_t first = (static_cast<std::size_t>(step) * 64) % 512;
    std::copy_n(data.images.row(first), 64 * 64, x.data());
    std::copy_n(data.labels.begin() + static_cast<std::ptrdiff_t>(first), 64, labels.begin());
    model->loss_and_gradient(ops, params.data(), x, labels, grads.data(), *work);
    for (std::size_t i = 0; i < params.size(); ++i)
      params[i] -= 0.05f * grads[i];
  }
  const auto after = model->evaluate(ops, params.data(), data, 128, *work);
  EXPECT_LT(after.mean_loss, 0.5 * before.mean_loss);
  EXPECT_GT(after.accuracy(), 0.9);
}

} // namespace
