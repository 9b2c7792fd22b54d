// bench_cuda: what make_cuda_ops() costs over its baselines on one GPU. weighted_sum (k = 2, 1 GiB
// buffers) GB/s, counting k reads + 1 write, over cudaMemcpy device-to-device GB/s counting bytes
// read + written (goal >= 0.85); GEMM TFLOP/s through cuda_ops over a bare cublasSgemm with the
// same shapes, stream and math mode (goal >= 0.95). Medians of timed repetitions (cudaEvents,
// after warm-up). Then the training step of the quick start's MLP (784-256-128-10: forward,
// backward, SGD step) and of the cnn preset at batch 256 and 4096, with everything on the GPU
// against the CPU path (OpenBLAS on every core), in steps per second (host clock, each step
// synchronised; no goal).
// Prints a table; asserts nothing (scripts/gpu-check reads the verdicts).
//
// Usage: bench_cuda [--quick]   (--quick: 64 MiB buffers and fewer repetitions, for a smoke test)
#include "herd/dataset.hpp"
#include "herd/sequential.hpp"
#include "kernels/cuda/check.hpp"
#include "kernels/cuda/cuda_ops.hpp"
#include "kernels/cuda/device_buffer.hpp"
#include "models/sampler.hpp"
#include "models/optimizer.hpp"

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <functional>
#include <string>
#include <vector>

#include "bench/mlp_gemm_shapes.hpp"

namespace {

using herd::kernels::transpose;
using herd::kernels::cuda::device_buffer;

struct timing_plan {
  int warmups;
  int repetitions;
  int calls_per_repetition; // small GEMMs run several calls between two events
};

// Median milliseconds of one call of `work`, timed with events on `stream`.
double median_ms(cudaStream_t stream, const timing_plan& plan, const std::function<void()>& work) {
  for (int i = 0; i < plan.warmups; ++i)
    work();
  cudaEvent_t start = nullptr;
  cudaEvent_t stop = nullptr;
  HERD_CUDA_CHECK(cudaEventCreate(&start));
  HERD_CUDA_CHECK(cudaEventCreate(&stop));
  std::vector<double> samples;
  for (int r = 0; r < plan.repetitions; ++r) {
    HERD_CUDA_CHECK(cudaEventRecord(start, stream));
    for (int c = 0; c < plan.calls_per_repetition; ++c)
      work();
    HERD_CUDA_CHECK(cudaEventRecord(stop, stream));
    HERD_CUDA_CHECK(cudaEventSynchronize(stop));
    float elapsed_ms = 0.0f;
    HERD_CUDA_CHECK(cudaEventElapsedTime(&elapsed_ms, start, stop));
    samples.push_back(static_cast<double>(elapsed_ms) / plan.calls_per_repetition);
  }
  HERD_CUDA_CHECK(cudaEventDestroy(start));
  HERD_CUDA_CHECK(cudaEventDestroy(stop));
  std::sort(samples.begin(), samples.end());
  return samples[samples.size() / 2];
}

struct row {
  std::string what;
  std::string unit;
  double measured;
  double baseline;
  double goal; // negative: none (a comparison, not a target)
};

using herd::bench::gemm_shape;

// 4096^3, and the MLP's GEMMs at batch 256 and 4096.
std::vector<gemm_shape> gemm_shapes() {
  std::vector<gemm_shape> shapes{{"square_4096", transpose::no, transpose::no, 4096, 4096, 4096}};
  for (auto& shape : herd::bench::mlp_gemm_shapes({256, 4096}))
    shapes.push_back(std::move(shape));
  return shapes;
}

cublasOperation_t to_cublas(transpose trans) {
  return trans == transpose::no ? CUBLAS_OP_N : CUBLAS_OP_T;
}

// Median seconds of one training step of `model` (loss and gradient, then the optimizer) on
// `ops`, with parameters, batch and gradient in ops.memory(); each step ends synchronised.
double median_step_seconds(const herd::kernels::ops& ops, const herd::models::model& model,
                           const herd::models::dataset& data, std::size_t batch, int repetitions) {
  using herd::models::tensor;
  const auto& where = ops.memory();
  tensor params(model.initial_parameters(1), where);
  tensor grads(std::vector<std::size_t>{model.parameter_count()}, where);
  herd::models::optimizer optimizer(model.parameter_count(), {0.01f, 0.9f, 0.0f}, where);
  std::vector<std::size_t> rows(batch);
  for (std::size_t i = 0; i < batch; ++i)
    rows[i] = i % data.size();
  tensor host_x;
  std::vector<std::int32_t> labels;
  herd::models::gather_batch(data, rows, host_x, labels);
  const tensor x(host_x, where);
  const auto workspace = model.make_workspace();
  auto& work = *workspace;
  std::vector<double> samples;
  for (int r = 0; r < repetitions + 2; ++r) { // two warm-ups
    const auto start = std::chrono::steady_clock::now();
    model.loss_and_gradient(ops, params.data(), x, labels, grads.data(), work);
    optimizer.step(ops, params.data(), grads.data());
    ops.synchronize();
    if (r >= 2)
      samples.push_back(
          std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count());
  }
  std::sort(samples.begin(), samples.end());
  return samples[samples.size() / 2];
}

} // namespace

int main(int argc, char** argv) {
  const bool quick = argc > 1 && std::strcmp(argv[1], "--quick") == 0;
  if (!herd::kernels::cuda::cuda_device_available()) {
    std::printf("bench_cuda: no CUDA device (%s)\n",
                herd::kernels::cuda::query_devices().unavailable_reason.c_str());
    return 2;
  }
  std::printf("bench_cuda: %s\n",
              herd::kernels::cuda::describe(herd::kernels::cuda::query_devices()).c_str());

  cudaStream_t stream = nullptr;
  HERD_CUDA_CHECK(cudaStreamCreate(&stream));
  auto gpu = herd::kernels::cuda::make_cuda_ops(0, stream);
  std::vector<row> rows;
  bool failed = false; // a measurement that threw: its row is missing

  // ---- weighted sum over memcpy -------------------------------------------------------------
  {
    const std::size_t floats = (quick ? std::size_t{64} : std::size_t{1024}) << 18; // MiB -> floats
    const std::size_t bytes = floats * sizeof(float);
    const timing_plan plan{3, quick ? 5 : 15, 1};
    device_buffer<float> x(std::vector<float>(floats, 1.0f));
    device_buffer<float> y(std::vector<float>(floats, 2.0f));
    device_buffer<float> out(floats);
    const float* inputs[] = {x.data(), y.data()};
    const float weights[] = {0.5f, 0.25f};
    const double sum_ms =
        median_ms(stream, plan, [&] { gpu->weighted_sum(out.data(), inputs, weights, 2, floats); });
    const double copy_ms = median_ms(stream, plan, [&] {
      HERD_CUDA_CHECK(
          cudaMemcpyAsync(out.data(), x.data(), bytes, cudaMemcpyDeviceToDevice, stream));
    });
    const double sum_gbs = 3.0 * static_cast<double>(bytes) / (sum_ms * 1e6);
    const double copy_gbs = 2.0 * static_cast<double>(bytes) / (copy_ms * 1e6);
    // A wrong result would make the bandwidth meaningless.
    const float expected = 0.5f * 1.0f + 0.25f * 2.0f;
    const std::vector<float> result = out.download();
    if (result.front() != expected || result.back() != expected) {
      std::printf("bench_cuda: weighted_sum gave %g, expected %g\n", result.front(), expected);
      return 1;
    }
    rows.push_back({"weighted_sum k=2 " + std::to_string(bytes >> 20) + " MiB vs memcpy D2D",
                    "GB/s", sum_gbs, copy_gbs, 0.85});
  }

  // ---- GEMM through cuda_ops over bare cublasSgemm --------------------------------------------
  {
    cublasHandle_t bare = nullptr;
    HERD_CUBLAS_CHECK(cublasCreate(&bare));
    HERD_CUBLAS_CHECK(cublasSetStream(bare, stream));
    HERD_CUBLAS_CHECK(cublasSetMathMode(bare, CUBLAS_DEFAULT_MATH)); // what cuda_ops uses
    for (const gemm_shape& shape : gemm_shapes()) {
      const bool big = static_cast<double>(shape.m) * shape.n * shape.k > 1e9;
      const timing_plan plan{3, quick ? 5 : 11, big ? 3 : 50};
      const int a_rows = shape.trans_a == transpose::no ? shape.m : shape.k;
      const int lda = shape.trans_a == transpose::no ? shape.k : shape.m;
      const int b_rows = shape.trans_b == transpose::no ? shape.k : shape.n;
      const int ldb = shape.trans_b == transpose::no ? shape.n : shape.k;
      device_buffer<float> a(std::vector<float>(static_cast<std::size_t>(a_rows) * lda, 0.5f));
      device_buffer<float> b(std::vector<float>(static_cast<std::size_t>(b_rows) * ldb, 0.25f));
      device_buffer<float> c(static_cast<std::size_t>(shape.m) * shape.n);
      const float alpha = 1.0f;
      const float beta = 0.0f;
      const double ops_ms = median_ms(stream, plan, [&] {
        gpu->gemm(shape.trans_a, shape.trans_b, shape.m, shape.n, shape.k, alpha, a.data(), lda,
                  b.data(), ldb, beta, c.data(), shape.n);
      });
      const double bare_ms = median_ms(stream, plan, [&] {
        HERD_CUBLAS_CHECK(cublasSgemm(bare, to_cublas(shape.trans_b), to_cublas(shape.trans_a),
                                      shape.n, shape.m, shape.k, &alpha, b.data(), ldb, a.data(),
                                      lda, &beta, c.data(), shape.n));
      });
      const double flops = 2.0 * shape.m * shape.n * shape.k;
      rows.push_back({"gemm " + shape.name + " vs bare cublasSgemm", "TFLOP/s",
                      flops / (ops_ms * 1e9), flops / (bare_ms * 1e9), 0.95});
    }
    HERD_CUBLAS_CHECK(cublasDestroy(bare));
  }

  // ---- the models' training steps, GPU against the CPU path ---------------------------------
  // The quick start's MLP and the cnn preset (1x28x28 samples). A model that fails on the device
  // is reported and leaves the other rows standing.
  herd::kernels::set_blas_threads(0); // the CPU path at its best: every core in each GEMM
  struct step_case {
    const char* preset;
    std::size_t batch;
    int gpu_repetitions;
    int cpu_repetitions;
  };
  const step_case cases[] = {{"mlp", 256, 50, 21},
                             {"mlp", 4096, 50, 7},
                             {"cnn", 256, 30, 5},
                             {"cnn", 4096, 10, 2}};
  for (const step_case& c : cases) {
    try {
      const bool image = std::strcmp(c.preset, "cnn") == 0;
      auto data = herd::models::make_synthetic_split(4096, 10, 784, 10, 1);
      if (image)
        data.train.sample_shape = {1, 28, 28};
      const auto built =
          herd::models::build_model({c.preset, "", {256, 128}}, data.train.input_shape(), 10);
      const double gpu_s = median_step_seconds(*gpu, *built, data.train, c.batch,
                                               quick ? 3 : c.gpu_repetitions);
      const double cpu_s = median_step_seconds(herd::kernels::cpu_ops(), *built, data.train,
                                               c.batch, quick ? 1 : c.cpu_repetitions);
      char what[96];
      std::snprintf(what, sizeof what, "%s step batch %zu (%.3f vs %.2f ms) vs CPU", c.preset,
                    c.batch, gpu_s * 1e3, cpu_s * 1e3);
      rows.push_back({what, "steps/s", 1.0 / gpu_s, 1.0 / cpu_s, -1.0});
    } catch (const std::exception& e) {
      std::printf("bench_cuda: %s step batch %zu failed: %s\n", c.preset, c.batch, e.what());
      failed = true;
    }
  }

  std::printf("\n%-46s %8s %12s %12s %7s %6s  %s\n", "what", "unit", "measured", "baseline",
              "ratio", "goal", "verdict");
  bool all_met = true;
  for (const row& r : rows) {
    const double ratio = r.measured / r.baseline;
    if (r.goal < 0.0) {
      std::printf("%-46s %8s %12.2f %12.2f %7.3f %6s  %s\n", r.what.c_str(), r.unit.c_str(),
                  r.measured, r.baseline, ratio, "-", "(speed-up, no goal)");
      continue;
    }
    const bool met = ratio >= r.goal;
    all_met = all_met && met;
    std::printf("%-46s %8s %12.2f %12.2f %7.3f %6.2f  %s\n", r.what.c_str(), r.unit.c_str(),
                r.measured, r.baseline, ratio, r.goal, met ? "met" : "BELOW GOAL");
  }
  std::printf("bench_cuda: %s%s\n", all_met ? "all goals met" : "some goals not met",
              failed ? "; some rows failed (above)" : "");
  HERD_CUDA_CHECK(cudaStreamSynchronize(stream));
  gpu.reset(); // its cuBLAS handle uses the stream
  HERD_CUDA_CHECK(cudaStreamDestroy(stream));
  return failed ? 1 : 0;
}
