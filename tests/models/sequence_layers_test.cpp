// The embedding and conv1d-max layers and the textcnn preset: each layer against a direct
// computation on sequences of lengths 1, 5 and 7 in a batch 9 wide, finite-difference gradient
// checks, padding that changes nothing (bit for bit), the grammar and its refusals, and textcnn
// learning a synthetic token task.
#include "herd/dataset.hpp"
#include "herd/ops.hpp"
#include "herd/sequential.hpp"
#include "models/optimizer.hpp"
#include "models/sequence_layers.hpp"

#include <chrono>
#include <cmath>
#include <gtest/gtest.h>
#include <limits>
#include <random>
#include <string>
#include <vector>

#include "support/gradient_check.hpp"

namespace {

using herd::testing::expect_gradient_matches;
using herd::testing::random_tensor;
using herd::testing::weighted;

using herd::models::build_model;
using herd::models::layer_scratch;
using herd::models::model_choice;
using herd::models::pass;
using herd::models::sequence_batch;
using herd::models::shape;
using herd::models::tensor;

const herd::kernels::ops& ops = herd::kernels::cpu_ops();

#define EXPECT_CONTAINS(text, part)                                                                \
  EXPECT_NE(std::string(text).find(part), std::string::npos) << "in: " << (text)

std::unique_ptr<herd::models::layer> make(const std::string& text, const shape& input) {
  return herd::models::make_layer(herd::models::parse_layers(text).front(), input);
}

// A batch of token rows `width` wide: row r holds lengths[r] ids in [0, vocab), then -1s.
tensor token_batch(const std::vector<int>& lengths, std::size_t width, int vocab,
                   std::uint64_t seed) {
  tensor x({lengths.size(), width});
  std::mt19937_64 rng(seed);
  std::uniform_int_distribution<int> id(0, vocab - 1);
  for (std::size_t r = 0; r < lengths.size(); ++r)
    for (std::size_t c = 0; c < width; ++c)
      x.row(r)[c] = static_cast<int>(c) < lengths[r] ? static_cast<float>(id(rng)) : -1.0f;
  return x;
}

// The ids and lengths of a host batch, as the model computes them, over `steps` steps.
struct host_sequences {
  std::vector<std::int32_t> ids;
  std::vector<std::int32_t> lengths;
  sequence_batch batch;

  host_sequences(const tensor& x, std::size_t steps)
      : ids(x.rows() * steps), lengths(x.rows()),
        batch{ids.data(), lengths.data(), steps} {
    ops.sequence_tokens(x.data(), static_cast<int>(x.rows()), static_cast<int>(x.cols()),
                        static_cast<int>(steps), ids.data(), lengths.data());
  }
};

// Lengths only, for a layer over vectors.
struct host_lengths {
  std::vector<std::int32_t> lengths;
  sequence_batch batch;
  host_lengths(std::vector<std::int32_t> given, std::size_t steps)
      : lengths(std::move(given)), batch{nullptr, lengths.data(), steps} {}
};

void size_scratch(const herd::models::layer& layer, std::size_t batch, std::size_t width,
                  layer_scratch& scratch) {
  const auto need = layer.scratch(batch, width);
  if (need.floats > 0)
    scratch.floats.reshape({need.floats});
  if (need.ints > 0)
    scratch.ints.resize(need.ints);
}

tensor initial(const herd::models::layer& layer, std::uint64_t seed) {
  tensor params({layer.parameter_count()});
  std::mt19937_64 rng(seed);
  layer.initialise(params.data(), rng);
  for (std::size_t i = 0; i < params.size(); ++i) // non-zero biases too
    if (params[i] == 0.0f)
      params[i] = 0.1f * static_cast<float>(i % 7) - 0.3f;
  return params;
}

const std::vector<int> odd_lengths{1, 5, 7};

TEST(sequence_layers, embedding_is_a_lookup_with_zeros_for_padding) {
  const auto layer = make("embedding 11 4", {9});
  EXPECT_EQ(layer->output_shape(), (shape{9, 4}));
  EXPECT_EQ(layer->parameter_count(), 44u);
  EXPECT_EQ(layer->describe(), "embedding 11 4");
  EXPECT_TRUE(layer->takes_tokens());
  const tensor table = initial(*layer, 3);
  const tensor x = token_batch(odd_lengths, 9, 11, 4);
  const host_sequences tokens(x, 7); // the longest length
  layer_scratch scratch(ops.memory());
  tensor y;
  layer->forward(pass{ops, true, 0, &tokens.batch}, table.data(), x, y, scratch);
  ASSERT_EQ(y.rows(), 3u);
  ASSERT_EQ(y.cols(), 7u * 4);
  for (std::size_t r = 0; r < 3; ++r)
    for (std::size_t t = 0; t < 7; ++t)
      for (std::size_t d = 0; d < 4; ++d) {
        const bool inside = static_cast<int>(t) < odd_lengths[r];
        const float expected =
            inside ? table[static_cast<std::size_t>(x.row(r)[t]) * 4 + d] : 0.0f;
        ASSERT_EQ(y.row(r)[t * 4 + d], expected) << r << " " << t << " " << d;
      }
  EXPECT_EQ(layer->output_elements(1), 4u);
  EXPECT_THROW(layer->output_elements(10), std::invalid_argument); // longer than L = 9
}

// Direct conv1d-max: each width's windows centred as sequence_layers.hpp says, zeros outside the
// sequence, the maximum over the positions of the widest window, in double.
std::vector<double> direct_conv1d_max(const tensor& x, const std::vector<int>& lengths,
                                      std::size_t channels, std::size_t filters,
                                      const std::vector<int>& widths, const tensor& params) {
  int widest = 0;
  for (int w : widths)
    widest = std::max(widest, w);
  const int padding = widest / 2;
  std::vector<double> out;
  for (std::size_t b = 0; b < x.rows(); ++b) {
    const int n = lengths[b];
    const int positions = n + 2 * padding - widest + 1;
    std::vector<double> sample(filters * widths.size(), -1e300);
    std::size_t weights = 0;
    std::size_t bias = 0;
    for (int w : widths)
      bias += filters * static_cast<std::size_t>(w) * channels;
    for (std::size_t i = 0; i < widths.size(); ++i) {
      const int w = widths[i];
      for (std::size_t f = 0; f < filters; ++f)
        for (int t = 0; t < positions; ++t) {
          double sum = params[bias + i * filters + f];
          for (int j = 0; j < w; ++j) {
            const int step = t - w / 2 + j;
            if (step < 0 || step >= n)
              continue;
            for (std::size_t c = 0; c < channels; ++c)
              sum += static_cast<double>(
                         params[weights + (f * static_cast<std::size_t>(w) + j) * channels + c]) *
                     x.row(b)[static_cast<std::size_t>(step) * channels + c];
          }
          sample[i * filters + f] = std::max(sample[i * filters + f], sum);
        }
      weights += filters * static_cast<std::size_t>(w) * channels;
    }
    out.insert(out.end(), sample.begin(), sample.end());
  }
  return out;
}

TEST(sequence_layers, conv1d_max_matches_a_direct_computation) {
  // Widest even (4) and odd (5); widths longer than the shortest sequence; a batch 9 wide given
  // lengths 1, 5, 7, and the same without lengths (every sample 9 long).
  for (const std::vector<int>& widths : {std::vector<int>{2, 4, 3}, std::vector<int>{5, 1, 3}}) {
    std::string text = "conv1d-max 5";
    for (int w : widths)
      text += " " + std::to_string(w);
    SCOPED_TRACE(text);
    const auto layer = make(text, {9, 3});
    EXPECT_EQ(layer->describe(), text);
    EXPECT_EQ(layer->output_shape(), shape{15});
    const tensor params = initial(*layer, 7);
    const tensor x = random_tensor({3, 27}, 8);
    const host_lengths given({1, 5, 7}, 9);
    for (const bool with_lengths : {true, false}) {
      layer_scratch scratch(ops.memory());
      size_scratch(*layer, 3, 27, scratch);
      tensor y;
      layer->forward(pass{ops, true, 0, with_lengths ? &given.batch : nullptr}, params.data(), x,
                     y, scratch);
      const auto expected = direct_conv1d_max(
          x, with_lengths ? odd_lengths : std::vector<int>{9, 9, 9}, 3, 5, widths, params);
      ASSERT_EQ(y.size(), expected.size());
      for (std::size_t i = 0; i < y.size(); ++i)
        EXPECT_NEAR(y[i], expected[i], 1e-5 * (1.0 + std::fabs(expected[i]))) << i;
    }
  }
}

TEST(sequence_layers, gradient_check_embedding_table) {
  const auto layer = make("embedding 6 3", {9});
  tensor table = initial(*layer, 21);
  const tensor x = token_batch(odd_lengths, 9, 6, 22); // ids repeat: the rows' gradients add up
  const host_sequences tokens(x, 7);
  const pass p{ops, true, 0, &tokens.batch};
  const tensor upstream = random_tensor({3, 7 * 3}, 23);
  layer_scratch scratch(ops.memory());
  tensor y;
  tensor grads({table.size()});
  layer->forward(p, table.data(), x, y, scratch);
  layer->backward(p, table.data(), x, y, upstream, grads.data(), nullptr, scratch);
  auto loss = [&] {
    tensor out;
    layer->forward(p, table.data(), x, out, scratch);
    return weighted(out, upstream);
  };
  expect_gradient_matches(table.data(), table.size(), grads.data(), loss, "embedding table");
}

TEST(sequence_layers, gradient_check_conv1d_max_weights_bias_and_inputs) {
  for (const char* text : {"conv1d-max 3 2 3", "conv1d-max 2 1 4 3"}) {
    SCOPED_TRACE(text);
    const auto layer = make(text, {9, 2});
    tensor params = initial(*layer, 31);
    tensor x = random_tensor({3, 18}, 32);
    const host_lengths given({1, 5, 7}, 9);
    const pass p{ops, true, 0, &given.batch};
    const tensor upstream = random_tensor({3, herd::models::elements(layer->output_shape())}, 33);
    layer_scratch scratch(ops.memory());
    size_scratch(*layer, 3, 18, scratch);
    tensor y;
    tensor dx;
    tensor grads({params.size()});
    layer->forward(p, params.data(), x, y, scratch);
    layer->backward(p, params.data(), x, y, upstream, grads.data(), &dx, scratch);
    ASSERT_EQ(dx.size(), x.size());
    auto loss = [&] {
      layer_scratch fresh(ops.memory());
      size_scratch(*layer, 3, 18, fresh);
      tensor out;
      layer->forward(p, params.data(), x, out, fresh);
      return weighted(out, upstream);
    };
    expect_gradient_matches(params.data(), params.size(), grads.data(), loss, "conv1d-max params");
    // Padding steps (past 1, 5 and 7) get no gradient, and the numeric one is 0 there too.
    expect_gradient_matches(x.data(), x.size(), dx.data(), loss, "conv1d-max inputs");
  }
}

model_choice layers(std::string text) {
  model_choice choice;
  choice.layers = std::move(text);
  return choice;
}

TEST(sequence_layers, gradient_check_a_whole_small_text_model) {
  const auto model = build_model(layers("embedding 7 3, conv1d-max 2 2 3, relu, dense 3"), {9}, 3);
  EXPECT_TRUE(model->takes_tokens());
  tensor params = model->initial_parameters(41);
  for (std::size_t i = 0; i < params.size(); ++i)
    if (params[i] == 0.0f)
      params[i] = 0.05f;
  const tensor x = token_batch(odd_lengths, 9, 7, 42);
  const std::vector<std::int32_t> labels{0, 2, 1};
  const auto work = model->make_workspace();
  tensor grads({model->parameter_count()});
  model->loss_and_gradient(ops, params.data(), x, labels, grads.data(), *work);
  auto loss = [&] {
    const auto scratch = model->make_workspace();
    return double{model->loss(ops, params.data(), x, labels, *scratch)};
  };
  expect_gradient_matches(params.data(), params.size(), grads.data(), loss, "text model");
}

// Padding columns no sample needs, and other negative values in the padding, change nothing: the
// model computes over the longest sequence either way, so the loss and gradient are the same bits.
TEST(sequence_layers, extra_padding_changes_nothing_bit_for_bit) {
  model_choice choice;
  choice.preset = "textcnn";
  const auto model = build_model(choice, {20}, 4);
  const tensor params = model->initial_parameters(51);
  const tensor trimmed = token_batch(odd_lengths, 7, 256, 52);
  tensor padded({3, 20});
  for (std::size_t r = 0; r < 3; ++r)
    for (std::size_t c = 0; c < 20; ++c)
      padded.row(r)[c] = c < 7 ? trimmed.row(r)[c] : -1.0f;
  padded.row(0)[1] = -0.5f; // any negative value is padding
  padded.row(1)[12] = -std::numeric_limits<float>::infinity();
  padded.row(2)[19] = -1e9f;
  const std::vector<std::int32_t> labels{3, 0, 2};
  auto gradient = [&](const tensor& x, float& loss) {
    const auto work = model->make_workspace(); // a fresh one: the same dropout masks
    tensor grads({model->parameter_count()});
    loss = model->loss_and_gradient(ops, params.data(), x, labels, grads.data(), *work);
    return grads.to_host();
  };
  float trimmed_loss = 0.0f;
  float padded_loss = 0.0f;
  const auto trimmed_grads = gradient(trimmed, trimmed_loss);
  const auto padded_grads = gradient(padded, padded_loss);
  EXPECT_EQ(padded_loss, trimmed_loss);
  EXPECT_EQ(padded_grads, trimmed_grads);
  const auto work = model->make_workspace();
  EXPECT_EQ(model->loss(ops, params.data(), padded, labels, *work),
            model->loss(ops, params.data(), trimmed, labels, *work));
}

TEST(sequence_layers, a_text_model_takes_batches_up_to_its_length_of_token_rows) {
  const auto model = build_model(layers("embedding 5 2, conv1d-max 2 3, dense 2"), {6}, 2);
  const tensor params = model->initial_parameters(61);
  const auto work = model->make_workspace();
  const std::vector<std::int32_t> labels{0, 1};
  auto loss_of = [&](const tensor& x) {
    return model->loss(ops, params.data(), x, labels, *work);
  };
  EXPECT_TRUE(std::isfinite(loss_of(token_batch({1, 1}, 1, 5, 62))));
  EXPECT_TRUE(std::isfinite(loss_of(token_batch({6, 2}, 6, 5, 63))));
  EXPECT_THROW(loss_of(token_batch({7, 2}, 7, 5, 64)), std::invalid_argument); // longer than 6
  EXPECT_THROW(loss_of(token_batch({0, 2}, 4, 5, 65)), std::invalid_argument); // an empty row
  EXPECT_THROW(loss_of(token_batch({3, 2}, 4, 6, 66)), std::invalid_argument); // ids past 4
  tensor fractions = token_batch({3, 2}, 4, 5, 67);
  fractions[1] = 0.5f;
  EXPECT_THROW(loss_of(fractions), std::invalid_argument);
}

TEST(sequence_layers, the_grammar_and_its_refusals_name_the_layer) {
  auto refusal = [](const std::string& text, const shape& input) {
    try {
      build_model(layers(text), input, 2);
    } catch (const herd::models::model_error& refused) {
      return std::string(refused.what());
    }
    return std::string("built");
  };
  EXPECT_EQ(refusal("embedding 256 8, conv1d-max 4 3 5, dense 2", {40}), "built");
  EXPECT_CONTAINS(refusal("embedding 256, conv1d-max 4 3, dense 2", {40}),
                  "layer 1 of 3 (embedding 256)");
  EXPECT_CONTAINS(refusal("embedding 256, conv1d-max 4 3, dense 2", {40}),
                  "lacks arguments; write embedding VOCAB DIM");
  EXPECT_CONTAINS(refusal("embedding 256 8, conv1d-max 4, dense 2", {40}),
                  "\"conv1d-max 4\" lacks arguments; write conv1d-max FILTERS W [W ...]");
  EXPECT_CONTAINS(refusal("embedding 256 8, conv1d-max 4 3 x, dense 2", {40}),
                  "a width of conv1d-max must be a whole number");
  EXPECT_CONTAINS(refusal("embedding 256 8, conv1d-max 4 0, dense 2", {40}), "not \"0\"");
  EXPECT_CONTAINS(refusal("embedding 256 8, conv1d-max 4 3, dense 2", {1, 28, 28}),
                  "embedding takes sequences of token ids ({L}), not 1x28x28");
  EXPECT_CONTAINS(refusal("conv1d-max 4 3, dense 2", {40}),
                  "layer 1 of 2 (conv1d-max 4 3) is given 40 by the data's samples: conv1d-max "
                  "takes sequences of vectors ({L, C}, as embedding gives), not 40");
  EXPECT_CONTAINS(refusal("embedding 9 2, conv1d-max 2 3, embedding 9 2, conv1d-max 1 1, dense 2",
                          {40}),
                  "layer 3 of 5 (embedding 9 2) reads the data's token ids, so it must be the "
                  "first layer");
  EXPECT_CONTAINS(refusal("embedding 9 2, dense 2", {40}), "dense takes a flat input, not 40x2");
  // Flattened, a sequence is as long as the batch's longest text: a dense layer cannot take it.
  EXPECT_CONTAINS(refusal("embedding 9 2, flatten, relu, dense 2", {40}),
                  "layer 4 of 4 (dense 2) takes 80 values per sample, but the sequence before it "
                  "is only as long as the batch's longest text: reduce it first, with conv1d-max");
  EXPECT_EQ(refusal("embedding 9 2, relu, conv1d-max 2 3, flatten, dense 2", {40}), "built");
  EXPECT_CONTAINS(refusal("embedding 9 2, conv1d-max 2 3 41, dense 2", {40}),
                  "layer 2 of 3 (conv1d-max 2 3 41) is given 40x2 by layer 1 of 3 (embedding 9 2): "
                  "a width of 41 is wider than the model's sequences of 40 steps");
  EXPECT_EQ(refusal("embedding 9 2, conv1d-max 2 3 40, dense 2", {40}), "built");
}

TEST(sequence_layers, the_textcnn_preset_and_its_sizes) {
  model_choice choice;
  choice.preset = "textcnn";
  const auto model = build_model(choice, {2048}, 5);
  EXPECT_EQ(model->name(), "textcnn");
  EXPECT_EQ(model->describe(),
            "2048: embedding 256 32, conv1d-max 64 3 4 5, relu, dropout 0.5, dense 5");
  EXPECT_EQ(model->parameter_count(), 256u * 32 + 64u * (3 + 4 + 5) * 32 + 192 + 192u * 5 + 5);
  try {
    build_model(choice, {1, 28, 28}, 10);
    ADD_FAILURE() << "textcnn took images";
  } catch (const herd::models::model_error& refused) {
    EXPECT_EQ(refused.key(), "model.preset");
    EXPECT_CONTAINS(refused.what(), "model.preset = \"textcnn\" needs token sequences");
    EXPECT_CONTAINS(refused.what(), "not the data's 1x28x28 samples");
  }
}

// Sequences of 8 to 48 random bytes; class k holds the trigram (60 + k, 120 + k, 180 + k) at a
// random place. Padded with -1 to 48.
herd::models::dataset trigram_task(std::size_t n, std::uint64_t seed) {
  constexpr std::size_t longest = 48;
  herd::models::dataset data;
  data.images = tensor({n, longest});
  data.labels.resize(n);
  data.classes = 3;
  data.name = "trigrams";
  std::mt19937_64 rng(seed);
  for (std::size_t i = 0; i < n; ++i) {
    const int label = static_cast<int>(i % 3);
    const int length = std::uniform_int_distribution<int>(8, longest)(rng);
    const int at = std::uniform_int_distribution<int>(0, length - 3)(rng);
    float* row = data.images.row(i);
    for (int t = 0; t < static_cast<int>(longest); ++t)
      row[t] = t < length ? static_cast<float>(std::uniform_int_distribution<int>(0, 255)(rng))
                          : -1.0f;
    for (int j = 0; j < 3; ++j)
      row[at + j] = static_cast<float>(60 * (j + 1) + label);
    data.labels[i] = label;
  }
  return data;
}

TEST(sequence_layers, the_textcnn_preset_learns_which_trigram_a_sequence_holds) {
  const auto train = trigram_task(960, 71);
  const auto test = trigram_task(300, 72);
  model_choice choice;
  choice.preset = "textcnn";
  const auto model = build_model(choice, train.input_shape(), 3);
  tensor params = model->initial_parameters(73);
  tensor grads({model->parameter_count()});
  herd::models::optimizer optimizer(model->parameter_count(), {0.01f, 0.9f, 0.0f});
  const auto work = model->make_workspace();
  const auto before = model->evaluate(ops, params.data(), test, 100, *work);
  const auto start = std::chrono::steady_clock::now();
  constexpr std::size_t batch = 32;
  tensor x({batch, 48});
  std::vector<std::int32_t> labels(batch);
  for (std::size_t step = 0; step < 300; ++step) {
    const std::size_t first = step * batch % train.size();
    std::copy_n(train.images.row(first), batch * 48, x.data());
    std::copy_n(train.labels.begin() + static_cast<std::ptrdiff_t>(first), batch, labels.begin());
    model->loss_and_gradient(ops, params.data(), x, labels, grads.data(), *work);
    optimizer.step(ops, params.data(), grads.data());
  }
  const double seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  const auto after = model->evaluate(ops, params.data(), test, 100, *work);
  RecordProperty("test_accuracy", std::to_string(after.accuracy()));
  RecordProperty("train_seconds", std::to_string(seconds));
  std::printf("textcnn on trigrams: test accuracy %.3f -> %.3f, loss %.3f -> %.3f, 300 steps of "
              "32 in %.2f s\n",
              before.accuracy(), after.accuracy(), before.mean_loss, after.mean_loss, seconds);
  EXPECT_GT(after.accuracy(), 0.95);
  EXPECT_LT(after.mean_loss, 0.3 * before.mean_loss);
}

} // namespace
