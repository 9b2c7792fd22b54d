// A model written by hand against Herd's model interface (include/herd/model.hpp): a two-layer network,
// inputs -> dense hidden -> relu -> dense classes -> softmax cross-entropy, with its own forward
// and backward code in plain loops. Herd's tests train this same class (tests/actors), so the
// example stays correct as Herd changes.
//
// The contract it follows (docs/models.md, "Your own model"):
//   * Parameters and gradients are each one contiguous float buffer of parameter_count() floats
//     that Herd owns, one per worker replica; the model only knows their layout.
//   * One model object serves every worker and the evaluator at once, from different threads, so
//     every method is const and touches no member it could change: what a pass needs between its
//     forward and backward halves lives in a workspace, one per thread.
//   * The loops read and write host memory, so this model needs train.backend = cpu; it refuses
//     ops whose memory the CPU cannot read (a GPU's) rather than crash.
#pragma once

#include "herd/model.hpp"

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <random>
#include <stdexcept>
#include <string>
#include <vector>

namespace example {

class two_layer_network final : public herd::models::model {
public:
  two_layer_network(std::size_t inputs, std::size_t hidden, std::size_t classes)
      : inputs_(inputs), hidden_(hidden), classes_(classes), input_shape_{inputs} {
    if (inputs == 0 || hidden == 0 || classes == 0)
      throw std::invalid_argument("two_layer_network: inputs, hidden and classes must be positive");
  }

  std::string name() const override { return "two-layer"; }
  // A checkpoint stores this text and a run resumes only from a checkpoint with the same one:
  // it must change whenever the parameter layout does.
  std::string describe() const override {
    return std::to_string(inputs_) + ": dense " + std::to_string(hidden_) + ", relu, dense " +
           std::to_string(classes_) + " (two_layer_network)";
  }
  const herd::models::shape& input_shape() const override { return input_shape_; }
  std::size_t classes() const override { return classes_; }

  // The layout of the one parameter buffer (the gradient buffer has the same):
  //   first_weights  hidden x inputs, row-major (row j: what hidden unit j sees)
  //   first_bias     hidden
  //   second_weights classes x hidden, row-major
  //   second_bias    classes
  std::size_t parameter_count() const override {
    return hidden_ * inputs_ + hidden_ + classes_ * hidden_ + classes_;
  }

  // He-uniform weights (the relu halves the variance, so the bound is sqrt(6 / fan_in)) and zero
  // biases. Every worker calls this with the same seed, so replicas start identical.
  herd::models::tensor initial_parameters(std::uint64_t seed) const override {
    herd::models::tensor params({parameter_count()});
    std::mt19937_64 generator(seed);
    const layout at = locate(params.data());
    std::uniform_real_distribution<float> first(-std::sqrt(6.0f / inputs_),
                                                std::sqrt(6.0f / inputs_));
    std::uniform_real_distribution<float> second(-std::sqrt(6.0f / hidden_),
                                                 std::sqrt(6.0f / hidden_));
    for (std::size_t i = 0; i < hidden_ * inputs_; ++i)
      at.first_weights[i] = first(generator);
    for (std::size_t i = 0; i < classes_ * hidden_; ++i)
      at.second_weights[i] = second(generator);
    return params; // the biases stay at the zero the tensor starts with
  }

  std::unique_ptr<herd::models::model_workspace> make_workspace() const override {
    return std::make_unique<scratch>();
  }

  float loss_and_gradient(const herd::kernels::ops& ops, const float* params,
                          const herd::models::tensor& x, const std::vector<std::int32_t>& labels,
                          float* grads, herd::models::model_workspace& work) const override {
    scratch& s = checked(ops, x, &labels, work);
    const float loss = forward(params, x, labels, s);
    backward(params, x, labels, s, grads);
    return loss;
  }

  float loss(const herd::kernels::ops& ops, const float* params, const herd::models::tensor& x,
             const std::vector<std::int32_t>& labels,
             herd::models::model_workspace& work) const override {
    return forward(params, x, labels, checked(ops, x, &labels, work));
  }

  void probabilities(const herd::kernels::ops& ops, const float* params,
                     const herd::models::tensor& x, herd::models::tensor& probs,
                     herd::models::model_workspace& work) const override {
    scratch& s = checked(ops, x, nullptr, work);
    forward(params, x, {}, s);
    probs.reshape({x.rows(), classes_});
    std::copy(s.probs.begin(), s.probs.end(), probs.data());
  }
  // evaluate() is left to the interface's default, which calls probabilities() batch by batch.

private:
  // What the forward pass leaves for the backward pass, kept between batches so that a step does
  // not allocate once the largest batch has been seen.
  struct scratch final : herd::models::model_workspace {
    std::vector<float> hidden;      // rows x hidden: relu(first layer)
    std::vector<float> probs;       // rows x classes: softmax of the scores
    std::vector<float> hidden_grad; // hidden: d loss / d hidden, one row at a time
  };

  struct layout {
    float* first_weights;
    float* first_bias;
    float* second_weights;
    float* second_bias;
  };
  layout locate(float* base) const {
    layout at{};
    at.first_weights = base;
    at.first_bias = at.first_weights + hidden_ * inputs_;
    at.second_weights = at.first_bias + hidden_;
    at.second_bias = at.second_weights + classes_ * hidden_;
    return at;
  }
  layout locate(const float* base) const { return locate(const_cast<float*>(base)); }

  scratch& checked(const herd::kernels::ops& ops, const herd::models::tensor& x,
                   const std::vector<std::int32_t>* labels,
                   herd::models::model_workspace& work) const {
    if (!ops.memory().host_accessible() || !x.on_host())
      throw std::invalid_argument("two_layer_network computes on the CPU; run it with "
                                  "train.backend = cpu");
    if (x.cols() != inputs_ || (labels != nullptr && labels->size() != x.rows()))
      throw std::invalid_argument("two_layer_network: a batch of " + x.shape_string() +
                                  " does not fit " + describe());
    auto* own = dynamic_cast<scratch*>(&work);
    if (own == nullptr)
      throw std::invalid_argument("two_layer_network: a workspace of another model");
    return *own;
  }

  // Leaves relu(first layer) in s.hidden and the softmax in s.probs; returns the batch's mean
  // cross-entropy when labels are given (probabilities() gives none).
  float forward(const float* params, const herd::models::tensor& x,
                const std::vector<std::int32_t>& labels, scratch& s) const {
    const layout at = locate(params);
    const std::size_t rows = x.rows();
    s.hidden.assign(rows * hidden_, 0.0f);
    s.probs.assign(rows * classes_, 0.0f);
    double loss_sum = 0.0;
    for (std::size_t r = 0; r < rows; ++r) {
      const float* in = x.data() + r * inputs_;
      float* h = s.hidden.data() + r * hidden_;
      for (std::size_t j = 0; j < hidden_; ++j) {
        float sum = at.first_bias[j];
        for (std::size_t i = 0; i < inputs_; ++i)
          sum += at.first_weights[j * inputs_ + i] * in[i];
        h[j] = std::max(sum, 0.0f);
      }
      float* p = s.probs.data() + r * classes_;
      for (std::size_t k = 0; k < classes_; ++k) {
        float sum = at.second_bias[k];
        for (std::size_t j = 0; j < hidden_; ++j)
          sum += at.second_weights[k * hidden_ + j] * h[j];
        p[k] = sum;
      }
      // Softmax with the largest score subtracted first, so exp() cannot overflow.
      const float largest = *std::max_element(p, p + classes_);
      float total = 0.0f;
      for (std::size_t k = 0; k < classes_; ++k)
        total += (p[k] = std::exp(p[k] - largest));
      for (std::size_t k = 0; k < classes_; ++k)
        p[k] /= total;
      if (!labels.empty())
        loss_sum -= std::log(std::max(p[static_cast<std::size_t>(labels[r])], 1e-30f));
    }
    return rows == 0 ? 0.0f : static_cast<float>(loss_sum / static_cast<double>(rows));
  }

  // The gradient of the batch's mean loss, overwriting `grads`. With scores z = W2 h + b2 and
  // p = softmax(z), d loss / d z = (p - onehot(label)) / rows; it flows back through W2 to h, and
  // through the relu (zero where h was clamped) to the first layer.
  void backward(const float* params, const herd::models::tensor& x,
                const std::vector<std::int32_t>& labels, scratch& s, float* grads) const {
    const layout at = locate(params);
    const layout grad = locate(grads);
    std::fill(grads, grads + parameter_count(), 0.0f);
    const std::size_t rows = x.rows();
    const float scale = 1.0f / static_cast<float>(rows);
    s.hidden_grad.resize(hidden_);
    for (std::size_t r = 0; r < rows; ++r) {
      const float* in = x.data() + r * inputs_;
      const float* h = s.hidden.data() + r * hidden_;
      const float* p = s.probs.data() + r * classes_;
      std::fill(s.hidden_grad.begin(), s.hidden_grad.end(), 0.0f);
      for (std::size_t k = 0; k < classes_; ++k) {
        const float score_grad =
            (p[k] - (static_cast<std::int32_t>(k) == labels[r] ? 1.0f : 0.0f)) * scale;
        grad.second_bias[k] += score_grad;
        for (std::size_t j = 0; j < hidden_; ++j) {
          grad.second_weights[k * hidden_ + j] += score_grad * h[j];
          s.hidden_grad[j] += score_grad * at.second_weights[k * hidden_ + j];
        }
      }
      for (std::size_t j = 0; j < hidden_; ++j) {
        if (h[j] <= 0.0f)
          continue; // the relu passed no gradient here
        grad.first_bias[j] += s.hidden_grad[j];
        for (std::size_t i = 0; i < inputs_; ++i)
          grad.first_weights[j * inputs_ + i] += s.hidden_grad[j] * in[i];
      }
    }
  }

  std::size_t inputs_;
  std::size_t hidden_;
  std::size_t classes_;
  herd::models::shape input_shape_;
};

} // namespace example
