// What a backward pass says about its gradient while it runs (model::gradient_progress): the part
// it calls final is final (nothing later writes it), it grows from the end of the buffer in
// backward order, it ends at 0, and reporting changes no gradient bit.
#include "herd/model.hpp"
#include "herd/ops.hpp"
#include "herd/sequential.hpp"

#include <cstring>
#include <gtest/gtest.h>
#include <limits>
#include <random>
#include <vector>

namespace {

using herd::models::build_model;
using herd::models::model_choice;
using herd::models::shape;
using herd::models::tensor;

// Keeps what the gradient held at each report, from the reported start to its end.
class recorder final : public herd::models::gradient_progress {
public:
  recorder(const float* grads, std::size_t count) : grads_(grads), count_(count) {}

  void final_from(std::size_t begin) override {
    starts.push_back(begin);
    seen.emplace_back(grads_ + begin, grads_ + count_);
  }

  std::vector<std::size_t> starts;
  std::vector<std::vector<float>> seen;

private:
  const float* grads_;
  std::size_t count_;
};

struct case_data {
  std::unique_ptr<herd::models::sequential> model;
  tensor x;
  std::vector<std::int32_t> labels;
};

case_data make_case(const model_choice& choice, const shape& input, std::size_t classes,
                    bool tokens) {
  case_data made;
  made.model = build_model(choice, input, classes);
  const std::size_t rows = 6;
  made.x = tensor({rows, herd::models::elements(input)});
  std::mt19937_64 rng(41);
  std::uniform_real_distribution<float> pixel(0.0f, 1.0f);
  std::uniform_int_distribution<int> token(0, 255);
  for (std::size_t i = 0; i < made.x.size(); ++i)
    made.x[i] = tokens ? static_cast<float>(token(rng)) : pixel(rng);
  for (std::size_t r = 0; r < rows; ++r)
    made.labels.push_back(static_cast<std::int32_t>(r % classes));
  return made;
}

model_choice preset(const char* name) {
  model_choice choice;
  choice.preset = name;
  return choice;
}

class every_preset : public testing::TestWithParam<const char*> {};

// Each report's part of the gradient, as it was when reported, is what the pass ends with; the
// reports start at the last layer's slice (backward order), never move back, one per layer with
// parameters, and end with 0; and the gradient is the one loss_and_gradient() computes, bit for
// bit.
TEST_P(every_preset, reports_final_parts_in_backward_order_and_changes_no_bit) {
  const std::string name = GetParam();
  const bool tokens = name == "textcnn";
  const auto made = tokens ? make_case(preset("textcnn"), {20}, 4, true)
                           : make_case(preset(name.c_str()), {1, 28, 28}, 10, false);
  const auto& model = *made.model;
  const auto& ops = herd::kernels::cpu_ops();
  const tensor params = model.initial_parameters(42);
  const std::size_t count = model.parameter_count();

  tensor plain({count});
  const auto plain_work = model.make_workspace();
  const float plain_loss =
      model.loss_and_gradient(ops, params.data(), made.x, made.labels, plain.data(), *plain_work);

  tensor grads({count});
  for (std::size_t i = 0; i < count; ++i) // a stale gradient that no report may show
    grads[i] = std::numeric_limits<float>::quiet_NaN();
  recorder progress(grads.data(), count);
  const auto work = model.make_workspace();
  const float loss = model.loss_and_gradient_with_progress(ops, params.data(), made.x, made.labels,
                                                           grads.data(), *work, progress);

  EXPECT_EQ(loss, plain_loss);
  EXPECT_EQ(std::memcmp(grads.data(), plain.data(), count * sizeof(float)), 0);
  ASSERT_FALSE(progress.starts.empty());
  EXPECT_EQ(progress.starts.back(), 0u);
  for (std::size_t r = 1; r < progress.starts.size(); ++r)
    EXPECT_LE(progress.starts[r], progress.starts[r - 1]) << "report " << r;
  // Every layer with parameters but the first reports its slice before the pass ends.
  std::size_t layers_with_parameters = 0;
  for (const auto& layer : model.layers())
    layers_with_parameters += layer->parameter_count() > 0 ? 1 : 0;
  EXPECT_EQ(progress.starts.size(), layers_with_parameters);
  EXPECT_GT(progress.starts.front(), 0u) << "nothing was final before the pass ended";
  // The model lists the points it reports before the end: gradient buckets are cut there.
  EXPECT_EQ(model.gradient_final_points(),
            std::vector<std::size_t>(progress.starts.rbegin() + 1, progress.starts.rend()));
  for (std::size_t r = 0; r < progress.starts.size(); ++r) {
    const std::size_t begin = progress.starts[r];
    EXPECT_EQ(
        std::memcmp(progress.seen[r].data(), grads.data() + begin, (count - begin) * sizeof(float)),
        0)
        << "the part from " << begin << " changed after it was reported final";
  }
}

INSTANTIATE_TEST_SUITE_P(gradient_progress, every_preset, testing::Values("mlp", "cnn", "textcnn"));

// A model that does not report progress itself (only loss_and_gradient() overridden) reports
// all of its gradient as final once, at the end: correct for any model.
TEST(gradient_progress, a_model_without_its_own_reports_calls_the_whole_gradient_final_at_the_end) {
  class whole final : public herd::models::model {
  public:
    std::string name() const override { return "whole"; }
    std::string describe() const override { return "two parameters"; }
    const shape& input_shape() const override { return input_; }
    std::size_t classes() const override { return 2; }
    std::size_t parameter_count() const override { return 2; }
    tensor initial_parameters(std::uint64_t) const override { return tensor({2}); }
    std::unique_ptr<herd::models::model_workspace> make_workspace() const override {
      return std::make_unique<herd::models::model_workspace>();
    }
    float loss_and_gradient(const herd::kernels::ops&, const float*, const tensor&,
                            const std::vector<std::int32_t>&, float* grads,
                            herd::models::model_workspace&) const override {
      grads[0] = 3.0f;
      grads[1] = 4.0f;
      return 0.5f;
    }
    float loss(const herd::kernels::ops&, const float*, const tensor&,
               const std::vector<std::int32_t>&, herd::models::model_workspace&) const override {
      return 0.5f;
    }
    void probabilities(const herd::kernels::ops&, const float*, const tensor&, tensor&,
                       herd::models::model_workspace&) const override {}

  private:
    shape input_{1};
  } model;
  tensor grads({2});
  recorder progress(grads.data(), 2);
  const auto work = model.make_workspace();
  EXPECT_EQ(model.loss_and_gradient_with_progress(herd::kernels::cpu_ops(), nullptr, tensor({1, 1}),
                                                  {0}, grads.data(), *work, progress),
            0.5f);
  ASSERT_EQ(progress.starts, std::vector<std::size_t>{0});
  EXPECT_EQ(progress.seen[0], (std::vector<float>{3.0f, 4.0f}));
  EXPECT_TRUE(model.gradient_final_points().empty());
}

} // namespace
