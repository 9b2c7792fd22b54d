// Buffers and tensors in a kernels::memory, and the MLP computing in a memory the CPU does not
// touch directly (tests/support/separate_memory_ops.hpp): the same code path a GPU takes, checked
// bit for bit against host memory, with the transfers it makes counted.
#include "herd/dataset.hpp"
#include "herd/memory.hpp"
#include "herd/ops.hpp"
#include "herd/sequential.hpp"
#include "herd/tensor.hpp"
#include "models/optimizer.hpp"
#include "models/sampler.hpp"

#include <algorithm>
#include <cstdint>
#include <gtest/gtest.h>
#include <stdexcept>
#include <vector>

#include "support/random_values.hpp"
#include "support/separate_memory_ops.hpp"

namespace {

using herd::kernels::buffer;
using herd::kernels::host_memory;
using herd::models::tensor;
using herd::testing::random_values;
using herd::testing::separate_memory;
using herd::testing::separate_memory_ops;

tensor host_tensor(std::vector<std::size_t> shape, std::uint64_t seed) {
  tensor t(std::move(shape));
  const auto values = random_values(t.size(), seed);
  std::copy(values.begin(), values.end(), t.data());
  return t;
}

TEST(buffer, host_buffers_are_aligned_round_trip_and_keep_their_allocation_when_shrunk) {
  buffer<float> values(37);
  EXPECT_EQ(reinterpret_cast<std::uintptr_t>(values.data()) % 64, 0u);
  const auto expected = random_values(37, 1);
  values.assign(expected);
  EXPECT_EQ(values.to_host(), expected);
  const float* allocation = values.data();
  values.resize(5);
  EXPECT_EQ(values.data(), allocation);
  EXPECT_EQ(values.size(), 5u);
  EXPECT_EQ(values.capacity(), 37u);
  values.resize(38); // past the capacity: a new allocation
  EXPECT_EQ(values.size(), 38u);
  buffer<float> moved(std::move(values));
  EXPECT_EQ(moved.size(), 38u);
  // NOLINTNEXTLINE(bugprone-use-after-move,clang-analyzer-cplusplus.Move): moved-from is empty
  EXPECT_EQ(values.data(), nullptr);
}

TEST(tensor_memory, a_tensor_elsewhere_is_zero_filled_copies_across_and_refuses_element_access) {
  const separate_memory elsewhere;
  const tensor source = host_tensor({3, 5}, 2);
  const tensor moved_there(source, elsewhere);
  EXPECT_EQ(&moved_there.where(), &elsewhere);
  EXPECT_FALSE(moved_there.on_host());
  EXPECT_EQ(moved_there.shape(), source.shape());
  EXPECT_EQ(moved_there.to_host(), source.to_host());
  EXPECT_EQ(elsewhere.counts.uploads, 1u);

  // Back to the host through a download; a copy of a tensor stays in its memory.
  const tensor back(moved_there, host_memory());
  EXPECT_EQ(back.to_host(), source.to_host());
  const tensor twin(moved_there); // NOLINT(performance-unnecessary-copy-initialization)
  EXPECT_EQ(&twin.where(), &elsewhere);
  EXPECT_EQ(twin.to_host(), source.to_host());

  const tensor zeros(std::vector<std::size_t>{4}, elsewhere);
  EXPECT_EQ(zeros.to_host(), std::vector<float>(4, 0.0f));
  try {
    (void)moved_there[0];
    ADD_FAILURE() << "element access to a tensor in separate memory";
  } catch (const std::logic_error& refused) {
    EXPECT_NE(std::string(refused.what()).find("[3, 5] in separate memory"), std::string::npos)
        << refused.what();
  }
  EXPECT_THROW((void)moved_there.row(1), std::logic_error);
}

TEST(tensor_memory, growing_past_the_capacity_keeps_the_contents_and_zeroes_the_rest) {
  const separate_memory elsewhere;
  tensor grown(host_tensor({2, 3}, 3), elsewhere);
  const auto before = grown.to_host();
  grown.reshape({4, 3});
  auto after = grown.to_host();
  ASSERT_EQ(after.size(), 12u);
  EXPECT_EQ(std::vector<float>(after.begin(), after.begin() + 6), before);
  EXPECT_EQ(std::vector<float>(after.begin() + 6, after.end()), std::vector<float>(6, 0.0f));
  grown.reshape({1, 3}); // shrinking keeps the allocation; growing within it zeroes again
  grown.reshape({3, 3});
  after = grown.to_host();
  EXPECT_EQ(std::vector<float>(after.begin(), after.begin() + 3),
            std::vector<float>(before.begin(), before.begin() + 3));
  EXPECT_EQ(std::vector<float>(after.begin() + 3, after.end()), std::vector<float>(6, 0.0f));
}

// The whole model in separate memory: loss, gradient, optimizer step and evaluation equal host
// memory's bit for bit (the same kernels run), and each batch costs exactly one upload (its
// labels), an evaluation one upload per batch for the rows and one for the labels.
TEST(tensor_memory, the_mlp_computes_the_same_in_a_separate_memory) {
  const separate_memory elsewhere;
  const separate_memory_ops there(elsewhere);
  const auto& here = herd::kernels::cpu_ops();
  const auto data = herd::models::make_synthetic_split(300, 130, 20, 4, 5);
  herd::models::model_choice choice;
  choice.hidden = {16, 12};
  const auto built = herd::models::build_model(choice, {20}, 4);
  const herd::models::model& model = *built;
  const tensor host_params = model.initial_parameters(9);
  tensor params(host_params, elsewhere);
  tensor host_grads({model.parameter_count()});
  tensor grads(std::vector<std::size_t>{model.parameter_count()}, elsewhere);

  const auto host_workspace = model.make_workspace();
  const auto workspace = model.make_workspace();
  auto& host_work = *host_workspace;
  auto& work = *workspace;
  tensor x;
  std::vector<std::int32_t> labels;
  std::vector<std::size_t> rows(33);
  for (std::size_t i = 0; i < rows.size(); ++i)
    rows[i] = (i * 7) % data.train.size();
  herd::models::gather_batch(data.train, rows, x, labels);
  const tensor x_there(x, elsewhere);

  const std::size_t uploads = elsewhere.counts.uploads;
  const float host_loss =
      model.loss_and_gradient(here, host_params.data(), x, labels, host_grads.data(), host_work);
  const float loss =
      model.loss_and_gradient(there, params.data(), x_there, labels, grads.data(), work);
  EXPECT_EQ(loss, host_loss);
  EXPECT_EQ(grads.to_host(), host_grads.to_host());
  EXPECT_EQ(elsewhere.counts.uploads - uploads, 1u); // the labels

  herd::models::optimizer host_optimizer(model.parameter_count(), {0.1f, 0.9f, 1e-4f});
  herd::models::optimizer optimizer(model.parameter_count(), {0.1f, 0.9f, 1e-4f}, elsewhere);
  tensor stepped_host = host_params;
  host_optimizer.step(here, stepped_host.data(), host_grads.data());
  optimizer.step(there, params.data(), grads.data());
  EXPECT_EQ(params.to_host(), stepped_host.to_host());
  EXPECT_EQ(optimizer.state().to_host(), host_optimizer.state().to_host());
  // An optimizer whose velocity lives elsewhere refuses ops of another memory.
  EXPECT_THROW(optimizer.step(here, stepped_host.data(), host_grads.data()), std::invalid_argument);

  const std::size_t before_evaluation = elsewhere.counts.uploads;
  const auto host_result = model.evaluate(here, stepped_host.data(), data.test, 32, host_work);
  const auto result = model.evaluate(there, params.data(), data.test, 32, work);
  EXPECT_EQ(result.correct, host_result.correct);
  EXPECT_EQ(result.samples, 130u);
  EXPECT_DOUBLE_EQ(result.mean_loss, host_result.mean_loss);
  EXPECT_EQ(elsewhere.counts.uploads - before_evaluation, 2u * 5u); // 5 batches: rows, labels

  // A batch on the host given to ops elsewhere is refused, naming both memories.
  try {
    model.loss(there, params.data(), x, labels, work);
    ADD_FAILURE() << "a host batch was accepted by ops in separate memory";
  } catch (const std::invalid_argument& refused) {
    EXPECT_NE(std::string(refused.what())
                  .find("a batch in host memory given to ops computing in "
                        "separate memory"),
              std::string::npos)
        << refused.what();
  }
}

// A convolution's forward pass fills its row of ones (its bias as a product) in the ops' memory,
// in order with its kernels: a CNN step elsewhere uploads its labels and nothing else, as the
// MLP's does (an upload waits for a GPU's stream), and computes what the host computes.
TEST(tensor_memory, a_cnn_step_in_a_separate_memory_uploads_only_its_labels) {
  const separate_memory elsewhere;
  const separate_memory_ops there(elsewhere);
  const auto& here = herd::kernels::cpu_ops();
  herd::models::model_choice choice;
  choice.layers = "conv 3 3 pad 1, relu, maxpool 2, conv 4 3 pad 1, relu, flatten, dense 3";
  const auto model = herd::models::build_model(choice, {2, 6, 6}, 3);
  const tensor host_params = model->initial_parameters(17);
  const tensor params(host_params, elsewhere);
  tensor host_x({5, 72});
  const auto values = random_values(host_x.size(), 18);
  std::copy(values.begin(), values.end(), host_x.data());
  const tensor x(host_x, elsewhere);
  const std::vector<std::int32_t> labels{0, 2, 1, 2, 0};
  tensor host_grads({model->parameter_count()});
  tensor grads(std::vector<std::size_t>{model->parameter_count()}, elsewhere);
  const auto host_work = model->make_workspace();
  const auto work = model->make_workspace();
  const float host_loss = model->loss_and_gradient(here, host_params.data(), host_x, labels,
                                                   host_grads.data(), *host_work);
  for (int step = 0; step < 2; ++step) { // the second with the scratch the first one grew
    const std::size_t uploads = elsewhere.counts.uploads;
    const float loss =
        model->loss_and_gradient(there, params.data(), x, labels, grads.data(), *work);
    EXPECT_EQ(elsewhere.counts.uploads - uploads, 1u) << "step " << step; // the labels
    EXPECT_EQ(loss, host_loss) << "step " << step;
    EXPECT_EQ(grads.to_host(), host_grads.to_host()) << "step " << step;
  }
}

} // namespace
