// Trains a model written by hand (two_layer_network.hpp) on data made here, with any Herd
// algorithm, against an installed Herd. The data: three interleaved spiral arms in the plane, one
// class each, which no linear model separates, so the accuracy shows the hidden layer learnt.
//
//   custom_model [algorithm] [workers]     e.g. custom_model preduce 4   (default: solo 4)
//
// Prints progress and the final test accuracy; exits 1 below 90% (2 on a bad argument or setting).
#include "herd/config.hpp"
#include "herd/dataset_sources.hpp"
#include "herd/job.hpp"
#include "two_layer_network.hpp"

#include <cmath>
#include <cstdio>
#include <exception>
#include <memory>
#include <random>
#include <string>
#include <vector>

namespace {

constexpr int spiral_arms = 3; // the classes
constexpr double required_accuracy = 0.9;
constexpr double pi = 3.14159265358979323846;

// Point i of a spiral set of `count`: arm i % 3, a radius growing along the arm, an angle that
// turns about 1.25 times from the centre outwards, plus Gaussian noise of 0.2 radians.
std::int32_t spiral_point(std::size_t index, std::size_t count, std::mt19937_64& noise,
                          float* xy) {
  const auto arm = static_cast<std::int32_t>(index % spiral_arms);
  const double along = static_cast<double>(index / spiral_arms) /
                       static_cast<double>((count + spiral_arms - 1) / spiral_arms);
  std::normal_distribution<double> jitter(0.0, 0.2);
  const double angle = 2.0 * pi * arm / spiral_arms + along * 8.0 + jitter(noise);
  xy[0] = static_cast<float>(along * std::cos(angle));
  xy[1] = static_cast<float>(along * std::sin(angle));
  return arm;
}

// The training set through the callback source: Herd asks for each sample in turn and writes it
// straight into the dataset's memory.
herd::models::dataset training_spiral(std::size_t count, std::uint64_t seed) {
  std::mt19937_64 noise(seed);
  return herd::models::dataset_from_source(
      count, {2}, spiral_arms,
      [&](std::size_t index, float* xy) { return spiral_point(index, count, noise, xy); },
      "spiral/train");
}

// The test set through the in-memory source: vectors the program already holds.
herd::models::dataset test_spiral(std::size_t count, std::uint64_t seed) {
  std::mt19937_64 noise(seed);
  std::vector<float> points(count * 2);
  std::vector<std::int32_t> labels(count);
  for (std::size_t i = 0; i < count; ++i)
    labels[i] = spiral_point(i, count, noise, points.data() + 2 * i);
  return herd::models::dataset_from_memory(points, labels, {2}, spiral_arms, "spiral/test");
}

// Prints an evaluation as it comes (on the job's thread; keep it short).
void print_evaluation(const herd::actors::evaluation_point& point) {
  std::printf("  round %6llu  epoch %5.1f  test accuracy %.3f  loss %.3f\n",
              static_cast<unsigned long long>(point.round), point.epoch, point.test_accuracy,
              point.test_loss);
  std::fflush(stdout);
}

} // namespace

int main(int argc, char** argv) {
  const std::string algorithm = argc > 1 ? argv[1] : "solo";
  const std::string workers = argc > 2 ? argv[2] : "4";
  try {
    // Only [train] matters here: [model] and [data] describe what `herd train` would build and
    // load, and this program brings its own of both.
    auto config = herd::config::load(
        "", {"--train.algorithm=" + algorithm, "--train.workers=" + workers,
             "--train.batch-size=16", "--train.lr=0.1", "--train.momentum=0.9",
             "--train.weight-decay=0", "--train.epochs=30", "--train.eval-every=400"});
    auto data = std::make_shared<herd::models::train_test_split>();
    data->train = training_spiral(3000, 1);
    data->test = test_spiral(900, 2);

    herd::job_options options;
    options.model = std::make_shared<example::two_layer_network>(2, 64, spiral_arms);
    options.on_evaluation = print_evaluation;
    std::printf("custom_model: %s on %zu spiral points, %s, %s workers\n",
                options.model->describe().c_str(), data->train.size(), algorithm.c_str(),
                workers.c_str());

    const auto job = herd::job::start(config, data, options);
    const auto summary = job->wait();
    const double accuracy = summary.final_test_accuracy.value_or(0.0);
    std::printf("custom_model: %s, %llu rounds in %.1f s, stopped by %s; final test accuracy "
                "%.4f\n",
                algorithm.c_str(), static_cast<unsigned long long>(summary.rounds),
                summary.wall_seconds, herd::actors::to_string(summary.stop_reason), accuracy);
    if (!summary.error.empty())
      std::printf("custom_model: error: %s\n", summary.error.c_str());
    return accuracy >= required_accuracy ? 0 : 1;
  } catch (const std::exception& refused) {
    // invalid_config (a bad algorithm name, say) and the sources' std::invalid_argument say what
    // is wrong in a sentence.
    std::fprintf(stderr, "custom_model: %s\n", refused.what());
    return 2;
  }
}
