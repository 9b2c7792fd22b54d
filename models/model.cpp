// The model interface's default evaluation; see model.hpp.
#include "herd/model.hpp"

#include "kernels/check.hpp"

#include <algorithm>
#include <cmath>

namespace herd::models {

float model::loss_and_gradient_with_progress(const kernels::ops& ops, const float* params,
                                             const tensor& x,
                                             const std::vector<std::int32_t>& labels, float* grads,
                                             model_workspace& work,
                                             gradient_progress& progress) const {
  const float batch_loss = loss_and_gradient(ops, params, x, labels, grads, work);
  progress.final_from(0);
  return batch_loss;
}

evaluation model::evaluate(const kernels::ops& ops, const float* params, const dataset& data,
                           std::size_t batch_size, model_workspace& work) const {
  HERD_CHECK_GT(batch_size, 0u);
  const std::size_t inputs = elements(input_shape());
  HERD_CHECK(data.features() == inputs, name() << " takes " << inputs << " floats per sample, "
                                               << data.name << " has " << data.features());
  const std::size_t width = classes();
  // Allocated per call, not kept in the workspace: the workspace is the model's own type, and an
  // evaluation's two buffers cost nothing next to its forward passes.
  tensor batch(ops.memory());
  tensor probs(ops.memory());
  std::vector<float> host_probs;
  evaluation result;
  double loss_sum = 0.0;
  for (std::size_t first = 0; first < data.size(); first += batch_size) {
    const std::size_t rows = std::min(batch_size, data.size() - first);
    batch.reshape({rows, inputs});
    ops.upload(batch.data(), data.images.row(first), rows * inputs * sizeof(float));
    probabilities(ops, params, batch, probs, work);
    HERD_CHECK(probs.rows() == rows && probs.cols() == width,
               name() << "::probabilities gave " << probs.shape_string() << " for " << rows
                      << " rows of " << width << " classes");
    host_probs.resize(rows * width);
    ops.download(host_probs.data(), probs.data(), rows * width * sizeof(float));
    for (std::size_t row = 0; row < rows; ++row) {
      const float* p = host_probs.data() + row * width;
      const auto label = static_cast<std::size_t>(data.labels[first + row]);
      loss_sum -= std::log(std::max(p[label], 1e-30f));
      if (static_cast<std::size_t>(std::max_element(p, p + width) - p) == label)
        ++result.correct;
    }
  }
  result.samples = data.size();
  result.mean_loss = result.samples == 0 ? 0.0 : loss_sum / static_cast<double>(result.samples);
  return result;
}

} // namespace herd::models
