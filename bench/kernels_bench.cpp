// bench_kernels: what the kernel layer costs over its baselines. GEMM GFLOP/s of cpu_ops().gemm
// against a bare cblas_sgemm, weighted_sum GB/s against memcpy moving the same bytes, and a
// convolution's forward + backward through cpu_ops() (im2col + gemm, gemm + col2im) against a plain
// im2col / col2im loop with cblas_sgemm written here, at the shapes of a small Fashion-MNIST CNN,
// and an AdamW step against an SGD step over the same parameters.
//
// Usage: bench_kernels [--quick] [--blas_threads=N] [Google Benchmark flags]
// Prints Google Benchmark's table (aggregates over repetitions), then ratios of the medians of this
// same run. Defaults: 5 repetitions of at least 0.1 s; --quick: 3 of at least 0.02 s (about 40 s
// and 10 s on 2 cores). Later --benchmark_* flags override both. Benchmarks assert nothing.
#include "herd/ops.hpp"

#include <benchmark/benchmark.h>
#include <cblas.h>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <map>
#include <random>
#include <string>
#include <vector>

#include "bench/mlp_gemm_shapes.hpp"

namespace {

using herd::kernels::cpu_ops;
using herd::kernels::transpose;

// ---- GEMM ---------------------------------------------------------------------------------------

using herd::bench::gemm_shape;

// The MLP's GEMMs at batch 32 and 128, plus 1024^3, where OpenBLAS runs at its peak.
std::vector<gemm_shape> gemm_shapes() {
  auto shapes = herd::bench::mlp_gemm_shapes({32, 128});
  shapes.push_back({"square_1024", transpose::no, transpose::no, 1024, 1024, 1024});
  return shapes;
}

int stored_cols(transpose trans, int op_rows, int op_cols) {
  return trans == transpose::no ? op_cols : op_rows;
}

CBLAS_TRANSPOSE to_cblas(transpose trans) {
  return trans == transpose::no ? CblasNoTrans : CblasTrans;
}

std::vector<float> random_values(std::size_t n, unsigned seed) {
  std::mt19937 generator(seed);
  std::uniform_real_distribution<float> distribution(-1.0f, 1.0f);
  std::vector<float> values(n);
  for (float& value : values)
    value = distribution(generator);
  return values;
}

// A, B and C big enough for every shape, written once before any timing: first touch of fresh
// pages is very slow on these VMs and would otherwise land inside the first measurements.
struct gemm_operands {
  static constexpr std::size_t largest_matrix = std::size_t{1024} * 1024;
  std::vector<float> a = random_values(largest_matrix, 1);
  std::vector<float> b = random_values(largest_matrix, 2);
  std::vector<float> c = std::vector<float>(largest_matrix, 0.0f);
};

gemm_operands& shared_gemm_operands() {
  static gemm_operands operands;
  return operands;
}

void count_gemm_flops(benchmark::State& state, const gemm_shape& s) {
  const double gigaflops_per_call = 2.0 * s.m * s.n * s.k * 1e-9;
  state.counters["GFLOP/s"] =
      benchmark::Counter(gigaflops_per_call, benchmark::Counter::kIsIterationInvariantRate);
}

void gemm_through_cpu_ops(benchmark::State& state, const gemm_shape& s) {
  gemm_operands& operands = shared_gemm_operands();
  const int lda = stored_cols(s.trans_a, s.m, s.k);
  const int ldb = stored_cols(s.trans_b, s.k, s.n);
  const auto& kernels = cpu_ops();
  for (auto _ : state) {
    kernels.gemm(s.trans_a, s.trans_b, s.m, s.n, s.k, 1.0f, operands.a.data(), lda,
                 operands.b.data(), ldb, 0.0f, operands.c.data(), s.n);
    benchmark::ClobberMemory();
  }
  count_gemm_flops(state, s);
}

void gemm_through_bare_cblas(benchmark::State& state, const gemm_shape& s) {
  gemm_operands& operands = shared_gemm_operands();
  const int lda = stored_cols(s.trans_a, s.m, s.k);
  const int ldb = stored_cols(s.trans_b, s.k, s.n);
  for (auto _ : state) {
    cblas_sgemm(CblasRowMajor, to_cblas(s.trans_a), to_cblas(s.trans_b), s.m, s.n, s.k, 1.0f,
                operands.a.data(), lda, operands.b.data(), ldb, 0.0f, operands.c.data(), s.n);
    benchmark::ClobberMemory();
  }
  count_gemm_flops(state, s);
}

// ---- weighted sum against memcpy ----------------------------------------------------------------

struct reduction_case {
  int inputs;
  std::size_t floats;
  std::string name() const { return "k" + std::to_string(inputs) + "/n" + std::to_string(floats); }
  // Bytes a weighted sum moves: k inputs read and one output written.
  std::size_t bytes_moved() const {
    return (static_cast<std::size_t>(inputs) + 1) * floats * sizeof(float);
  }
};

constexpr std::size_t mlp_parameter_count = 235146; // 784*256+256 + 256*128+128 + 128*10+10
constexpr std::size_t large_floats = std::size_t{16} << 20;
constexpr int most_inputs = 8;

std::vector<reduction_case> reduction_cases() {
  std::vector<reduction_case> cases;
  for (const std::size_t floats : {mlp_parameter_count, large_floats})
    for (const int inputs : {2, 4, most_inputs})
      cases.push_back({inputs, floats});
  return cases;
}

// One arena, written once, holds the inputs and output of every weighted sum and both sides of
// every memcpy, so that kernel and baseline run on the same (already touched) pages.
std::vector<float>& reduction_arena() {
  static std::vector<float> arena((most_inputs + 1) * large_floats, 1.0f);
  return arena;
}

void count_bytes(benchmark::State& state, std::size_t bytes_per_call) {
  state.counters["GB/s"] = benchmark::Counter(static_cast<double>(bytes_per_call) * 1e-9,
                                              benchmark::Counter::kIsIterationInvariantRate);
}

// Inputs all hold 1 and the weights are 1/k (exact for k = 2, 4, 8), so the output stays 1 even
// when it is written into inputs[0] over and over.
void weighted_sum_benchmark(benchmark::State& state, const reduction_case& c,
                            bool into_first_input) {
  float* arena = reduction_arena().data();
  std::vector<const float*> inputs(static_cast<std::size_t>(c.inputs));
  for (std::size_t i = 0; i < inputs.size(); ++i)
    inputs[i] = arena + i * c.floats;
  float* out = into_first_input ? arena : arena + static_cast<std::size_t>(c.inputs) * c.floats;
  const std::vector<float> weights(static_cast<std::size_t>(c.inputs), 1.0f / c.inputs);
  const auto& kernels = cpu_ops();
  for (auto _ : state) {
    kernels.weighted_sum(out, inputs.data(), weights.data(), c.inputs, c.floats);
    benchmark::ClobberMemory();
  }
  count_bytes(state, c.bytes_moved());
}

// memcpy moves 2 bytes (one read, one written) per byte copied, so it copies half of what the
// weighted sum moves: both benchmarks then move the same total.
void memcpy_benchmark(benchmark::State& state, const reduction_case& c) {
  char* arena = reinterpret_cast<char*>(reduction_arena().data());
  const std::size_t bytes_copied = c.bytes_moved() / 2;
  for (auto _ : state) {
    std::memcpy(arena + bytes_copied, arena, bytes_copied);
    benchmark::ClobberMemory();
  }
  count_bytes(state, 2 * bytes_copied);
}

// ---- convolution: im2col + GEMM through cpu_ops() against a plain loop
// ---------------------------

using herd::kernels::window2d;

struct convolution_case {
  std::string name;
  window2d window;
  int filters;
  int batch;
};

// conv 32 3x3 pad 1 on 1x28x28, then (after a 2x2 pool) conv 64 3x3 pad 1 on 32x14x14.
std::vector<convolution_case> convolution_cases() {
  std::vector<convolution_case> cases;
  for (const int batch : {32, 128}) {
    const std::string suffix = "/b" + std::to_string(batch);
    cases.push_back({"conv1_1x28x28_to_32" + suffix, {1, 28, 28, 3, 3, 1, 1, 1, 1}, 32, batch});
    cases.push_back({"conv2_32x14x14_to_64" + suffix, {32, 14, 14, 3, 3, 1, 1, 1, 1}, 64, batch});
  }
  return cases;
}

// One layer's tensors: x, W, y and their gradients, plus one image's column matrix and its
// gradient (both paths work an image at a time, so the columns stay in cache).
struct convolution_tensors {
  explicit convolution_tensors(const convolution_case& c)
      : x(random_values(c.batch * c.window.image_size(), 3)),
        weights(random_values(static_cast<std::size_t>(c.filters) * c.window.column_rows(), 4)),
        y(output_size(c)), dy(random_values(output_size(c), 5)), dx(x.size()),
        weight_grad(weights.size()), columns(c.window.column_rows() * c.window.output_positions()),
        column_grad(columns.size()) {}
  static std::size_t output_size(const convolution_case& c) {
    return static_cast<std::size_t>(c.batch) * static_cast<std::size_t>(c.filters) *
           c.window.output_positions();
  }
  std::vector<float> x, weights, y, dy, dx, weight_grad, columns, column_grad;
};

// Caffe's im2col and col2im as the plain loops anyone would write first.
void plain_im2col(const float* image, const window2d& w, float* columns) {
  const int out_h = w.output_height();
  const int out_w = w.output_width();
  for (int c = 0; c < w.channels; ++c)
    for (int i = 0; i < w.kernel_h; ++i)
      for (int j = 0; j < w.kernel_w; ++j)
        for (int oh = 0; oh < out_h; ++oh)
          for (int ow = 0; ow < out_w; ++ow) {
            const int row = oh * w.stride_h - w.pad_h + i;
            const int col = ow * w.stride_w - w.pad_w + j;
            *columns++ = row >= 0 && row < w.height && col >= 0 && col < w.width
                             ? image[(c * w.height + row) * w.width + col]
                             : 0.0f;
          }
}

void plain_col2im(const float* columns, const window2d& w, float* image) {
  std::memset(image, 0, w.image_size() * sizeof(float));
  const int out_h = w.output_height();
  const int out_w = w.output_width();
  for (int c = 0; c < w.channels; ++c)
    for (int i = 0; i < w.kernel_h; ++i)
      for (int j = 0; j < w.kernel_w; ++j)
        for (int oh = 0; oh < out_h; ++oh)
          for (int ow = 0; ow < out_w; ++ow, ++columns) {
            const int row = oh * w.stride_h - w.pad_h + i;
            const int col = ow * w.stride_w - w.pad_w + j;
            if (row >= 0 && row < w.height && col >= 0 && col < w.width)
              image[(c * w.height + row) * w.width + col] += *columns;
          }
}

void count_images(benchmark::State& state, const convolution_case& c) {
  state.counters["images/s"] =
      benchmark::Counter(c.batch, benchmark::Counter::kIsIterationInvariantRate);
}

// Per image n: forward y_n = W cols(x_n); backward dW += dy_n cols(x_n)^T (the columns unfolded
// again, as a layer that keeps one image's columns must), dx_n = col2im(W^T dy_n).
void convolution_through_cpu_ops(benchmark::State& state, const convolution_case& c) {
  convolution_tensors t(c);
  const auto& kernels = cpu_ops();
  const window2d& w = c.window;
  const int rows = static_cast<int>(w.column_rows());
  const int positions = static_cast<int>(w.output_positions());
  const std::size_t out_size = static_cast<std::size_t>(c.filters) * w.output_positions();
  for (auto _ : state) {
    for (std::size_t n = 0; n < static_cast<std::size_t>(c.batch); ++n) {
      kernels.im2col(t.x.data() + n * w.image_size(), 1, w, t.columns.data());
      kernels.gemm(transpose::no, transpose::no, c.filters, positions, rows, 1.0f, t.weights.data(),
                   rows, t.columns.data(), positions, 0.0f, t.y.data() + n * out_size, positions);
    }
    for (std::size_t n = 0; n < static_cast<std::size_t>(c.batch); ++n) {
      const float* dy = t.dy.data() + n * out_size;
      kernels.im2col(t.x.data() + n * w.image_size(), 1, w, t.columns.data());
      kernels.gemm(transpose::no, transpose::yes, c.filters, rows, positions, 1.0f, dy, positions,
                   t.columns.data(), positions, n == 0 ? 0.0f : 1.0f, t.weight_grad.data(), rows);
      kernels.gemm(transpose::yes, transpose::no, rows, positions, c.filters, 1.0f,
                   t.weights.data(), rows, dy, positions, 0.0f, t.column_grad.data(), positions);
      kernels.col2im(t.column_grad.data(), 1, w, t.dx.data() + n * w.image_size());
    }
    benchmark::ClobberMemory();
  }
  count_images(state, c);
}

// The same sequence with the plain loops and cblas_sgemm called directly.
void convolution_through_plain_loops(benchmark::State& state, const convolution_case& c) {
  convolution_tensors t(c);
  const window2d& w = c.window;
  const int rows = static_cast<int>(w.column_rows());
  const int positions = static_cast<int>(w.output_positions());
  const std::size_t out_size = static_cast<std::size_t>(c.filters) * w.output_positions();
  for (auto _ : state) {
    for (std::size_t n = 0; n < static_cast<std::size_t>(c.batch); ++n) {
      plain_im2col(t.x.data() + n * w.image_size(), w, t.columns.data());
      cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, c.filters, positions, rows, 1.0f,
                  t.weights.data(), rows, t.columns.data(), positions, 0.0f,
                  t.y.data() + n * out_size, positions);
    }
    for (std::size_t n = 0; n < static_cast<std::size_t>(c.batch); ++n) {
      const float* dy = t.dy.data() + n * out_size;
      plain_im2col(t.x.data() + n * w.image_size(), w, t.columns.data());
      cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, c.filters, rows, positions, 1.0f, dy,
                  positions, t.columns.data(), positions, n == 0 ? 0.0f : 1.0f,
                  t.weight_grad.data(), rows);
      cblas_sgemm(CblasRowMajor, CblasTrans, CblasNoTrans, rows, positions, c.filters, 1.0f,
                  t.weights.data(), rows, dy, positions, 0.0f, t.column_grad.data(), positions);
      plain_col2im(t.column_grad.data(), w, t.dx.data() + n * w.image_size());
    }
    benchmark::ClobberMemory();
  }
  count_images(state, c);
}

// ---- optimizer steps ----------------------------------------------------------------------------

// AdamW's step against SGD's over the same parameters and gradients, each through cpu_ops(): what
// train.optimizer = adamw costs a worker per step. The state's values stay finite over any number
// of steps (a learning rate of 1e-6; the gradients are the arena's ones).
struct optimizer_case {
  std::size_t floats;
  std::string name() const { return "n" + std::to_string(floats); }
};

constexpr std::size_t largest_optimizer_case = large_floats / 4;

std::vector<optimizer_case> optimizer_cases() {
  return {{mlp_parameter_count}, {largest_optimizer_case}};
}

// Parameters, gradients, and two floats of state for each: written once, before any timing.
std::vector<float>& optimizer_arena() {
  static std::vector<float> arena(4 * largest_optimizer_case, 1.0f);
  return arena;
}

void optimizer_benchmark(benchmark::State& state, const optimizer_case& c, bool adamw) {
  float* arena = optimizer_arena().data();
  float* params = arena;
  const float* grads = arena + c.floats;
  float* optimizer_state = arena + 2 * c.floats;
  const auto& kernels = cpu_ops();
  std::uint64_t step = 0;
  for (auto _ : state) {
    if (adamw)
      kernels.adam_step(params, grads, optimizer_state, c.floats,
                        {1e-6f, 0.9f, 0.999f, 1e-8f, 0.0f}, ++step);
    else
      kernels.sgd_step(params, grads, optimizer_state, c.floats, {1e-6f, 0.9f, 0.0f});
    benchmark::ClobberMemory();
  }
  state.counters["params/s"] = benchmark::Counter(static_cast<double>(c.floats),
                                                  benchmark::Counter::kIsIterationInvariantRate);
}

// ---- the ratio table ----------------------------------------------------------------------------

// Google Benchmark's console table, plus a copy of every median (or, with one repetition, of the
// single run) so the ratios can be printed once everything has run.
class median_collector : public benchmark::ConsoleReporter {
public:
  median_collector() : ConsoleReporter(OO_Tabular) {}

  void ReportRuns(const std::vector<Run>& runs) override {
    ConsoleReporter::ReportRuns(runs);
    for (const Run& run : runs) {
      if (run.error_occurred)
        continue;
      const std::string& name = run.run_name.function_name;
      const bool median_of_repetitions =
          run.run_type == Run::RT_Aggregate && run.aggregate_name == "median";
      const bool only_run = run.run_type == Run::RT_Iteration && run.repetitions <= 1;
      if (median_of_repetitions || only_run)
        medians_[name] = run.counters;
    }
  }

  // The median of counter in benchmark name, or 0 when that benchmark did not run (a filter).
  double median(const std::string& name, const std::string& counter) const {
    const auto found = medians_.find(name);
    if (found == medians_.end())
      return 0.0;
    const auto value = found->second.find(counter);
    return value == found->second.end() ? 0.0 : value->second.value;
  }

private:
  std::map<std::string, benchmark::UserCounters> medians_;
};

double ratio(double kernel, double baseline) {
  return baseline > 0.0 ? kernel / baseline : 0.0;
}

void print_ratios(const median_collector& results) {
  std::printf("\nRatios of medians (kernel layer / baseline), same process. 0 = not run.\n");
  std::printf("\n%-22s %14s %14s %7s\n", "GEMM shape (m n k)", "cpu_ops GF/s", "cblas GF/s",
              "ratio");
  for (const gemm_shape& s : gemm_shapes()) {
    const double layer = results.median("gemm/cpu_ops/" + s.name, "GFLOP/s");
    const double bare = results.median("gemm/cblas/" + s.name, "GFLOP/s");
    std::printf("%-22s %14.1f %14.1f %7.3f   (%d %d %d)\n", s.name.c_str(), layer, bare,
                ratio(layer, bare), s.m, s.n, s.k);
  }
  std::printf("\n%-18s %14s %14s %14s %9s %9s\n", "weighted sum", "out GB/s", "in-place GB/s",
              "memcpy GB/s", "out/mcpy", "inpl/mcpy");
  for (const reduction_case& c : reduction_cases()) {
    const double separate = results.median("weighted_sum/" + c.name(), "GB/s");
    const double in_place = results.median("weighted_sum_in_place/" + c.name(), "GB/s");
    const double copy = results.median("memcpy/" + c.name(), "GB/s");
    std::printf("%-18s %14.2f %14.2f %14.2f %9.3f %9.3f\n", c.name().c_str(), separate, in_place,
                copy, ratio(separate, copy), ratio(in_place, copy));
  }
  std::printf("\nGB/s counts (k reads + 1 write) * n * 4 bytes for a weighted sum and 2 * bytes "
              "copied for memcpy,\nat equal bytes moved. \"out\" writes a separate buffer, "
              "\"in-place\" writes into inputs[0].\n");
  std::printf("\n%-28s %14s %14s %7s\n", "conv forward + backward", "cpu_ops img/s", "plain img/s",
              "ratio");
  for (const convolution_case& c : convolution_cases()) {
    const double layer = results.median("conv/cpu_ops/" + c.name, "images/s");
    const double plain = results.median("conv/plain/" + c.name, "images/s");
    std::printf("%-28s %14.1f %14.1f %7.3f\n", c.name.c_str(), layer, plain, ratio(layer, plain));
  }
  std::printf(
      "\nA convolution step per image: im2col, GEMM (forward); im2col, GEMM for dW, GEMM and "
      "col2im for dx.\n");
  std::printf("\n%-28s %14s %14s %7s\n", "optimizer step", "adamw Mparam/s", "sgd Mparam/s",
              "ratio");
  for (const optimizer_case& c : optimizer_cases()) {
    const double adamw = results.median("optimizer/adamw/" + c.name(), "params/s") * 1e-6;
    const double sgd = results.median("optimizer/sgd/" + c.name(), "params/s") * 1e-6;
    std::printf("%-28s %14.1f %14.1f %7.3f\n", c.name().c_str(), adamw, sgd, ratio(adamw, sgd));
  }
}

// Real time, not CPU time: OpenBLAS computes in threads of its own, which the CPU time of the
// benchmark thread would leave out.
void register_benchmarks() {
  for (const gemm_shape& s : gemm_shapes()) {
    benchmark::RegisterBenchmark(("gemm/cpu_ops/" + s.name).c_str(), gemm_through_cpu_ops, s)
        ->UseRealTime();
    benchmark::RegisterBenchmark(("gemm/cblas/" + s.name).c_str(), gemm_through_bare_cblas, s)
        ->UseRealTime();
  }
  for (const convolution_case& c : convolution_cases()) {
    benchmark::RegisterBenchmark(("conv/cpu_ops/" + c.name).c_str(), convolution_through_cpu_ops, c)
        ->UseRealTime();
    benchmark::RegisterBenchmark(("conv/plain/" + c.name).c_str(), convolution_through_plain_loops,
                                 c)
        ->UseRealTime();
  }
  for (const reduction_case& c : reduction_cases()) {
    benchmark::RegisterBenchmark(("weighted_sum/" + c.name()).c_str(), weighted_sum_benchmark, c,
                                 false)
        ->UseRealTime();
    benchmark::RegisterBenchmark(("weighted_sum_in_place/" + c.name()).c_str(),
                                 weighted_sum_benchmark, c, true)
        ->UseRealTime();
    benchmark::RegisterBenchmark(("memcpy/" + c.name()).c_str(), memcpy_benchmark, c)
        ->UseRealTime();
  }
  for (const optimizer_case& c : optimizer_cases()) {
    benchmark::RegisterBenchmark(("optimizer/adamw/" + c.name()).c_str(), optimizer_benchmark, c,
                                 true)
        ->UseRealTime();
    benchmark::RegisterBenchmark(("optimizer/sgd/" + c.name()).c_str(), optimizer_benchmark, c,
                                 false)
        ->UseRealTime();
  }
}

// Whether cpu_ops' target_clones resolvers pick the AVX2+FMA clone on this machine.
bool runs_x86_64_v3_clone() {
  __builtin_cpu_init();
#if defined(__clang__)
  // clang (clang-tidy) knows no "x86-64-v3" here; these are the level's vector features.
  return __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma");
#else
  return __builtin_cpu_supports("x86-64-v3"); // the resolver's own test
#endif
}

} // namespace

int main(int argc, char** argv) {
  // Our defaults come first so that flags given on the command line, parsed later, win.
  // The warm-up wakes OpenBLAS's threads and the caches before the first timed repetition.
  std::vector<std::string> arguments{argv[0], "--benchmark_repetitions=5",
                                     "--benchmark_min_time=0.1", "--benchmark_min_warmup_time=0.05",
                                     "--benchmark_report_aggregates_only=true"};
  for (int i = 1; i < argc; ++i) {
    const std::string argument = argv[i];
    if (argument == "--quick") {
      arguments.emplace_back("--benchmark_repetitions=3");
      arguments.emplace_back("--benchmark_min_time=0.02");
      arguments.emplace_back("--benchmark_min_warmup_time=0.02");
    } else if (argument.rfind("--blas_threads=", 0) == 0) {
      herd::kernels::set_blas_threads(std::stoi(argument.substr(std::strlen("--blas_threads="))));
    } else {
      arguments.push_back(argument);
    }
  }
  std::vector<char*> pointers;
  pointers.reserve(arguments.size());
  for (std::string& argument : arguments)
    pointers.push_back(argument.data());
  int count = static_cast<int>(pointers.size());
  benchmark::Initialize(&count, pointers.data());
  if (benchmark::ReportUnrecognizedArguments(count, pointers.data()))
    return 1;

  std::printf("OpenBLAS threads: %d. Elementwise kernels: %s clone.\n",
              herd::kernels::blas_threads(),
              runs_x86_64_v3_clone() ? "AVX2+FMA (x86-64-v3)" : "baseline x86-64 (default)");

  // Every buffer is allocated and written here, before the first benchmark starts its clock.
  shared_gemm_operands();
  reduction_arena();
  optimizer_arena();
  register_benchmarks();
  median_collector results;
  benchmark::RunSpecifiedBenchmarks(&results);
  print_ratios(results);
  benchmark::Shutdown();
  return 0;
}
