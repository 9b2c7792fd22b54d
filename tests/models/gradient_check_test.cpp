// Finite-difference gradient checks for every layer and for the whole MLP preset: the analytic
// backward pass must match central differences of the forward pass.
#include "herd/layers.hpp"
#include "herd/ops.hpp"
#include "herd/sequential.hpp"

#include <cmath>
#include <functional>
#include <gtest/gtest.h>
#include <random>

#include "support/gradient_check.hpp"

namespace {

using herd::testing::expect_gradient_matches;
using herd::testing::random_tensor;
using herd::testing::weighted;

using herd::models::tensor;

const herd::kernels::ops& ops = herd::kernels::cpu_ops();
const herd::models::pass training{ops, true, 0};

// The mlp preset over flat samples of `inputs` features.
std::unique_ptr<herd::models::sequential> mlp(std::size_t inputs, std::vector<int> hidden,
                                              std::size_t classes) {
  herd::models::model_choice choice;
  choice.hidden = std::move(hidden);
  return herd::models::build_model(choice, {inputs}, classes);
}

TEST(gradient_check, dense_layer_weights_bias_and_inputs) {
  const herd::models::dense layer({7}, 5);
  tensor params({layer.parameter_count()});
  std::mt19937_64 rng(11);
  layer.initialise(params.data(), rng);
  for (std::size_t i = 0; i < layer.outputs(); ++i) // non-zero biases, so they are exercised
    params[layer.inputs() * layer.outputs() + i] = 0.1f * static_cast<float>(i + 1);
  tensor x = random_tensor({3, 7}, 12);
  const tensor upstream = random_tensor({3, 5}, 13);

  tensor y;
  tensor grads({layer.parameter_count()});
  tensor dx;
  herd::models::layer_scratch scratch(herd::kernels::host_memory());
  layer.forward(training, params.data(), x, y, scratch);
  layer.backward(training, params.data(), x, y, upstream, grads.data(), &dx, scratch);

  auto loss = [&] {
    tensor out;
    layer.forward(training, params.data(), x, out, scratch);
    return weighted(out, upstream);
  };
  expect_gradient_matches(params.data(), params.size(), grads.data(), loss, "dense params");
  expect_gradient_matches(x.data(), x.size(), dx.data(), loss, "dense inputs");
}

TEST(gradient_check, relu_layer_inputs) {
  tensor x = random_tensor({4, 9}, 21);
  // Keep inputs away from the kink at 0, where the derivative is undefined.
  for (std::size_t i = 0; i < x.size(); ++i)
    if (std::fabs(x[i]) < 0.05f)
      x[i] = 0.2f;
  const tensor upstream = random_tensor({4, 9}, 22);
  tensor y;
  tensor dx;
  herd::models::layer_scratch scratch(herd::kernels::host_memory());
  const herd::models::relu layer({9});
  layer.forward(training, nullptr, x, y, scratch);
  layer.backward(training, nullptr, x, y, upstream, nullptr, &dx, scratch);
  auto loss = [&] {
    tensor out;
    layer.forward(training, nullptr, x, out, scratch);
    return weighted(out, upstream);
  };
  expect_gradient_matches(x.data(), x.size(), dx.data(), loss, "relu inputs");
}

TEST(gradient_check, softmax_cross_entropy_logits) {
  tensor logits = random_tensor({6, 4}, 31, 2.0f);
  const std::vector<std::int32_t> labels{0, 3, 1, 2, 3, 0};
  tensor probs;
  tensor dlogits;
  herd::models::softmax_cross_entropy::forward(ops, logits, labels.data(), probs);
  herd::models::softmax_cross_entropy::backward(ops, probs, labels.data(), dlogits);
  auto loss = [&] {
    tensor p;
    return double{herd::models::softmax_cross_entropy::forward(ops, logits, labels.data(), p)};
  };
  expect_gradient_matches(logits.data(), logits.size(), dlogits.data(), loss, "logits");
}

TEST(gradient_check, whole_mlp_every_parameter) {
  const auto built = mlp(6, {5, 4}, 3);
  const auto& model = *built;
  tensor params = model.initial_parameters(41);
  for (std::size_t i = 0; i < params.size(); ++i) // non-zero biases too
    if (params[i] == 0.0f)
      params[i] = 0.05f;
  const tensor x = random_tensor({5, 6}, 42);
  const std::vector<std::int32_t> labels{0, 1, 2, 1, 0};
  const auto work = model.make_workspace();
  tensor grads({model.parameter_count()});
  model.loss_and_gradient(ops, params.data(), x, labels, grads.data(), *work);
  auto loss = [&] {
    const auto scratch = model.make_workspace();
    return double{model.loss(ops, params.data(), x, labels, *scratch)};
  };
  expect_gradient_matches(params.data(), params.size(), grads.data(), loss, "mlp params");
}

TEST(mlp, parameter_layout_is_one_contiguous_buffer) {
  const auto built = mlp(784, {256, 128}, 10);
  const auto& model = *built;
  EXPECT_EQ(model.parameter_count(), 784u * 256 + 256 + 256 * 128 + 128 + 128 * 10 + 10);
  // flatten, dense, relu, dense, relu, dense: the dense layers' slices follow each other.
  EXPECT_EQ(model.parameter_offset(1), 0u);
  EXPECT_EQ(model.parameter_offset(3), 784u * 256 + 256);
  EXPECT_EQ(model.parameter_offset(5), 784u * 256 + 256 + 256 * 128 + 128);
}

TEST(mlp, same_seed_same_replica_and_he_scale) {
  const auto built = mlp(784, {256}, 10);
  const auto& model = *built;
  const tensor a = model.initial_parameters(7);
  const tensor b = model.initial_parameters(7);
  const tensor c = model.initial_parameters(8);
  EXPECT_EQ(herd::models::relative_difference(a.data(), b.data(), a.size()), 0.0);
  EXPECT_GT(herd::models::relative_difference(a.data(), c.data(), a.size()), 0.1);
  // He initialisation: first-layer weights have variance 2 / 784; biases are zero.
  double sum_squares = 0.0;
  constexpr std::size_t first_layer_weights = std::size_t{784} * 256;
  for (std::size_t i = 0; i < first_layer_weights; ++i)
    sum_squares += static_cast<double>(a[i]) * a[i];
  EXPECT_NEAR(sum_squares / first_layer_weights, 2.0 / 784, 0.1 * 2.0 / 784);
  for (std::size_t i = first_layer_weights; i < first_layer_weights + 256; ++i)
    ASSERT_EQ(a[i], 0.0f);
}

TEST(mlp, training_on_synthetic_data_reduces_loss_and_learns) {
  const auto data = herd::models::make_synthetic_dataset(512, 20, 4, 3);
  const auto built = mlp(20, {32}, 4);
  const auto& model = *built;
  tensor params = model.initial_parameters(5);
  tensor grads({model.parameter_count()});
  const auto workspace = model.make_workspace();
  auto& work = *workspace;
  const auto before = model.evaluate(ops, params.data(), data, 128, work);
  tensor x({64, 20});
  std::vector<std::int32_t> labels(64);
  for (int step = 0; step < 200; ++step) {
    const std::size_t first = (step * 64) % 512;
    std::copy_n(data.images.row(first), 64 * 20, x.data());
    std::copy_n(data.labels.begin() + static_cast<std::ptrdiff_t>(first), 64, labels.begin());
    model.loss_and_gradient(ops, params.data(), x, labels, grads.data(), work);
    for (std::size_t i = 0; i < params.size(); ++i)
      params[i] -= 0.1f * grads[i];
  }
  const auto after = model.evaluate(ops, params.data(), data, 128, work);
  EXPECT_LT(after.mean_loss, 0.5 * before.mean_loss);
  EXPECT_GT(after.accuracy(), 0.9);
  EXPECT_EQ(after.samples, 512u);
}

} // namespace
