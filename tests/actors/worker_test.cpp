// The worker actor on its own, with the test playing coordinator and aggregator: it keeps
// answering while its step runs, and applies round results in round order whatever order they
// arrive in.
#include "actors/checkpoint_messages.hpp"
#include "actors/checkpoint_state.hpp"
#include "actors/messages.hpp"
#include "actors/worker.hpp"
#include "herd/sequential.hpp"
#include "models/optimizer.hpp"

#include <algorithm>
#include <cmath>
#include <functional>
#include <future>
#include <gtest/gtest.h>
#include <map>
#include <mutex>
#include <optional>
#include <random>
#include <string>
#include <vector>

#include "support/delegating_ops.hpp"
#include "support/emulated_stream_ops.hpp"

namespace {

// The mlp preset 12-8-3.
herd::models::model_choice mlp_12_8_3() {
  herd::models::model_choice choice;
  choice.hidden = {8};
  return choice;
}

using namespace herd::actors;
using herd::comm::host_buffer;

// The first training step blocks in its backward pass until the test releases it.
class gated_ops final : public herd::testing::delegating_ops {
public:
  void softmax_xent_backward(const float* probs, const std::int32_t* labels, int rows, int classes,
                             float* dlogits) const override {
    if (!first_call_done_.exchange(true)) {
      entered_.set_value();
      released_.wait();
    }
    base().softmax_xent_backward(probs, labels, rows, classes, dlogits);
  }
  void wait_until_entered() { entered_future_.wait(); }
  void release() { release_.set_value(); }

private:
  mutable std::atomic<bool> first_call_done_{false};
  mutable std::promise<void> entered_;
  std::future<void> entered_future_ = entered_.get_future();
  std::promise<void> release_;
  std::shared_future<void> released_ = release_.get_future().share();
};

// Records the order of a worker's applied rounds and its stop.
class event_probe final : public worker_probe {
public:
  void round_applied(int, std::uint64_t round, const float*, const float*, std::size_t) override {
    const std::lock_guard<std::mutex> lock(mutex_);
    events_.push_back("applied " + std::to_string(round));
  }
  void stopped(int, const float*, std::size_t) override {
    const std::lock_guard<std::mutex> lock(mutex_);
    events_.emplace_back("stopped");
  }
  std::vector<std::string> events() const {
    const std::lock_guard<std::mutex> lock(mutex_);
    return events_;
  }

private:
  mutable std::mutex mutex_;
  std::vector<std::string> events_;
};

// What a WAGMA member made late holds: its initial model, its model right after it applied its
// round's result, and the model its step 1 alone gives.
struct late_member_outcome {
  std::vector<float> initial;
  std::vector<float> applied;
  std::vector<float> fresh;
};

class worker_actor_test : public testing::Test {
protected:
  worker_actor_test() : system_(make_config()) {}

  static caf::actor_system_config& make_config() {
    static caf::actor_system_config config;
    static bool registered = false;
    if (!registered) {
      add_message_types(config);
      registered = true;
    }
    return config;
  }

  worker_setup setup(const herd::kernels::ops& ops) {
    worker_setup result;
    result.index = 0;
    result.model = model_;
    result.train = data_;
    for (std::size_t i = 0; i < 64; ++i)
      result.shard.push_back(i);
    result.batch_size = 16;
    result.optimizer = hyper_;
    result.init_seed = 5;
    result.ops = &ops;
    result.plane = plane_;
    return result;
  }

  void adopt_and_go_through_the_same_states(const struct placement& where);

  // The round of step 1 asks while step 1 runs and gets the stored (initial) model; the round's
  // result averages `members` models into what `average_of` makes of the initial model.
  late_member_outcome
  late_wagma_member(const std::function<std::vector<float>(const std::vector<float>&)>& average_of,
                    std::uint32_t members);

  std::vector<float> snapshot(caf::scoped_actor& self, const caf::actor& worker) {
    std::vector<float> parameters;
    self->request(worker, std::chrono::seconds(10), snapshot_atom::value)
        .receive([&](const parameter_snapshot& snap) { parameters = *snap.parameters; },
                 [&](caf::error& failure) { ADD_FAILURE() << system_.render(failure); });
    return parameters;
  }

  caf::actor_system system_;
  std::shared_ptr<const herd::models::model> model_ =
      herd::models::build_model(mlp_12_8_3(), {12}, 3);
  std::shared_ptr<const herd::models::dataset> data_ =
      std::make_shared<const herd::models::dataset>(
          herd::models::make_synthetic_dataset(64, 12, 3, 1));
  std::shared_ptr<herd::comm::data_plane> plane_ =
      herd::comm::make_local_plane(herd::kernels::cpu_ops());
  herd::models::optimizer_settings hyper_{0.1f, 0.9f, 0.01f};
};

TEST_F(worker_actor_test, answers_messages_while_its_step_runs) {
  gated_ops ops;
  caf::scoped_actor coordinator{system_};
  auto worker = spawn_worker(system_, setup(ops), coordinator);
  coordinator->send(worker, start_atom::value, 1.0f);
  ops.wait_until_entered(); // the step is now blocked inside its backward pass
  const auto parameters = snapshot(coordinator, worker);
  EXPECT_EQ(parameters.size(), model_->parameter_count());
  contribution answer;
  coordinator->request(worker, std::chrono::seconds(10), contribute_atom::value, std::uint64_t{0})
      .receive([&](const contribution& reply) { answer = reply; },
               [&](caf::error& failure) { ADD_FAILURE() << system_.render(failure); });
  EXPECT_EQ(answer.kind, freshness::none); // nothing finished yet
  ops.release();
  std::optional<step_ready> ready;
  coordinator->receive([&](const step_ready& report) { ready = report; },
                       caf::after(std::chrono::seconds(10)) >> [] {});
  ASSERT_TRUE(ready);
  EXPECT_EQ(ready->step, 1u);
  EXPECT_TRUE(ready->late) << "round 0 asked while the step ran, so the gradient missed it";
  // A late worker does not wait for a round: it is computing again. Stop it before `ops` goes,
  // without waiting for the result of round 0, which this test never sends.
  coordinator->request(worker, std::chrono::seconds(10), stop_atom::value, false)
      .receive([](const worker_stopped&) {},
               [&](caf::error& failure) { ADD_FAILURE() << system_.render(failure); });
  coordinator->send_exit(worker, caf::exit_reason::user_shutdown);
}

TEST_F(worker_actor_test, a_late_gradient_goes_with_the_next_contribution_as_stale) {
  gated_ops ops;
  caf::scoped_actor coordinator{system_};
  auto worker = spawn_worker(system_, setup(ops), coordinator);
  coordinator->send(worker, start_atom::value, 1.0f);
  ops.wait_until_entered();
  auto ask = [&](std::uint64_t round) {
    contribution answer;
    coordinator->request(worker, std::chrono::seconds(10), contribute_atom::value, round)
        .receive([&](const contribution& reply) { answer = reply; },
                 [&](caf::error& failure) { ADD_FAILURE() << system_.render(failure); });
    return answer;
  };
  EXPECT_EQ(ask(0).kind, freshness::none);
  ops.release();
  coordinator->receive([](const step_ready&) {}, caf::after(std::chrono::seconds(10)) >>
                                                     [] { ADD_FAILURE() << "no step_ready"; });
  // Round 0 is done (its result arrives), round 1 asks: the late gradient of step 1 goes now.
  coordinator->send(
      worker, round_result{0, host_buffer(std::vector<float>(model_->parameter_count(), 0.0f)), 1});
  const auto second = ask(1);
  EXPECT_NE(second.kind, freshness::none);
  EXPECT_GE(second.samples, 16u) << "at least step 1's batch is behind it";
  // Round 1's result never comes here: a stop that does not wait for it.
  coordinator->request(worker, std::chrono::seconds(10), stop_atom::value, false)
      .receive([](const worker_stopped&) {},
               [&](caf::error& failure) { ADD_FAILURE() << system_.render(failure); });
  coordinator->send_exit(worker, caf::exit_reason::user_shutdown);
}

// The answer to stop is the worker's last use of what it borrowed: a result that arrived while
// the step ran is applied before it, and the owner may then destroy the ops.
TEST_F(worker_actor_test, a_stop_during_a_step_answers_after_applying_the_results_that_arrived) {
  gated_ops ops;
  auto probe = std::make_shared<event_probe>();
  auto worker_config = setup(ops);
  worker_config.probe = probe;
  caf::scoped_actor coordinator{system_};
  auto worker = spawn_worker(system_, worker_config, coordinator);
  coordinator->send(worker, start_atom::value, 1.0f);
  ops.wait_until_entered();
  coordinator->request(worker, std::chrono::seconds(10), contribute_atom::value, std::uint64_t{0})
      .receive([](const contribution& reply) { EXPECT_EQ(reply.kind, freshness::none); },
               [&](caf::error& failure) { ADD_FAILURE() << system_.render(failure); });
  coordinator->send(
      worker, round_result{0, host_buffer(std::vector<float>(model_->parameter_count(), 0.0f)), 1});
  auto stopped = coordinator->request(worker, std::chrono::seconds(10), stop_atom::value);
  ops.release();
  stopped.receive([](const worker_stopped& report) { EXPECT_EQ(report.steps, 1u); },
                  [&](caf::error& failure) { ADD_FAILURE() << system_.render(failure); });
  EXPECT_EQ(probe->events(), (std::vector<std::string>{"applied 0", "stopped"}));
  coordinator->send_exit(worker, caf::exit_reason::user_shutdown);
}

// Across processes the step reports go through the node's relay (two hops to the coordinator)
// while a checkpoint's answer goes straight back to the node: an answer that overtook the report of
// the step it holds left the checkpoint without that arrival, and a run resumed from it waited
// for the arrival forever. The answer waits until the relay has passed the reports on.
TEST_F(worker_actor_test,
       a_relayed_worker_answers_a_checkpoint_once_its_relay_passed_its_reports_on) {
  gated_ops ops;
  auto worker_config = setup(ops);
  worker_config.relayed_reports = true;
  caf::scoped_actor relay{system_};
  auto worker = spawn_worker(system_, worker_config, relay);
  relay->send(worker, start_atom::value, 1.0f);
  ops.wait_until_entered();
  caf::scoped_actor node{system_};
  node->send(worker, checkpoint_atom::value); // its answer comes back as a message
  ops.release();
  relay->receive([](const step_ready&) {},
                 caf::after(std::chrono::seconds(10)) >> [] { ADD_FAILURE() << "no step_ready"; });
  std::optional<caf::response_promise> flush;
  relay->receive([&](flush_atom) { flush = relay->make_response_promise(); },
                 caf::after(std::chrono::seconds(10)) >> [] {});
  ASSERT_TRUE(flush) << "the worker did not ask its relay to flush";
  bool answered = false;
  node->receive([&](const worker_checkpoint&) { answered = true; },
                caf::after(std::chrono::milliseconds(300)) >> [] {});
  EXPECT_FALSE(answered) << "the checkpoint was answered before the relay passed the report on";
  flush->deliver(caf::unit);
  node->receive(
      [&](const worker_checkpoint& saved) {
        answered = true;
        EXPECT_EQ(saved.record->buffer.steps(), 1u);
      },
      caf::after(std::chrono::seconds(10)) >> [] {});
  EXPECT_TRUE(answered) << "no checkpoint once the relay had flushed";
  node->request(worker, std::chrono::seconds(10), stop_atom::value, false)
      .receive([](const worker_stopped&) {},
               [&](caf::error& failure) { ADD_FAILURE() << system_.render(failure); });
  node->send_exit(worker, caf::exit_reason::user_shutdown);
}

// Across processes a round's result reaches the worker through its node, and the coordinator's
// stop can overtake it. The stop is answered once the result is applied, so the final evaluation
// (which follows the stop) sees the last round: sealed and clear runs of one sync job ended at
// different accuracies when it did not. A stop that does not settle (the coordinator abandoned
// rounds that will deliver nothing) is answered at once.
TEST_F(worker_actor_test, a_stop_that_overtakes_a_rounds_result_is_answered_once_it_is_applied) {
  for (const bool settle : {true, false}) {
    auto probe = std::make_shared<event_probe>();
    auto worker_config = setup(herd::kernels::cpu_ops());
    worker_config.probe = probe;
    caf::scoped_actor coordinator{system_};
    auto worker = spawn_worker(system_, worker_config, coordinator);
    coordinator->send(worker, start_atom::value, 1.0f);
    coordinator->receive([](const step_ready&) {}, caf::after(std::chrono::seconds(10)) >>
                                                       [] { ADD_FAILURE() << "no step_ready"; });
    coordinator->request(worker, std::chrono::seconds(10), contribute_atom::value, std::uint64_t{0})
        .receive([](const contribution& reply) { EXPECT_EQ(reply.kind, freshness::fresh); },
                 [&](caf::error& failure) { ADD_FAILURE() << system_.render(failure); });
    coordinator->send(worker, stop_atom::value, settle); // before round 0's result
    const auto before = snapshot(coordinator, worker);   // answered after the stop was handled
    coordinator->send(
        worker,
        round_result{0, host_buffer(std::vector<float>(model_->parameter_count(), 0.5f)), 1});
    coordinator->receive([](const worker_stopped& report) { EXPECT_EQ(report.steps, 1u); },
                         caf::after(std::chrono::seconds(10)) >>
                             [] { ADD_FAILURE() << "the stop was not answered"; });
    const auto after = snapshot(coordinator, worker);
    EXPECT_NE(before, after) << "round 0 was applied after the stop";
    const std::vector<std::string> settled{"applied 0", "stopped"};
    const std::vector<std::string> at_once{"stopped", "applied 0"};
    EXPECT_EQ(probe->events(), settle ? settled : at_once) << "settle " << settle;
    coordinator->send_exit(worker, caf::exit_reason::user_shutdown);
  }
}

// A node joining a running job: its worker adopts a live peer's exported state (parameters,
// velocity, step, rounds applied) and from then on goes through the same states as that peer.
// Where the two workers of the test below compute: each has its compute thread's and its actor's
// ops (one object for both on the CPU; two emulated streams for a GPU), and round results live in
// `results`.
struct placement {
  const herd::kernels::ops* peer_steps;
  const herd::kernels::ops* peer_applies;
  const herd::kernels::ops* joining_steps;
  const herd::kernels::ops* joining_applies;
  const herd::kernels::memory* results;
};

void worker_actor_test::adopt_and_go_through_the_same_states(const placement& where) {
  caf::scoped_actor coordinator{system_};
  auto peer_setup = setup(*where.peer_steps);
  peer_setup.apply_ops = where.peer_applies;
  auto peer = spawn_worker(system_, peer_setup, coordinator);
  auto joining_setup = setup(*where.joining_steps);
  joining_setup.apply_ops = where.joining_applies;
  joining_setup.index = 1;
  joining_setup.init_seed = 99; // not the peer's model: adopting must replace it
  auto joining = spawn_worker(system_, joining_setup, coordinator);
  const auto count = model_->parameter_count();
  std::mt19937_64 rng(11);
  std::normal_distribution<float> normal(0.0f, 1.0f);
  auto random_result = [&](std::uint64_t round) {
    std::vector<float> values(count);
    for (auto& value : values)
      value = normal(rng);
    auto data = std::make_shared<herd::kernels::buffer<float>>(0, *where.results);
    data->assign(values);
    return round_result{round, data, 1};
  };
  auto export_state = [&](const caf::actor& worker) {
    std::optional<worker_state> state;
    coordinator->request(worker, std::chrono::seconds(10), export_atom::value)
        .receive([&](const worker_state& exported) { state = exported; },
                 [&](caf::error& failure) { ADD_FAILURE() << system_.render(failure); });
    return state;
  };
  auto contribute = [&](const caf::actor& worker, std::uint64_t round) {
    coordinator->request(worker, std::chrono::seconds(10), contribute_atom::value, round)
        .receive([](const contribution&) {},
                 [&](caf::error& failure) { ADD_FAILURE() << system_.render(failure); });
  };
  coordinator->send(peer, start_atom::value, 1.0f);
  coordinator->receive([](const step_ready&) {}, caf::after(std::chrono::seconds(10)) >>
                                                     [] { ADD_FAILURE() << "no step_ready"; });
  contribute(peer, 0);
  coordinator->send(peer, random_result(0)); // a momentum step: the velocity is not zero now
  const auto taken = export_state(peer);     // waits until round 0 is applied
  ASSERT_TRUE(taken);
  EXPECT_EQ(taken->step(), 1u);
  EXPECT_EQ(taken->rounds_applied(), 1u);
  ASSERT_EQ(
      taken->data->size(),
      worker_state::floats_for(count, herd::models::optimizer::state_floats(hyper_.kind, count)));
  EXPECT_EQ(taken->optimizer_steps(), 1u);

  bool adopted = false;
  coordinator->request(joining, std::chrono::seconds(10), adopt_atom::value, *taken)
      .receive([&](bool ok) { adopted = ok; },
               [&](caf::error& failure) { ADD_FAILURE() << system_.render(failure); });
  ASSERT_TRUE(adopted);
  EXPECT_EQ(snapshot(coordinator, joining),
            std::vector<float>(taken->parameters(), taken->parameters() + count));

  // The next round, applied by both with their own optimizers: equal only if the velocity came too.
  contribute(peer, 1);
  contribute(joining, 1);
  const auto next = random_result(1);
  coordinator->send(peer, next);
  coordinator->send(joining, next);
  const auto peer_after = export_state(peer);
  const auto joining_after = export_state(joining);
  ASSERT_TRUE(peer_after && joining_after);
  // (The peer has run its next step meanwhile; the joining worker has not started.)
  EXPECT_TRUE(std::equal(peer_after->parameters(),
                         peer_after->data->data() + peer_after->data->size(),
                         joining_after->parameters()))
      << "parameters and optimizer state equal bit for bit after the next round";
  EXPECT_EQ(peer_after->optimizer_steps(), joining_after->optimizer_steps());
  EXPECT_EQ(peer_after->rounds_applied(), 2u);
  EXPECT_EQ(joining_after->rounds_applied(), 2u);

  // A worker that has started cannot adopt: its steps would mix two states.
  std::string refusal;
  coordinator->request(peer, std::chrono::seconds(10), adopt_atom::value, *taken)
      .receive([](bool) {}, [&](caf::error& failure) { refusal = system_.render(failure); });
  EXPECT_NE(refusal.find("worker 0 has started already"), std::string::npos) << refusal;
  for (const auto& worker : {peer, joining}) {
    coordinator->request(worker, std::chrono::seconds(10), stop_atom::value)
        .receive([](const worker_stopped&) {},
                 [&](caf::error& failure) { ADD_FAILURE() << system_.render(failure); });
    coordinator->send_exit(worker, caf::exit_reason::user_shutdown);
  }
}

TEST_F(worker_actor_test, a_worker_that_adopts_a_peers_state_goes_through_the_same_states) {
  const auto& ops = herd::kernels::cpu_ops();
  adopt_and_go_through_the_same_states({&ops, &ops, &ops, &ops, &herd::kernels::host_memory()});
}

// AdamW's state is twice the parameters, and its step count sets the bias corrections: the
// joining worker takes both.
TEST_F(worker_actor_test, a_worker_that_adopts_a_peers_adamw_state_goes_through_the_same_states) {
  hyper_ = {0.01f, 0.0f, 0.01f, herd::models::optimizer_kind::adamw};
  const auto& ops = herd::kernels::cpu_ops();
  adopt_and_go_through_the_same_states({&ops, &ops, &ops, &ops, &herd::kernels::host_memory()});
}

// The same with both workers on an emulated GPU (tests/support/emulated_stream_ops.hpp): the state
// leaves one worker's device memory and enters the other's through the host, and each worker's
// two streams hand over only through synchronisation.
TEST_F(worker_actor_test, a_worker_on_a_gpu_adopts_a_peers_state_and_goes_through_the_same_states) {
  // Static: the workers are destroyed on CAF's threads after the test body returns, and their
  // buffers go back through this memory then.
  static const herd::testing::separate_memory device;
  static const herd::testing::emulated_stream_ops streams[] = {
      herd::testing::emulated_stream_ops(device), herd::testing::emulated_stream_ops(device),
      herd::testing::emulated_stream_ops(device), herd::testing::emulated_stream_ops(device)};
  const std::size_t downloads = device.counts.downloads;
  adopt_and_go_through_the_same_states(
      {&streams[0], &streams[1], &streams[2], &streams[3], &device});
  EXPECT_GE(device.counts.downloads - downloads, 4u); // two exports: parameters and velocity
}

// Keeps the gradient of each step and the parameters right after each applied round.
class gradient_probe final : public worker_probe {
public:
  void gradient_computed(int, std::uint64_t step, const float* gradient,
                         std::size_t count) override {
    const std::lock_guard<std::mutex> lock(mutex_);
    gradients_[step].assign(gradient, gradient + count);
  }
  void round_applied(int, std::uint64_t round, const float*, const float* parameters,
                     std::size_t count) override {
    const std::lock_guard<std::mutex> lock(mutex_);
    applied_[round].assign(parameters, parameters + count);
  }
  std::vector<float> gradient(std::uint64_t step) const {
    const std::lock_guard<std::mutex> lock(mutex_);
    return gradients_.at(step);
  }
  std::optional<std::vector<float>> after_round(std::uint64_t round) const {
    const std::lock_guard<std::mutex> lock(mutex_);
    auto found = applied_.find(round);
    if (found == applied_.end())
      return std::nullopt;
    return found->second;
  }

private:
  mutable std::mutex mutex_;
  std::map<std::uint64_t, std::vector<float>> gradients_;
  std::map<std::uint64_t, std::vector<float>> applied_; // parameters right after each round
};

late_member_outcome worker_actor_test::late_wagma_member(
    const std::function<std::vector<float>(const std::vector<float>&)>& average_of,
    std::uint32_t members) {
  late_member_outcome outcome;
  gated_ops ops;
  auto probe = std::make_shared<gradient_probe>();
  auto worker_config = setup(ops);
  worker_config.exchange_models = true;
  worker_config.blend_late_models = true;
  worker_config.probe = probe;
  caf::scoped_actor coordinator{system_};
  auto worker = spawn_worker(system_, worker_config, coordinator);
  outcome.initial = snapshot(coordinator, worker);
  coordinator->send(worker, start_atom::value, 1.0f);
  ops.wait_until_entered();
  coordinator
      ->request(worker, std::chrono::seconds(10), contribute_atom::value, std::uint64_t{0},
                std::uint64_t{1})
      .receive(
          [](const contribution& reply) {
            EXPECT_EQ(reply.kind, freshness::stale);
            EXPECT_EQ(reply.step, 0u);
          },
          [&](caf::error& failure) { ADD_FAILURE() << system_.render(failure); });
  coordinator->send(worker, round_result{0, host_buffer(average_of(outcome.initial)), members});
  ops.release();
  std::optional<step_ready> ready;
  coordinator->receive([&](const step_ready& report) { ready = report; },
                       caf::after(std::chrono::seconds(10)) >> [] {});
  EXPECT_TRUE(ready && ready->late) << "its round was asked before step 1 finished";
  // The worker goes on with step 2 at once: read its model as it left round 0.
  snapshot(coordinator, worker); // round 0 is applied before this answer (same actor, in order)
  if (const auto applied = probe->after_round(0))
    outcome.applied = *applied;
  else
    ADD_FAILURE() << "round 0 was not applied";
  outcome.fresh = outcome.initial;
  herd::models::optimizer optimizer(outcome.fresh.size(), hyper_);
  optimizer.step(herd::kernels::cpu_ops(), outcome.fresh.data(), probe->gradient(1).data());
  coordinator->request(worker, std::chrono::seconds(10), stop_atom::value)
      .receive([](const worker_stopped&) {},
               [&](caf::error& failure) { ADD_FAILURE() << system_.render(failure); });
  coordinator->send_exit(worker, caf::exit_reason::user_shutdown);
  return outcome;
}

// WAGMA's stale formula on a constructed late arrival: the round averaged the stored model with two
// others into R (S = 3); when step 1 finishes, the worker's model is (sum + fresh) / (S + 1) =
// (3 R + fresh) / 4.
TEST_F(worker_actor_test, a_late_wagma_member_sets_its_model_to_sum_plus_fresh_over_s_plus_one) {
  std::vector<float> average(model_->parameter_count());
  std::mt19937_64 rng(4);
  std::normal_distribution<float> normal(0.0f, 1.0f);
  for (auto& value : average)
    value = normal(rng);
  const auto outcome = late_wagma_member([&](const std::vector<float>&) { return average; }, 3);
  ASSERT_EQ(outcome.applied.size(), outcome.fresh.size());
  double worst = 0.0;
  for (std::size_t i = 0; i < outcome.fresh.size(); ++i) {
    const double expected = (3.0 * average[i] + outcome.fresh[i]) / 4.0;
    worst = std::max(worst, std::abs(outcome.applied[i] - expected));
  }
  EXPECT_LT(worst, 1e-6);
  EXPECT_NE(outcome.applied, average);
}

// A group of one (P not a power of two, or its partners lost) averages the late member's stored
// model alone: blending that into its fresh one threw half of its own step away. Averaging a
// group of one changes nothing.
TEST_F(worker_actor_test, a_late_wagma_member_alone_in_its_group_keeps_its_fresh_model) {
  const auto outcome =
      late_wagma_member([](const std::vector<float>& stored) { return stored; }, 1);
  EXPECT_EQ(outcome.applied, outcome.fresh);
  EXPECT_NE(outcome.applied, outcome.initial);
}

// Rounds of consecutive steps come from different aggregators, in any order. Here step 2's
// round asks first (while step 1 runs) and reads the stored model; step 1 then finishes, but its
// model cannot enter the buffer that round still reads. Step 1's round must get step 1's model,
// so its answer waits for the buffer, not the old model marked fresh.
TEST_F(worker_actor_test,
       under_wagma_a_step_s_round_gets_step_s_model_when_a_later_round_asked_first) {
  gated_ops ops;
  auto worker_config = setup(ops);
  worker_config.exchange_models = true;
  worker_config.blend_late_models = true;
  caf::scoped_actor coordinator{system_};
  auto worker = spawn_worker(system_, worker_config, coordinator);
  coordinator->send(worker, start_atom::value, 1.0f);
  ops.wait_until_entered();
  coordinator
      ->request(worker, std::chrono::seconds(10), contribute_atom::value, std::uint64_t{1},
                std::uint64_t{2})
      .receive([](const contribution& reply) { EXPECT_EQ(reply.kind, freshness::stale); },
               [&](caf::error& failure) { ADD_FAILURE() << system_.render(failure); });
  ops.release();
  coordinator->receive([](const step_ready& ready) { EXPECT_FALSE(ready.late); },
                       caf::after(std::chrono::seconds(10)) >>
                           [] { ADD_FAILURE() << "no step_ready"; });
  std::optional<contribution> answer;
  coordinator->send(worker, contribute_atom::value, std::uint64_t{0}, std::uint64_t{1});
  coordinator->receive([&](const contribution& reply) { answer = reply; },
                       caf::after(std::chrono::milliseconds(300)) >> [] {});
  if (!answer) { // step 2's round ends: the buffer takes step 1's model, and the answer comes
    coordinator->send(
        worker,
        round_result{1, host_buffer(std::vector<float>(model_->parameter_count(), 0.5f)), 2});
    coordinator->receive([&](const contribution& reply) { answer = reply; },
                         caf::after(std::chrono::seconds(10)) >> [] {});
  }
  ASSERT_TRUE(answer);
  EXPECT_EQ(answer->round, 0u);
  EXPECT_EQ(answer->kind, freshness::fresh);
  std::vector<float> sent(model_->parameter_count());
  ASSERT_TRUE(plane_->group_reduce({{0, 1.0f}}, nullptr, sent.data(), sent.size(), {})
                  ->wait(std::chrono::milliseconds(0))
                  .ok());
  EXPECT_EQ(sent, snapshot(coordinator, worker)) << "step 1's round must read step 1's model";
  // The rounds' results never come here: a stop that does not wait for them.
  coordinator->request(worker, std::chrono::seconds(10), stop_atom::value, false)
      .receive([](const worker_stopped&) {},
               [&](caf::error& failure) { ADD_FAILURE() << system_.render(failure); });
  coordinator->send_exit(worker, caf::exit_reason::user_shutdown);
}

TEST_F(worker_actor_test, applies_results_in_round_order_whatever_order_they_arrive_in) {
  caf::scoped_actor coordinator{system_};
  auto worker = spawn_worker(system_, setup(herd::kernels::cpu_ops()), coordinator);
  const auto initial = snapshot(coordinator, worker);
  coordinator->send(worker, start_atom::value, 1.0f);
  coordinator->receive([](const step_ready&) {}, caf::after(std::chrono::seconds(10)) >>
                                                     [] { ADD_FAILURE() << "no step_ready"; });
  // The test is the aggregator: the worker takes part in rounds 5 (fresh) and 6 (nothing new).
  // Round 5 reads its send buffer until round 5's result arrives, so the answer for round 6 waits
  // for that result.
  coordinator->request(worker, std::chrono::seconds(10), contribute_atom::value, std::uint64_t{5})
      .receive([](const contribution& answer) { EXPECT_EQ(answer.kind, freshness::fresh); },
               [&](caf::error& failure) { ADD_FAILURE() << system_.render(failure); });
  coordinator->send(worker, contribute_atom::value, std::uint64_t{6});
  std::mt19937_64 rng(9);
  std::normal_distribution<float> normal(0.0f, 1.0f);
  std::vector<std::shared_ptr<std::vector<float>>> results;
  for (int r = 0; r < 2; ++r) {
    results.push_back(std::make_shared<std::vector<float>>(model_->parameter_count()));
    for (auto& value : *results.back())
      value = normal(rng);
  }
  // Round 6's result arrives first; round 5's must still be applied first.
  coordinator->send(worker, round_result{6, host_buffer(*results[1]), 1});
  coordinator->send(worker, round_result{5, host_buffer(*results[0]), 1});
  bool answered_six = false;
  coordinator->receive(
      [&](const contribution& answer) {
        answered_six = answer.round == 6;
        EXPECT_EQ(answer.kind, freshness::none);
      },
      caf::after(std::chrono::seconds(10)) >> [] {});
  EXPECT_TRUE(answered_six);
  const auto after = snapshot(coordinator, worker);

  std::vector<float> expected = initial;
  herd::models::optimizer optimizer(expected.size(), hyper_);
  optimizer.step(herd::kernels::cpu_ops(), expected.data(), results[0]->data());
  optimizer.step(herd::kernels::cpu_ops(), expected.data(), results[1]->data());
  std::vector<float> wrong_order = initial;
  herd::models::optimizer other(expected.size(), hyper_);
  other.step(herd::kernels::cpu_ops(), wrong_order.data(), results[1]->data());
  other.step(herd::kernels::cpu_ops(), wrong_order.data(), results[0]->data());
  ASSERT_EQ(after.size(), expected.size());
  EXPECT_EQ(after, expected);
  EXPECT_NE(after, wrong_order); // momentum makes the order visible
  coordinator->request(worker, std::chrono::seconds(10), stop_atom::value)
      .receive([](const worker_stopped&) {},
               [&](caf::error& failure) { ADD_FAILURE() << system_.render(failure); });
  coordinator->send_exit(worker, caf::exit_reason::user_shutdown);
}

} // namespace
