// step_book: finished steps kept and booked together reach the run's counters and metrics exactly
// as if each had been booked when it came, and only once booked. No actor system.
#include "actors/step_book.hpp"
#include "monitoring/training_metrics.hpp"

#include <gtest/gtest.h>
#include <memory>
#include <random>
#include <vector>

namespace {

using herd::actors::finished_step;
using herd::actors::run_counters;
using herd::actors::step_book;
using herd::monitoring::training_metrics;

constexpr int workers = 3;

training_metrics::identity three_workers() {
  training_metrics::identity who;
  who.job = "book";
  who.node = "n1";
  who.algorithm = "sync";
  who.workers = workers;
  who.window_seconds = 10.0;
  return who;
}

// A run's books: the counters, and the metrics on a registry of their own.
struct books {
  books() : counters(workers, 64) { counters.set_workers(workers); }
  run_counters counters;
  std::shared_ptr<herd::monitoring::registry> registry =
      std::make_shared<herd::monitoring::registry>();
  training_metrics metrics{registry, three_workers()};

  void step_finished(const finished_step& step) { // as the coordinator did before the book
    counters.step_finished(step.worker, step.step, step.compute_seconds, step.wait_seconds,
                           step.loss, step.samples, step.late);
    metrics.step_finished(step.worker, step.step, step.at_seconds, step.compute_seconds,
                          step.wait_seconds, step.samples, step.late);
  }
};

// 300 steps of three workers, more than the 200 losses the progress line averages, with random
// times and losses (fixed seed), some late.
std::vector<finished_step> steps_of_a_run() {
  std::mt19937 random(42);
  std::uniform_real_distribution<double> seconds(0.001, 0.02);
  std::vector<finished_step> steps;
  double now = 0.0;
  for (std::uint64_t step = 1; step <= 100; ++step)
    for (int worker = 0; worker < workers; ++worker) {
      now += seconds(random);
      finished_step finished;
      finished.worker = worker;
      finished.step = step;
      finished.at_seconds = now;
      finished.compute_seconds = seconds(random) * (worker + 1);
      finished.wait_seconds = seconds(random);
      finished.loss = 2.0 / static_cast<double>(step) + seconds(random);
      finished.samples = 16 + static_cast<std::uint32_t>(worker);
      finished.late = step % 7 == static_cast<std::uint64_t>(worker);
      steps.push_back(finished);
    }
  return steps;
}

herd::actors::run_summary summary_of(const run_counters& counters) {
  return summarize(herd::actors::run_summary{}, counters,
                   herd::actors::evaluation_schedule(herd::actors::evaluation_schedule::settings{}),
                   10.0);
}

TEST(step_book, booked_steps_count_as_if_each_had_been_booked_when_it_came) {
  books direct;
  books batched;
  step_book book(batched.counters, &batched.metrics);
  for (const auto& step : steps_of_a_run()) {
    direct.step_finished(step);
    book.keep(step);
  }
  EXPECT_EQ(book.waiting(), 300u);
  EXPECT_EQ(batched.counters.steps, 0u) << "a kept step was booked before its time";
  book.book();
  EXPECT_EQ(book.waiting(), 0u);

  const auto want = summary_of(direct.counters);
  const auto got = summary_of(batched.counters);
  EXPECT_EQ(got.steps, want.steps);
  EXPECT_EQ(batched.counters.recent_loss(),
            direct.counters.recent_loss()); // the last 200, in order
  EXPECT_EQ(got.waiting.steps_compared, want.waiting.steps_compared);
  EXPECT_EQ(got.waiting.waited_seconds, want.waiting.waited_seconds);
  EXPECT_EQ(got.waiting.barrier_seconds, want.waiting.barrier_seconds);
  ASSERT_EQ(got.per_worker.size(), want.per_worker.size());
  for (std::size_t i = 0; i < want.per_worker.size(); ++i) {
    SCOPED_TRACE("worker " + std::to_string(i));
    const auto& a = got.per_worker[i];
    const auto& b = want.per_worker[i];
    EXPECT_EQ(a.steps, b.steps);
    EXPECT_EQ(a.samples, b.samples);
    EXPECT_EQ(a.late_steps, b.late_steps);
    EXPECT_EQ(a.compute_seconds, b.compute_seconds);
    EXPECT_EQ(a.wait_seconds, b.wait_seconds);
    EXPECT_EQ(a.barrier_wait_seconds, b.barrier_wait_seconds);
    EXPECT_EQ(a.step_seconds.median, b.step_seconds.median);
    EXPECT_EQ(a.step_seconds.max, b.step_seconds.max);
    EXPECT_EQ(a.wait_seconds_per_step.p90, b.wait_seconds_per_step.p90);
  }
  // Every series an operator sees, the straggler scores included: at 11.5 s, the 10 s window
  // holds only the steps that arrived after 1.5 s, about half of them.
  direct.metrics.refresh(11.5);
  batched.metrics.refresh(11.5);
  EXPECT_EQ(herd::monitoring::expose(*batched.registry),
            herd::monitoring::expose(*direct.registry));
}

TEST(step_book, a_full_book_books_itself) {
  books batched;
  step_book book(batched.counters, &batched.metrics);
  finished_step step;
  step.compute_seconds = 0.001;
  for (std::size_t i = 1; i < step_book::capacity; ++i) {
    step.step = i;
    book.keep(step);
  }
  EXPECT_EQ(batched.counters.steps, 0u);
  step.step = step_book::capacity;
  book.keep(step);
  EXPECT_EQ(book.waiting(), 0u);
  EXPECT_EQ(batched.counters.steps, step_book::capacity);
  EXPECT_EQ(batched.counters.workers[0].steps, step_book::capacity);
}

TEST(step_book, books_the_counters_alone_without_metrics) {
  books batched;
  step_book book(batched.counters, nullptr);
  for (const auto& step : steps_of_a_run())
    book.keep(step);
  book.book();
  EXPECT_EQ(batched.counters.steps, 300u);
  EXPECT_EQ(batched.counters.workers[2].samples, 100u * 18u);
}

} // namespace
