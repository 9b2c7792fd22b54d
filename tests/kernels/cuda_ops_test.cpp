// make_cuda_ops() against reference_ops() on seeded random inputs of odd sizes, on device memory:
// every op, every GEMM transpose, the aliasing ops.hpp allows, label checks and tie rules. Without
// a device each test skips with the runtime's reason; one test checks that, then, creating the ops
// or device memory fails with a clear exception (and in a CPU-only build, "built without CUDA").
#include "herd/ops.hpp"
#include "kernels/cuda/cuda_ops.hpp"
#include "kernels/cuda/device_buffer.hpp"

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <gtest/gtest.h>
#include <limits>
#include <memory>
#include <stdexcept>
#include <string>
#include <vector>

#include "kernel_test_support.hpp"
#include "support/cuda_skip.hpp"

namespace {

using herd::kernels::adam_hyper;
using herd::kernels::ops;
using herd::kernels::reference_ops;
using herd::kernels::sgd_hyper;
using herd::kernels::transpose;
using herd::kernels::cuda::cuda_device_available;
using herd::kernels::cuda::device_buffer;
using herd::kernels::cuda::make_cuda_ops;
using herd::kernels::cuda::query_devices;
using herd::kernels::test_support::all_close;
using herd::kernels::test_support::elementwise_tolerance;
using herd::kernels::test_support::random_floats;
using herd::kernels::test_support::random_labels;

// 1e-4, stricter than the 1e-3 FP32 GEMM would need for these sizes: TF32 (10-bit mantissa) would
// fail it, so this also checks that cuBLAS runs in plain FP32.
constexpr float gemm_tolerance = herd::kernels::test_support::gemm_tolerance;
constexpr int odd_sizes[] = {1, 7, 33, 130};

std::size_t count(int rows, int cols) {
  return static_cast<std::size_t>(rows) * static_cast<std::size_t>(cols);
}

bool loss_close(float actual, float expected) {
  return std::fabs(actual - expected) <= elementwise_tolerance * (1.0f + std::fabs(expected));
}

TEST(cuda_ops, works_with_a_device_or_fails_clearly_without_one) {
  if (cuda_device_available()) {
    const auto gpu = make_cuda_ops();
    EXPECT_EQ(gpu->name(), "cuda");
    const std::vector<float> values = random_floats(1001, 1);
    EXPECT_EQ(device_buffer<float>(values).download(), values);
    return;
  }
  const std::string reason = query_devices().unavailable_reason;
  try {
    make_cuda_ops();
    FAIL() << "make_cuda_ops() succeeded without a device (" << reason << ')';
  } catch (const std::exception& error) {
    EXPECT_NE(std::string(error.what()).find("CUDA"), std::string::npos) << error.what();
  }
  try {
    device_buffer<float> buffer(std::vector<float>{1.0f, 2.0f});
    FAIL() << "device_buffer allocated without a device (" << reason << ')';
  } catch (const std::exception& error) {
    EXPECT_NE(std::string(error.what()).find("CUDA"), std::string::npos) << error.what();
  }
#ifndef HERD_TEST_WITH_CUDA
  try {
    make_cuda_ops();
  } catch (const std::runtime_error& error) {
    EXPECT_NE(std::string(error.what()).find("built without CUDA"), std::string::npos);
  }
#endif
}

TEST(cuda_ops, device_buffer_round_trips_and_moves) {
  HERD_SKIP_WITHOUT_CUDA_DEVICE();
  const std::vector<std::int32_t> labels = random_labels(130, 10, 2);
  device_buffer<std::int32_t> first(labels);
  EXPECT_EQ(first.size(), labels.size());
  device_buffer<std::int32_t> second(std::move(first));
  // A moved-from buffer is documented to be empty.
  // NOLINTNEXTLINE(bugprone-use-after-move,clang-analyzer-cplusplus.Move)
  EXPECT_EQ(first.size(), 0u);
  // NOLINTNEXTLINE(bugprone-use-after-move)
  EXPECT_EQ(first.data(), nullptr);
  EXPECT_EQ(second.download(), labels);
  second.upload(std::vector<std::int32_t>{1, 2, 3});
  EXPECT_EQ(second.download(), (std::vector<std::int32_t>{1, 2, 3}));
}

// More than any device holds: refused with what was asked, what is free and what to change, and
// the device works on.
TEST(cuda_ops, memory_the_device_lacks_is_refused_with_what_is_free) {
  HERD_SKIP_WITHOUT_CUDA_DEVICE();
  const auto& memory = herd::kernels::cuda::device_memory(0);
  try {
    memory.release(memory.allocate(std::size_t{1} << 50)); // a pebibyte
    ADD_FAILURE() << "a pebibyte was allocated";
  } catch (const std::runtime_error& error) {
    const std::string text = error.what();
    EXPECT_NE(text.find("cuda:0 is out of memory: 1073741824 MiB asked for, "), std::string::npos)
        << text;
    EXPECT_NE(text.find(" MiB free of "), std::string::npos) << text;
    EXPECT_NE(text.find("fewer train.workers or a smaller train.batch-size"), std::string::npos)
        << text;
  }
  device_buffer<float> after(std::vector<float>{1.0f, 2.0f});
  EXPECT_EQ(after.download(), (std::vector<float>{1.0f, 2.0f}));
}

TEST(cuda_ops, gemm_matches_reference_for_all_transposes_and_odd_sizes) {
  HERD_SKIP_WITHOUT_CUDA_DEVICE();
  const auto gpu = make_cuda_ops();
  std::uint32_t seed = 100;
  for (const transpose trans_a : {transpose::no, transpose::yes})
    for (const transpose trans_b : {transpose::no, transpose::yes})
      for (const int m : odd_sizes)
        for (const int n : odd_sizes)
          for (const int k : odd_sizes) {
            ++seed;
            // Stored shapes; some leading dimensions padded past the minimum.
            const int a_rows = trans_a == transpose::no ? m : k;
            const int a_cols = trans_a == transpose::no ? k : m;
            const int b_rows = trans_b == transpose::no ? k : n;
            const int b_cols = trans_b == transpose::no ? n : k;
            const int lda = a_cols + static_cast<int>(seed % 3);
            const int ldb = b_cols + static_cast<int>(seed % 2);
            const int ldc = n + static_cast<int>(seed % 5 == 0);
            const auto a = random_floats(count(a_rows, lda), seed);
            const auto b = random_floats(count(b_rows, ldb), seed + 7000);
            const auto c = random_floats(count(m, ldc), seed + 9000);
            for (const float beta : {0.0f, 0.5f}) {
              SCOPED_TRACE("trans_a " + std::to_string(trans_a == transpose::yes) + " trans_b " +
                           std::to_string(trans_b == transpose::yes) + " m " + std::to_string(m) +
                           " n " + std::to_string(n) + " k " + std::to_string(k) + " beta " +
                           std::to_string(beta));
              std::vector<float> expected = c;
              // With beta == 0, C is write-only: NaN in it must not leak into the result.
              std::vector<float> initial = c;
              if (beta == 0.0f)
                initial.assign(initial.size(), std::numeric_limits<float>::quiet_NaN());
              device_buffer<float> da(a);
              device_buffer<float> db(b);
              device_buffer<float> dc(initial);
              reference_ops().gemm(trans_a, trans_b, m, n, k, 1.5f, a.data(), lda, b.data(), ldb,
                                   beta, expected.data(), ldc);
              gpu->gemm(trans_a, trans_b, m, n, k, 1.5f, da.data(), lda, db.data(), ldb, beta,
                        dc.data(), ldc);
              std::vector<float> actual = dc.download();
              // Padding columns of C are not part of the result.
              for (int r = 0; r < m; ++r)
                for (int col = n; col < ldc; ++col)
                  actual[count(r, ldc) + static_cast<std::size_t>(col)] =
                      expected[count(r, ldc) + static_cast<std::size_t>(col)];
              ASSERT_TRUE(all_close(actual, expected, gemm_tolerance));
            }
          }
}

// gemm_batched (cublasSgemmStridedBatched, with A and B swapped as in gemm) against the
// reference's gemm per matrix: every transpose pair, A shared by all (stride 0, as a convolution's
// weights) or one per matrix, and beta 0 over NaN.
TEST(cuda_ops, gemm_batched_matches_reference_gemm_per_matrix) {
  HERD_SKIP_WITHOUT_CUDA_DEVICE();
  const auto gpu = make_cuda_ops();
  EXPECT_GT(gpu->images_per_call(), 1);
  const int m = 7;
  const int n = 13;
  const int k = 5;
  const int batch = 6;
  std::uint32_t seed = 500;
  for (const transpose trans_a : {transpose::no, transpose::yes})
    for (const transpose trans_b : {transpose::no, transpose::yes})
      for (const bool shared_a : {true, false})
        for (const float beta : {0.0f, 0.5f}) {
          ++seed;
          SCOPED_TRACE("trans_a " + std::to_string(trans_a == transpose::yes) + " trans_b " +
                       std::to_string(trans_b == transpose::yes) + " shared A " +
                       std::to_string(shared_a) + " beta " + std::to_string(beta));
          const int lda = trans_a == transpose::no ? k : m;
          const int ldb = trans_b == transpose::no ? n : k;
          const std::size_t stride_a = shared_a ? 0 : count(m, k) + 3; // gaps between matrices
          const std::size_t stride_b = count(k, n) + 1;
          const std::size_t stride_c = count(m, n) + 2;
          const auto a = random_floats(shared_a ? count(m, k) : stride_a * batch, seed);
          const auto b = random_floats(stride_b * batch, seed + 7000);
          const auto c = random_floats(stride_c * batch, seed + 9000);
          std::vector<float> expected = c;
          std::vector<float> initial = c;
          for (int i = 0; i < batch; ++i) {
            const auto at = static_cast<std::size_t>(i);
            reference_ops().gemm(trans_a, trans_b, m, n, k, 1.5f, a.data() + at * stride_a, lda,
                                 b.data() + at * stride_b, ldb, beta,
                                 expected.data() + at * stride_c, n);
            if (beta == 0.0f)
              std::fill_n(initial.begin() + static_cast<std::ptrdiff_t>(at * stride_c), m * n,
                          std::numeric_limits<float>::quiet_NaN());
          }
          device_buffer<float> da(a);
          device_buffer<float> db(b);
          device_buffer<float> dc(initial);
          gpu->gemm_batched(trans_a, trans_b, m, n, k, 1.5f, da.data(), lda, stride_a, db.data(),
                            ldb, stride_b, beta, dc.data(), n, stride_c, batch);
          // The gaps between the C matrices are not written.
          ASSERT_TRUE(all_close(dc.download(), expected, gemm_tolerance));
        }
}

TEST(cuda_ops, bias_add_and_bias_grad_match_reference) {
  HERD_SKIP_WITHOUT_CUDA_DEVICE();
  const auto gpu = make_cuda_ops();
  std::uint32_t seed = 200;
  for (const int rows : odd_sizes)
    for (const int cols : odd_sizes) {
      SCOPED_TRACE("rows " + std::to_string(rows) + " cols " + std::to_string(cols));
      const auto y = random_floats(count(rows, cols), ++seed);
      const auto bias = random_floats(static_cast<std::size_t>(cols), ++seed);
      std::vector<float> expected = y;
      reference_ops().bias_add(expected.data(), bias.data(), rows, cols);
      device_buffer<float> dy(y);
      device_buffer<float> dbias(bias);
      gpu->bias_add(dy.data(), dbias.data(), rows, cols);
      EXPECT_TRUE(all_close(dy.download(), expected, elementwise_tolerance));

      std::vector<float> expected_grad(static_cast<std::size_t>(cols));
      reference_ops().bias_grad(y.data(), expected_grad.data(), rows, cols);
      device_buffer<float> dgrad_in(y);
      device_buffer<float> dgrad(std::vector<float>(static_cast<std::size_t>(cols), 123.0f));
      gpu->bias_grad(dgrad_in.data(), dgrad.data(), rows, cols);
      EXPECT_TRUE(all_close(dgrad.download(), expected_grad, elementwise_tolerance));
    }
}

TEST(cuda_ops, fill_sets_its_floats_and_no_others_in_order_with_kernels) {
  HERD_SKIP_WITHOUT_CUDA_DEVICE();
  const auto gpu = make_cuda_ops();
  for (const std::size_t n : {std::size_t{1}, std::size_t{130}, std::size_t{1} << 20}) {
    SCOPED_TRACE("n " + std::to_string(n));
    device_buffer<float> y(std::vector<float>(n + 2, -2.0f));
    gpu->fill(y.data() + 1, n, 1.0f);
    // Queued after the fill on the same stream: it must see the ones.
    gpu->relu_forward(y.data(), y.data(), n + 2);
    std::vector<float> expected(n + 2, 1.0f);
    expected.front() = expected.back() = 0.0f;
    EXPECT_EQ(y.download(), expected);
  }
}

TEST(cuda_ops, relu_matches_reference_also_in_place) {
  HERD_SKIP_WITHOUT_CUDA_DEVICE();
  const auto gpu = make_cuda_ops();
  for (const std::size_t n :
       {std::size_t{1}, std::size_t{7}, std::size_t{130}, std::size_t{4099}}) {
    SCOPED_TRACE("n " + std::to_string(n));
    const auto x = random_floats(n, 300 + static_cast<std::uint32_t>(n));
    const auto dy = random_floats(n, 400 + static_cast<std::uint32_t>(n));
    std::vector<float> y(n);
    std::vector<float> dx(n);
    reference_ops().relu_forward(x.data(), y.data(), n);
    reference_ops().relu_backward(y.data(), dy.data(), dx.data(), n);

    device_buffer<float> dx_in(x);
    device_buffer<float> dy_out(n);
    gpu->relu_forward(dx_in.data(), dy_out.data(), n);
    EXPECT_TRUE(all_close(dy_out.download(), y, elementwise_tolerance));
    gpu->relu_forward(dx_in.data(), dx_in.data(), n); // y aliases x
    EXPECT_TRUE(all_close(dx_in.download(), y, elementwise_tolerance));

    device_buffer<float> dgrad(dy);
    device_buffer<float> dresult(n);
    gpu->relu_backward(dy_out.data(), dgrad.data(), dresult.data(), n);
    EXPECT_TRUE(all_close(dresult.download(), dx, elementwise_tolerance));
    gpu->relu_backward(dy_out.data(), dgrad.data(), dgrad.data(), n); // dx aliases dy
    EXPECT_TRUE(all_close(dgrad.download(), dx, elementwise_tolerance));
  }
}

TEST(cuda_ops, softmax_cross_entropy_matches_reference) {
  HERD_SKIP_WITHOUT_CUDA_DEVICE();
  const auto gpu = make_cuda_ops();
  std::uint32_t seed = 500;
  for (const int rows : odd_sizes)
    for (const int classes : {1, 2, 10, 33, 130, 1000}) {
      SCOPED_TRACE("rows " + std::to_string(rows) + " classes " + std::to_string(classes));
      // Wide logits, so the max subtraction matters.
      const auto logits = random_floats(count(rows, classes), ++seed, -30.0f, 30.0f);
      const auto labels = random_labels(rows, classes, ++seed);
      std::vector<float> probs(count(rows, classes));
      const float loss = reference_ops().softmax_xent_forward(logits.data(), labels.data(), rows,
                                                              classes, probs.data());
      std::vector<float> dlogits(probs.size());
      reference_ops().softmax_xent_backward(probs.data(), labels.data(), rows, classes,
                                            dlogits.data());

      device_buffer<float> dlogits_in(logits);
      device_buffer<std::int32_t> dlabels(labels);
      device_buffer<float> dprobs(probs.size());
      const float gpu_loss = gpu->softmax_xent_forward(dlogits_in.data(), dlabels.data(), rows,
                                                       classes, dprobs.data());
      EXPECT_TRUE(loss_close(gpu_loss, loss)) << gpu_loss << " vs " << loss;
      EXPECT_TRUE(all_close(dprobs.download(), probs, elementwise_tolerance));

      device_buffer<float> dgrad(probs.size());
      gpu->softmax_xent_backward(dprobs.data(), dlabels.data(), rows, classes, dgrad.data());
      EXPECT_TRUE(all_close(dgrad.download(), dlogits, elementwise_tolerance));
      // dlogits aliases probs.
      gpu->softmax_xent_backward(dprobs.data(), dlabels.data(), rows, classes, dprobs.data());
      EXPECT_TRUE(all_close(dprobs.download(), dlogits, elementwise_tolerance));
    }
}

TEST(cuda_ops, count_correct_matches_reference_with_ties) {
  HERD_SKIP_WITHOUT_CUDA_DEVICE();
  const auto gpu = make_cuda_ops();
  std::uint32_t seed = 600;
  for (const int rows : {1, 7, 33, 130, 5000})
    for (const int classes : {1, 2, 10, 33}) {
      SCOPED_TRACE("rows " + std::to_string(rows) + " classes " + std::to_string(classes));
      // Three score levels: many rows have tied maxima, where the first one counts.
      auto scores = random_floats(count(rows, classes), ++seed, 0.0f, 3.0f);
      for (float& score : scores)
        score = std::floor(score);
      const auto labels = random_labels(rows, classes, ++seed);
      const std::size_t expected =
          reference_ops().count_correct(scores.data(), labels.data(), rows, classes);
      device_buffer<float> dscores(scores);
      device_buffer<std::int32_t> dlabels(labels);
      EXPECT_EQ(gpu->count_correct(dscores.data(), dlabels.data(), rows, classes), expected);
    }
}

TEST(cuda_ops, labels_outside_the_classes_are_rejected) {
  HERD_SKIP_WITHOUT_CUDA_DEVICE();
  const auto gpu = make_cuda_ops();
  const int rows = 7;
  const int classes = 10;
  for (const std::int32_t bad : {-1, 10}) {
    auto labels = random_labels(rows, classes, 700);
    labels[3] = bad;
    device_buffer<float> dlogits(random_floats(count(rows, classes), 701));
    device_buffer<std::int32_t> dlabels(labels);
    device_buffer<float> dprobs(count(rows, classes));
    EXPECT_THROW(
        gpu->softmax_xent_forward(dlogits.data(), dlabels.data(), rows, classes, dprobs.data()),
        std::invalid_argument);
    EXPECT_THROW(gpu->count_correct(dlogits.data(), dlabels.data(), rows, classes),
                 std::invalid_argument);
  }
  // The object is still usable afterwards.
  device_buffer<float> dlogits(random_floats(count(rows, classes), 702));
  device_buffer<std::int32_t> dlabels(random_labels(rows, classes, 703));
  device_buffer<float> dprobs(count(rows, classes));
  EXPECT_GT(gpu->softmax_xent_forward(dlogits.data(), dlabels.data(), rows, classes, dprobs.data()),
            0.0f);
}

TEST(cuda_ops, sgd_step_matches_reference) {
  HERD_SKIP_WITHOUT_CUDA_DEVICE();
  const auto gpu = make_cuda_ops();
  for (const sgd_hyper hyper : {sgd_hyper{0.1f, 0.9f, 1e-4f}, sgd_hyper{0.05f, 0.0f, 0.0f}})
    for (const std::size_t n : {std::size_t{1}, std::size_t{33}, std::size_t{4099}}) {
      SCOPED_TRACE("n " + std::to_string(n) + " momentum " + std::to_string(hyper.momentum));
      std::vector<float> params = random_floats(n, 800);
      const std::vector<float> grads = random_floats(n, 801);
      std::vector<float> velocity = random_floats(n, 802);
      device_buffer<float> dparams(params);
      device_buffer<float> dgrads(grads);
      device_buffer<float> dvelocity(velocity);
      for (int step = 0; step < 3; ++step) {
        reference_ops().sgd_step(params.data(), grads.data(), velocity.data(), n, hyper);
        gpu->sgd_step(dparams.data(), dgrads.data(), dvelocity.data(), n, hyper);
      }
      EXPECT_TRUE(all_close(dparams.download(), params, elementwise_tolerance));
      EXPECT_TRUE(all_close(dvelocity.download(), velocity, elementwise_tolerance));
    }
}

TEST(cuda_ops, adam_step_matches_reference) {
  HERD_SKIP_WITHOUT_CUDA_DEVICE();
  const auto gpu = make_cuda_ops();
  const adam_hyper hyper{0.01f, 0.9f, 0.999f, 1e-8f, 1e-2f};
  for (const std::size_t n : {std::size_t{1}, std::size_t{33}, std::size_t{4099}}) {
    SCOPED_TRACE("n " + std::to_string(n));
    std::vector<float> params = random_floats(n, 810);
    const std::vector<float> grads = random_floats(n, 811);
    std::vector<float> moments = random_floats(2 * n, 812);
    for (std::size_t i = n; i < 2 * n; ++i) // second moments are never negative
      moments[i] = std::fabs(moments[i]);
    device_buffer<float> dparams(params);
    device_buffer<float> dgrads(grads);
    device_buffer<float> dmoments(moments);
    for (std::uint64_t step = 1; step <= 3; ++step) {
      reference_ops().adam_step(params.data(), grads.data(), moments.data(), n, hyper, step);
      gpu->adam_step(dparams.data(), dgrads.data(), dmoments.data(), n, hyper, step);
    }
    EXPECT_TRUE(all_close(dparams.download(), params, elementwise_tolerance));
    EXPECT_TRUE(all_close(dmoments.download(), moments, elementwise_tolerance));
  }
}

TEST(cuda_ops, weighted_sum_matches_reference_aliased_and_misaligned) {
  HERD_SKIP_WITHOUT_CUDA_DEVICE();
  const auto gpu = make_cuda_ops();
  std::uint32_t seed = 900;
  for (const int k : {1, 2, 3, 16, 17, 40})
    for (const std::size_t n :
         {std::size_t{1}, std::size_t{7}, std::size_t{130}, std::size_t{4099}})
      for (const std::size_t offset : {std::size_t{0}, std::size_t{1}}) {
        // offset 1 shifts every pointer by one float: the kernel's unaligned (scalar) path.
        SCOPED_TRACE("k " + std::to_string(k) + " n " + std::to_string(n) + " offset " +
                     std::to_string(offset));
        const auto weights = random_floats(static_cast<std::size_t>(k), ++seed, 0.0f, 1.0f);
        std::vector<std::vector<float>> inputs;
        std::vector<const float*> host_inputs;
        std::vector<device_buffer<float>> device_inputs;
        std::vector<const float*> device_pointers;
        for (int i = 0; i < k; ++i) {
          inputs.push_back(random_floats(n + offset, ++seed));
          host_inputs.push_back(inputs.back().data() + offset);
          device_inputs.emplace_back(inputs.back());
        }
        device_pointers.reserve(device_inputs.size());
        for (const auto& buffer : device_inputs)
          device_pointers.push_back(buffer.data() + offset);
        std::vector<float> expected(n + offset, 0.0f);
        reference_ops().weighted_sum(expected.data() + offset, host_inputs.data(), weights.data(),
                                     k, n);

        device_buffer<float> out(std::vector<float>(n + offset, 0.0f));
        gpu->weighted_sum(out.data() + offset, device_pointers.data(), weights.data(), k, n);
        EXPECT_TRUE(all_close(out.download(), expected, elementwise_tolerance));

        // out aliases inputs[0].
        gpu->weighted_sum(device_inputs[0].data() + offset, device_pointers.data(), weights.data(),
                          k, n);
        std::vector<float> expected_aliased = expected;
        if (offset == 1)
          expected_aliased[0] = inputs[0][0]; // before the result: untouched
        EXPECT_TRUE(
            all_close(device_inputs[0].download(), expected_aliased, elementwise_tolerance));
      }
}

TEST(cuda_ops, preconditions_are_checked_on_the_host) {
  HERD_SKIP_WITHOUT_CUDA_DEVICE();
  const auto gpu = make_cuda_ops();
  device_buffer<float> buffer(std::vector<float>(16, 1.0f));
  EXPECT_THROW(gpu->relu_forward(buffer.data(), buffer.data(), 0), std::invalid_argument);
  EXPECT_THROW(gpu->gemm(transpose::no, transpose::no, 2, 2, 2, 1.0f, buffer.data(), 1,
                         buffer.data(), 2, 0.0f, buffer.data(), 2),
               std::invalid_argument);
  const float* inputs[] = {buffer.data()};
  const float weights[] = {1.0f};
  EXPECT_THROW(gpu->weighted_sum(buffer.data(), inputs, weights, 0, 16), std::invalid_argument);
  EXPECT_THROW(
      gpu->sgd_step(buffer.data(), buffer.data(), buffer.data(), 16, sgd_hyper{-0.1f, 0.0f, 0.0f}),
      std::invalid_argument);
  EXPECT_THROW(make_cuda_ops(static_cast<int>(query_devices().devices.size())),
               std::invalid_argument);
}

} // namespace
