// Herd's straggler metrics; see training_metrics.hpp.
#include "monitoring/training_metrics.hpp"

#include <algorithm>

namespace herd::monitoring {

namespace {

// 100 us .. about 52 s: a step of a small MLP on a CPU up to a large model's step on a slow VM.
bucket_boundaries seconds_buckets() {
  return histogram::exponential_buckets(1e-4, 2.0, 20);
}

} // namespace

training_metrics::training_metrics(std::shared_ptr<registry> shared, identity who)
    : registry_(std::move(shared)), who_(std::move(who)),
      stragglers_(who_.workers, who_.window_seconds) {
  try {
    add_series();
  } catch (...) { // a family of the same name and another type or labels: none of ours stay
    close();
    throw;
  }
}

void training_metrics::add_series() {
  auto& metrics = *registry_;
  const labels job{{"job", who_.job}};
  step_seconds_family_ = &kept(
      metrics.add_histogram("herd_worker_step_seconds",
                            "Local compute time of a worker's step (injected delays included)"));
  wait_seconds_family_ = &kept(metrics.add_histogram(
      "herd_worker_wait_seconds", "Idle time of a worker between the end of a step and the next"));
  lag_family_ =
      &kept(metrics.add_gauge("herd_worker_lag_steps", "Steps a worker is behind the fastest"));
  score_family_ = &kept(metrics.add_gauge(
      "herd_worker_straggler_score",
      "A worker's recent typical step time (mean of the middle half), or a hung step's time so "
      "far, over the median of the other live workers' (1 = typical)"));
  samples_family_ = &kept(metrics.add_counter(
      "herd_samples_total",
      "Samples a worker has computed gradients on (late ones a round discarded included)"));
  late_steps_family_ = &kept(metrics.add_counter(
      "herd_worker_late_steps_total",
      "Steps a worker finished after their round had closed (under late-gradients = discard, "
      "computed for nothing)"));
  samples_applied_ = &kept(metrics.add_counter("herd_samples_applied_total",
                                               "Samples whose gradients (or models) finished "
                                               "rounds applied: the run's progress in epochs"))
                          .add(job);
  up_family_ =
      &kept(metrics.add_gauge("herd_worker_up", "1 while a worker is live, 0 once it is lost"));
  for (int worker = 0; worker < who_.workers; ++worker) {
    const auto index = static_cast<std::size_t>(worker);
    workers_.push_back(series_for(
        worker, index < who_.worker_nodes.size() ? who_.worker_nodes[index] : who_.node));
  }
  arrival_skew_ =
      &kept(metrics.add_histogram("herd_round_arrival_skew_seconds",
                                  "Last minus first fresh arrival among a round's contributors"))
           .add({{"job", who_.job}, {"algorithm", who_.algorithm}}, seconds_buckets());
  imbalance_family_ =
      &kept(metrics.add_gauge("herd_imbalance_ratio", "The highest straggler score"));
  auto& contributions = kept(metrics.add_counter(
      "herd_contributions_total", "Contributions to finished rounds by kind: fresh, stale, none"));
  fresh_ = &contributions.add({{"job", who_.job}, {"kind", "fresh"}});
  stale_ = &contributions.add({{"job", who_.job}, {"kind", "stale"}});
  none_ = &contributions.add({{"job", who_.job}, {"kind", "none"}});
  staleness_ = &kept(metrics.add_histogram(
                         "herd_staleness_steps",
                         "Staleness of contributions: rounds between the parameters a gradient "
                         "was computed on and its round, or (preduce) model versions behind the "
                         "group's freshest member"))
                    .add(job, bucket_boundaries{0, 1, 2, 3, 4, 6, 8, 12, 16, 24, 32, 64, 128, 256,
                                                512, 1024});
  isolation_interventions_ =
      &kept(metrics.add_counter(
                "herd_isolation_interventions_total",
                "Groups preduce's isolation guard built across disconnected workers"))
           .add({{"job", who_.job}, {"algorithm", who_.algorithm}});
  rounds_missing_members_ =
      &kept(metrics.add_counter(
                "herd_rounds_missing_members_total",
                "Rounds that completed without some of their members (timed out or lost)"))
           .add({{"job", who_.job}, {"algorithm", who_.algorithm}});
  rounds_aborted_ =
      &kept(metrics.add_counter(
                "herd_rounds_aborted_total",
                "Rounds aborted: their members skipped them (a node lost while reducing, "
                "a failed data plane, a refused peer)"))
           .add({{"job", who_.job}, {"algorithm", who_.algorithm}});
  rekeys_ =
      &kept(metrics.add_counter("herd_data_plane_rekeys_total",
                                "Re-keys of the data plane begun because a node refused a peer's "
                                "messages"))
           .add(job);
  worker_losses_ =
      &kept(metrics.add_counter("herd_worker_losses_total",
                                "Workers lost (their node gone, paused past the timeout, or left)"))
           .add(job);
  worker_joins_ = &kept(metrics.add_counter("herd_worker_joins_total",
                                            "Lost workers' slots a joining node took over"))
                       .add(job);
  compared_waited_ =
      &kept(metrics.add_counter("herd_waited_seconds_total",
                                "Idle time of all workers after the steps every live worker has "
                                "finished (the steps herd_barrier_wait_seconds_total covers)"))
           .add(job);
  compared_barrier_ =
      &kept(metrics.add_counter("herd_barrier_wait_seconds_total",
                                "Idle time a synchronous barrier would have imposed on all "
                                "workers on the same steps: the slowest's compute minus each's"))
           .add(job);
  compared_steps_ =
      &kept(metrics.add_counter("herd_compared_steps_total",
                                "Step numbers every live worker has finished: those compared "
                                "against a barrier"))
           .add(job);
  group_size_ = &kept(metrics.add_histogram("herd_group_size", "Members per group"))
                     .add(job, bucket_boundaries{1, 2, 3, 4, 6, 8, 12, 16, 24, 32, 64, 128, 256});
  auto& rounds = kept(metrics.add_counter(
      "herd_rounds_total", "Finished rounds by algorithm and kind: partial, full_sync"));
  partial_rounds_ =
      &rounds.add({{"job", who_.job}, {"algorithm", who_.algorithm}, {"kind", "partial"}});
  full_sync_rounds_ =
      &rounds.add({{"job", who_.job}, {"algorithm", who_.algorithm}, {"kind", "full_sync"}});
  // From 10 us (in one process) to 42 s, past cluster.data-timeout-ms's default 30 s: a
  // reduction near its timeout lands in a bucket of its own, not in +Inf.
  reduce_seconds_ =
      &kept(metrics.add_histogram("herd_reduce_seconds", "Data-plane time of a round"))
           .add(job, histogram::exponential_buckets(1e-5, 2.0, 23));
  reduce_bytes_ = &kept(metrics.add_counter("herd_reduce_bytes_total",
                                            "Bytes the data plane read and wrote for reductions"))
                       .add(job);
  train_loss_family_ =
      &kept(metrics.add_gauge("herd_train_loss", "Mean training loss of recent local steps"));
  test_accuracy_family_ =
      &kept(metrics.add_gauge("herd_test_accuracy", "Test accuracy of the latest evaluation"));
  validation_accuracy_family_ = &kept(metrics.add_gauge(
      "herd_validation_accuracy", "Validation accuracy of the latest evaluation (with a "
                                  "validation set, which the evaluations then measure)"));
  learning_rate_family_ = &kept(
      metrics.add_gauge("herd_learning_rate",
                        "Learning rate an update begun now would get: train.lr (under async "
                        "the parameter server's rate) times its schedule's factor at the run's "
                        "epochs"));
}

gauge& training_metrics::score_of(int worker) {
  auto& record = workers_.at(static_cast<std::size_t>(worker));
  if (record.straggler_score == nullptr)
    record.straggler_score = &score_family_->add(
        {{"job", who_.job}, {"node", record.node}, {"worker", std::to_string(worker)}});
  return *record.straggler_score;
}

gauge& training_metrics::first_set(family<gauge>& family, gauge*& series) {
  if (series == nullptr)
    series = &family.add({{"job", who_.job}});
  return *series;
}

void training_metrics::step_finished(int worker, std::uint64_t step, double now_seconds,
                                     double compute_seconds, double idle_seconds,
                                     std::uint32_t samples, bool late) {
  if (closed_)
    return;
  auto& record = workers_.at(static_cast<std::size_t>(worker));
  record.step_seconds->observe(compute_seconds);
  if (step > 1) // the first step had nothing to wait for
    record.wait_seconds->observe(idle_seconds);
  record.samples->increment(samples);
  if (late)
    record.late_steps->increment();
  record.steps = std::max(record.steps, step);
  stepped_ = true;
  stragglers_.step_finished(worker, now_seconds, compute_seconds, late);
}

void training_metrics::round_finished(const round_record& round) {
  if (closed_)
    return;
  for (const std::int32_t member : round.answered)
    if (member >= 0 && member < who_.workers)
      stragglers_.result_applied(member, round.finished_seconds);
  (round.full_sync ? full_sync_rounds_ : partial_rounds_)->increment();
  fresh_->increment(static_cast<double>(round.fresh));
  stale_->increment(static_cast<double>(round.stale));
  none_->increment(static_cast<double>(round.none));
  if (round.missing > 0)
    rounds_missing_members_->increment();
  group_size_->observe(static_cast<double>(round.members));
  for (std::uint64_t rounds : round.staleness_rounds)
    staleness_->observe(static_cast<double>(rounds));
  if (!round.fresh_arrival_seconds.empty()) {
    const auto [first, last] =
        std::minmax_element(round.fresh_arrival_seconds.begin(), round.fresh_arrival_seconds.end());
    arrival_skew_->observe(*last - *first);
  }
  reduce_seconds_->observe(round.reduce_seconds);
  reduce_bytes_->increment(static_cast<double>(round.reduce_bytes));
  samples_applied_->increment(static_cast<double>(round.samples));
}

void training_metrics::isolation_intervention() {
  if (closed_)
    return;
  isolation_interventions_->increment();
}

void training_metrics::round_aborted() {
  if (closed_)
    return;
  rounds_aborted_->increment();
}

void training_metrics::data_plane_rekeyed() {
  if (closed_)
    return;
  rekeys_->increment();
}

void training_metrics::worker_lost(int worker) {
  if (closed_)
    return;
  auto& record = workers_.at(static_cast<std::size_t>(worker));
  record.live = false;
  record.up->set(0.0);
  // Its lag and score end: a 0 would read as the front runner and the fastest worker.
  const labels mine{{"job", who_.job}, {"node", record.node}, {"worker", std::to_string(worker)}};
  lag_family_->remove(mine);
  record.lag_steps = nullptr;
  if (record.straggler_score != nullptr)
    score_family_->remove(mine);
  record.straggler_score = nullptr;
  stragglers_.worker_lost(worker);
  worker_losses_->increment();
}

std::uint64_t training_metrics::front_steps() const {
  std::uint64_t fastest = 0;
  for (const auto& record : workers_)
    if (record.live)
      fastest = std::max(fastest, record.steps);
  return fastest;
}

void training_metrics::resumed_steps(int worker, std::uint64_t steps) {
  auto& record = workers_.at(static_cast<std::size_t>(worker));
  record.steps = std::max(record.steps, steps);
}

void training_metrics::barrier_comparison(double waited_seconds, double barrier_seconds,
                                          std::uint64_t steps_compared) {
  if (closed_)
    return;
  // Totals only grow (a lost worker's settled steps stay counted); a smaller one adds nothing.
  compared_waited_->increment(std::max(0.0, waited_seconds - compared_.waited));
  compared_barrier_->increment(std::max(0.0, barrier_seconds - compared_.barrier));
  if (steps_compared > compared_.steps)
    compared_steps_->increment(static_cast<double>(steps_compared - compared_.steps));
  resumed_comparison(waited_seconds, barrier_seconds, steps_compared);
}

void training_metrics::resumed_comparison(double waited_seconds, double barrier_seconds,
                                          std::uint64_t steps_compared) {
  compared_.waited = std::max(compared_.waited, waited_seconds);
  compared_.barrier = std::max(compared_.barrier, barrier_seconds);
  compared_.steps = std::max(compared_.steps, steps_compared);
}

training_metrics::per_worker training_metrics::series_for(int worker, const std::string& node) {
  const labels mine{{"job", who_.job}, {"node", node}, {"worker", std::to_string(worker)}};
  per_worker record;
  record.step_seconds = &step_seconds_family_->add(mine, seconds_buckets());
  record.wait_seconds = &wait_seconds_family_->add(mine, seconds_buckets());
  record.lag_steps = &lag_family_->add(mine);
  // The score's series comes with its first value (score_of): until then it would read 0, under
  // the 1 of a typical worker.
  record.samples = &samples_family_->add(mine);
  record.late_steps = &late_steps_family_->add(mine);
  record.up = &up_family_->add(mine);
  record.up->set(1.0);
  record.node = node;
  return record;
}

void training_metrics::worker_joined(int worker, const std::string& node) {
  if (closed_)
    return;
  auto& record = workers_.at(static_cast<std::size_t>(worker));
  const auto old_node = record.node;
  // It takes a live peer's parameters and step count: its lag starts from the front, not from
  // the run's whole step count.
  const auto front = front_steps();
  record = series_for(worker, node);
  record.steps = front;
  // The slot's series under the node it left end: herd_worker_up 0 there would keep an alert
  // firing for a worker that is live again.
  if (old_node != node) {
    const labels old{{"job", who_.job}, {"node", old_node}, {"worker", std::to_string(worker)}};
    step_seconds_family_->remove(old);
    wait_seconds_family_->remove(old);
    lag_family_->remove(old);
    score_family_->remove(old);
    samples_family_->remove(old);
    late_steps_family_->remove(old);
    up_family_->remove(old);
  }
  stragglers_.worker_joined(worker);
  worker_joins_->increment();
}

void training_metrics::close() {
  if (closed_)
    return;
  closed_ = true;
  straggler_.reset();
  for (auto* family : families_)
    family->remove_where("job", who_.job);
}

void training_metrics::train_loss(double loss) {
  if (closed_ || !stepped_) // before any step the recent loss is no loss
    return;
  first_set(*train_loss_family_, train_loss_).set(loss);
}

void training_metrics::test_accuracy(double accuracy) {
  if (closed_)
    return;
  first_set(*test_accuracy_family_, test_accuracy_).set(accuracy);
}

void training_metrics::validation_accuracy(double accuracy) {
  if (closed_)
    return;
  first_set(*validation_accuracy_family_, validation_accuracy_).set(accuracy);
}

void training_metrics::learning_rate(double rate) {
  if (closed_)
    return;
  first_set(*learning_rate_family_, learning_rate_).set(rate);
}

void training_metrics::checkpoints_on(double every_seconds, double now_seconds) {
  if (closed_ || checkpoints_written_ != nullptr)
    return;
  const labels job{{"job", who_.job}};
  checkpoints_written_ = &kept(registry_->add_counter("herd_checkpoints_written_total",
                                                      "Checkpoints written (periodic and final)"))
                              .add(job);
  checkpoint_failures_ =
      &kept(registry_->add_counter("herd_checkpoint_failures_total",
                                   "Checkpoints not taken (a worker lost, a node that did not "
                                   "answer) or not written (a full or read-only disk)"))
           .add(job);
  unsaved_seconds_ =
      &kept(registry_->add_gauge("herd_unsaved_training_seconds",
                                 "Training since the state the newest checkpoint holds (or since "
                                 "the run started or resumed): what a crash now would lose"))
           .add(job);
  checkpoint_pause_ = &kept(registry_->add_gauge("herd_checkpoint_pause_seconds",
                                                 "Training held for the newest checkpoint written"))
                           .add(job);
  kept(registry_->add_gauge("herd_checkpoint_interval_seconds",
                            "checkpoint.every-seconds: training between periodic checkpoints (0: "
                            "by rounds only)"))
      .add(job)
      .set(every_seconds);
  saved_at_ = now_seconds;
  unsaved_seconds_->set(0.0);
}

void training_metrics::checkpoint_written(double state_seconds, double pause_seconds) {
  if (closed_ || checkpoints_written_ == nullptr)
    return;
  checkpoints_written_->increment();
  checkpoint_pause_->set(pause_seconds);
  saved_at_ = std::max(saved_at_, state_seconds);
}

void training_metrics::checkpoint_failed() {
  if (!closed_ && checkpoint_failures_ != nullptr)
    checkpoint_failures_->increment();
}

void training_metrics::refresh(double now_seconds) {
  if (closed_)
    return;
  if (unsaved_seconds_ != nullptr)
    unsaved_seconds_->set(std::max(0.0, now_seconds - saved_at_));
  const auto fastest = front_steps();
  for (auto& record : workers_)
    if (record.live)
      record.lag_steps->set(static_cast<double>(fastest - record.steps));
  const auto scores = stragglers_.compute(now_seconds);
  straggler_.reset();
  for (std::size_t i = 0; i < workers_.size(); ++i) {
    if (!workers_[i].live || !scores.score[i])
      continue;
    score_of(static_cast<int>(i)).set(*scores.score[i]);
    if (!straggler_ || *scores.score[i] > straggler_->score)
      straggler_ = slowest_worker{static_cast<int>(i), *scores.score[i]};
  }
  if (scores.imbalance_ratio)
    first_set(*imbalance_family_, imbalance_ratio_).set(*scores.imbalance_ratio);
}

} // namespace herd::monitoring
