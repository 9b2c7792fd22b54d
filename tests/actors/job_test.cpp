// Jobs in an actor system the caller owns (herd/job_actor.hpp) and the facade for code that does
// not speak CAF (herd/job.hpp): several jobs at once, events as messages, status and stop, metrics
// kept apart by name, and nothing process-wide changed unless asked.
#include "actors/job_actor.hpp"
#include "actors/scheduling.hpp"
#include "herd/config.hpp"
#include "herd/dataset_sources.hpp"
#include "herd/job.hpp"
#include "herd/job_actor.hpp"
#include "herd/ops.hpp"
#include "herd/saved_model.hpp"
#include "herd/sequential.hpp"
#include "models/sampler.hpp"

#include <caf/all.hpp>

#include <atomic>
#include <cmath>
#include <condition_variable>
#include <filesystem>
#include <functional>
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <mutex>
#include <optional>
#include <sstream>
#include <thread>

#include "checkpoint/format.hpp"
#include "support/eventually.hpp"
#include "support/session_config.hpp"
#include "support/temp_directory.hpp"

namespace {

using herd::actors::stop_cause;
using namespace std::chrono_literals;
using ::testing::HasSubstr;

std::shared_ptr<const herd::models::train_test_split> synthetic(std::size_t train_samples) {
  return std::make_shared<herd::models::train_test_split>(
      herd::models::make_synthetic_split(train_samples, 200, 24, 5, 7));
}

// A run that ends after `epochs` epochs of 2 workers (60 rounds an epoch).
herd::config::run_config short_run(int epochs = 1) {
  auto config = herd::testing::small_session_config(2, 8);
  config.train.epochs = epochs;
  return config;
}

// A run that goes on until it is stopped (train.max-seconds ends a forgotten one).
herd::config::run_config long_run() {
  auto config = short_run(100000);
  config.train.max_seconds = 120;
  return config;
}

std::size_t threads_of_this_process() {
  const std::filesystem::directory_iterator tasks("/proc/self/task");
  return static_cast<std::size_t>(std::distance(tasks, std::filesystem::directory_iterator()));
}

herd::job_options quick(const std::string& name = "") {
  herd::job_options options;
  options.name = name;
  options.progress_interval = 20ms;
  return options;
}

class caller_system : public ::testing::Test {
protected:
  static caf::actor_system_config& with_herd(caf::actor_system_config& config) {
    herd::add_message_types(config);
    return config;
  }

  herd::job_handle spawn(const herd::config::run_config& config, const herd::job_options& options,
                         std::shared_ptr<const herd::models::train_test_split> data) {
    auto handle = herd::spawn_job(system_, config, std::move(data), options);
    spawned_.push_back(handle.actor);
    return handle;
  }

  // A test that failed halfway leaves no job running: the system's destructor waits for them.
  void TearDown() override {
    for (const auto& job : spawned_)
      caf::anon_send_exit(job, caf::exit_reason::user_shutdown);
  }

  caf::actor_system_config config_;
  caf::actor_system system_{with_herd(config_)};
  std::vector<caf::actor> spawned_;
};

TEST_F(caller_system, two_jobs_run_at_once_and_stopping_one_leaves_the_other_to_complete) {
  const auto data = synthetic(960);
  auto stopped = spawn(long_run(), quick("stopped"), data);
  auto completed = spawn(short_run(2), quick("completed"), data);

  caf::scoped_actor service{system_};
  service->monitor(stopped.actor);
  herd::job_status subscribed;
  service->request(stopped.actor, 10s, herd::subscribe_atom::value, caf::actor_cast<caf::actor>(service))
      .receive([&](const herd::job_status& now) { subscribed = now; },
               [](caf::error& failure) { FAIL() << caf::to_string(failure); });
  EXPECT_EQ(subscribed.name, "stopped");

  // Progress arrives as messages, until the run has taken some rounds.
  std::uint64_t rounds_seen = 0;
  bool straggler_named = false;
  while (rounds_seen < 20) {
    bool got = false;
    service->receive(
        [&](const herd::job_progress& event) {
          got = true;
          EXPECT_EQ(event.job, "stopped");
          EXPECT_GE(event.progress.rounds, rounds_seen);
          rounds_seen = event.progress.rounds;
          if (event.progress.straggler) {
            straggler_named = true;
            EXPECT_GE(event.progress.straggler->worker, 0);
            EXPECT_LT(event.progress.straggler->worker, 2);
            EXPECT_GT(event.progress.straggler->score, 0.0);
          }
        },
        [](const herd::job_evaluation&) {}, [](const herd::job_notice&) {},
        caf::after(30s) >> [] { FAIL() << "no progress message within 30 s"; });
    if (!got)
      return;
  }
  EXPECT_TRUE(straggler_named) << "no progress event named the straggler";

  herd::job_status asked;
  service->request(stopped.actor, 10s, herd::status_atom::value)
      .receive([&](const herd::job_status& now) { asked = now; },
               [](caf::error& failure) { FAIL() << caf::to_string(failure); });
  EXPECT_EQ(asked.state, herd::job_state::running);
  EXPECT_GE(asked.rounds, 20u);
  EXPECT_EQ(asked.epochs_total, 100000.0);

  service->send(stopped.actor, herd::stop_job_atom::value);
  std::optional<herd::job_finished> finished;
  while (!finished) {
    bool timed_out = false;
    service->receive([&](const herd::job_finished& event) { finished = event; },
                     [](const herd::job_progress&) {}, [](const herd::job_evaluation&) {},
                     [](const herd::job_notice&) {},
                     caf::after(60s) >> [&] { timed_out = true; });
    ASSERT_FALSE(timed_out) << "the stopped job did not finish within 60 s";
  }
  EXPECT_EQ(finished->job, "stopped");
  EXPECT_EQ(finished->status.state, herd::job_state::finished);
  ASSERT_TRUE(finished->summary);
  EXPECT_EQ(finished->summary->stop_reason, stop_cause::interrupted);
  EXPECT_TRUE(finished->summary->final_test_accuracy.has_value());

  // The job actor exits once its subscribers heard the end: supervision by monitoring.
  bool down = false;
  service->receive([&](const caf::down_msg& exit) {
    down = true;
    EXPECT_EQ(exit.reason, caf::exit_reason::normal);
  },
                   caf::after(10s) >> [] {});
  EXPECT_TRUE(down) << "the job actor did not exit after its end";

  // The other job ran on and completes its two epochs.
  const auto other = completed.facade->wait_for(120s);
  ASSERT_TRUE(other) << "the other job did not complete";
  EXPECT_EQ(other->stop_reason, stop_cause::epochs) << other->error;
  EXPECT_EQ(other->rounds, 120u);
  EXPECT_EQ(completed.facade->status().state, herd::job_state::finished);
  EXPECT_EQ(stopped.facade->status().state, herd::job_state::finished);
}

// An exit message ends a job at once: a user_shutdown is a service's deliberate stop
// (interrupted, not failed); any other reason is a failure, named. A kill, which the job actor
// cannot handle, ends its run's actors too (or this system's destructor would wait for them
// forever), and the job is heard to end.
TEST_F(caller_system, an_exit_message_ends_the_job_interrupted_only_when_deliberate) {
  const auto data = synthetic(960);
  auto registry = std::make_shared<herd::monitoring::registry>();
  auto options = quick("ended");
  options.metrics = registry;
  for (const auto reason : {caf::exit_reason::user_shutdown,
                            caf::exit_reason::remote_link_unreachable, caf::exit_reason::kill}) {
    // The last job's series leave the registry (its workers must not read as up, nor this job's
    // counters go on from that one's), and then its name is free again: a moment after its
    // summary, when its coordinator exits after its job actor.
    const auto deadline = std::chrono::steady_clock::now() + 60s;
    while (herd::monitoring::expose(*registry).find("job=\"ended\"") != std::string::npos &&
           std::chrono::steady_clock::now() < deadline)
      std::this_thread::sleep_for(10ms);
    EXPECT_EQ(herd::monitoring::expose(*registry).find("job=\"ended\""), std::string::npos)
        << "an ended job's series stay: " << herd::monitoring::expose(*registry);
    std::optional<herd::job_handle> spawned;
    while (!spawned) {
      try {
        spawned = spawn(long_run(), options, data);
      } catch (const herd::config::invalid_config& refused) {
        ASSERT_EQ(refused.errors().front().key, "job_options.name") << refused.what();
        ASSERT_LT(std::chrono::steady_clock::now(), deadline) << "the name stays taken";
        std::this_thread::sleep_for(10ms);
      }
    }
    auto& job = *spawned;
    ASSERT_TRUE(job.facade->wait_for(200ms) == std::nullopt) << "the job ended by itself";
    const auto deadline_for_progress = std::chrono::steady_clock::now() + 60s;
    while (job.facade->status().rounds == 0 &&
           std::chrono::steady_clock::now() < deadline_for_progress)
      std::this_thread::sleep_for(10ms);
    const auto heard = job.facade->status();
    caf::anon_send_exit(job.actor, reason);
    const auto summary = job.facade->wait_for(60s);
    ASSERT_TRUE(summary) << "the job did not end within 60 s of the exit message";
    // How far the run got, as the job last heard it (it used to be all zeros).
    EXPECT_GE(summary->rounds, heard.rounds);
    EXPECT_GT(summary->rounds, 0u);
    EXPECT_GT(summary->steps, 0u);
    EXPECT_GT(summary->samples, 0u);
    EXPECT_GT(summary->wall_seconds, 0.0);
    if (reason == caf::exit_reason::user_shutdown) {
      EXPECT_EQ(summary->stop_reason, stop_cause::interrupted) << summary->error;
      EXPECT_EQ(summary->error, "");
      EXPECT_EQ(job.facade->status().state, herd::job_state::finished);
    } else {
      EXPECT_EQ(summary->stop_reason, stop_cause::error);
      EXPECT_NE(summary->error.find(reason == caf::exit_reason::kill ? "the job actor was killed"
                                                                    : "the job was shut down"),
                std::string::npos)
          << summary->error;
      EXPECT_EQ(job.facade->status().state, herd::job_state::failed);
    }
  }
  // Every run's actors are gone: nothing is left for the system to wait for.
  const auto deadline = std::chrono::steady_clock::now() + 60s;
  while (system_.registry().running() > 0 && std::chrono::steady_clock::now() < deadline)
    std::this_thread::sleep_for(10ms);
  EXPECT_EQ(system_.registry().running(), 0u) << "actors of a killed job live on";
}

TEST_F(caller_system, two_jobs_in_one_registry_carry_their_own_job_labels) {
  const auto data = synthetic(960);
  auto registry = std::make_shared<herd::monitoring::registry>();
  auto alpha_options = quick("alpha");
  alpha_options.metrics = registry;
  auto beta_options = quick("beta");
  beta_options.metrics = registry;
  auto alpha = spawn(long_run(), alpha_options, data);
  auto beta = spawn(long_run(), beta_options, data);

  // A third under a name a running job holds is refused, naming the key.
  try {
    spawn(short_run(), alpha_options, data);
    ADD_FAILURE() << "a second running job named alpha was accepted";
  } catch (const herd::config::invalid_config& refused) {
    ASSERT_EQ(refused.errors().size(), 1u);
    EXPECT_EQ(refused.errors()[0].key, "job_options.name");
    EXPECT_NE(std::string(refused.what()).find("\"alpha\""), std::string::npos) << refused.what();
  }

  // Each job's workers are series of their own, while the jobs run.
  auto has_samples_of = [&registry](const std::string& name, const std::string& worker) {
    const auto text = herd::monitoring::expose(*registry);
    std::istringstream lines(text);
    for (std::string line; std::getline(lines, line);)
      if (line.rfind("herd_samples_total{", 0) == 0 &&
          line.find("job=\"" + name + "\"") != std::string::npos &&
          line.find("worker=\"" + worker + "\"") != std::string::npos)
        return true;
    return false;
  };
  for (const std::string name : {"alpha", "beta"})
    for (const std::string worker : {"0", "1"})
      EXPECT_TRUE(has_samples_of(name, worker))
          << "no herd_samples_total series of job " << name << ", worker " << worker << " in:\n"
          << herd::monitoring::expose(*registry);

  // An ended job's series leave the registry: its workers are not up, and the exposition does
  // not grow with every job ever run.
  beta.facade->stop();
  ASSERT_TRUE(beta.facade->wait_for(120s));
  alpha.facade->stop();
  ASSERT_TRUE(alpha.facade->wait_for(60s));
  const auto after = herd::monitoring::expose(*registry);
  EXPECT_EQ(after.find("job=\"alpha\""), std::string::npos) << after;
  EXPECT_EQ(after.find("job=\"beta\""), std::string::npos) << after;

  // Once alpha has ended its name is free again.
  auto again = spawn(short_run(), alpha_options, data);
  ASSERT_TRUE(again.facade->wait_for(120s));
}

// A service's system on Herd's scheduler (herd::use_herd_scheduler) runs a job to its end, and
// the scheduler is Herd's: it counts the sleeping threads it woke.
// A service may keep a finished job's facade for long: it holds the trained model, not a copy of
// every replica's parameters (train_session keeps those: its callers compare the replicas).
TEST_F(caller_system, a_finished_jobs_facade_keeps_the_trained_model_not_every_replica) {
  auto plan = herd::actors::prepare_job(short_run(), synthetic(960), herd::actors::job_setup{});
  const auto shared = herd::actors::shared_state_of(*plan);
  const auto handle = herd::actors::launch_job(system_, std::move(plan));
  spawned_.push_back(handle.actor);
  const auto summary = handle.facade->wait_for(60s);
  ASSERT_TRUE(summary) << "the job did not end";
  EXPECT_EQ(summary->stop_reason, stop_cause::epochs) << summary->error;
  EXPECT_EQ(handle.facade->final_parameters().size(), handle.facade->model()->parameter_count());
  EXPECT_TRUE(shared->worker_parameters.empty());
}

// A subscription sent once spawn_job returned misses what came before it, and a job that ended
// first answers it with an error: a subscriber handed to spawn_job hears every event, even of a job
// that ended before the subscriber looked.
TEST_F(caller_system, subscribers_given_to_spawn_job_hear_every_event_from_the_first) {
  struct heard_by_callbacks {
    std::mutex mutex;
    std::size_t evaluations = 0;
    std::vector<std::string> notices;
  };
  auto callbacks = std::make_shared<heard_by_callbacks>();
  auto options = quick("from_the_first");
  options.on_evaluation = [callbacks](const herd::actors::evaluation_point&) {
    std::lock_guard<std::mutex> guard(callbacks->mutex);
    ++callbacks->evaluations;
  };
  options.on_notice = [callbacks](const std::string& text) {
    std::lock_guard<std::mutex> guard(callbacks->mutex);
    callbacks->notices.push_back(text);
  };
  caf::scoped_actor listener{system_};
  const auto handle = herd::spawn_job(system_, short_run(), synthetic(960), options,
                                      {caf::actor_cast<caf::actor>(listener), caf::actor{}});
  spawned_.push_back(handle.actor);
  const auto summary = handle.facade->wait_for(60s);
  ASSERT_TRUE(summary) << "the job did not end";

  std::size_t evaluations = 0;
  std::vector<std::string> notices;
  std::optional<herd::job_finished> finished;
  while (!finished) {
    bool empty = false;
    listener->receive([&](const herd::job_finished& event) { finished = event; },
                      [&](const herd::job_evaluation&) { ++evaluations; },
                      [&](const herd::job_notice& event) { notices.push_back(event.text); },
                      [](const herd::job_progress&) {}, caf::after(10s) >> [&] { empty = true; });
    ASSERT_FALSE(empty) << "the subscriber heard no job_finished";
  }
  EXPECT_EQ(finished->status.state, herd::job_state::finished);
  std::lock_guard<std::mutex> guard(callbacks->mutex);
  EXPECT_GE(callbacks->evaluations, 1u);
  EXPECT_EQ(evaluations, callbacks->evaluations);
  EXPECT_EQ(notices, callbacks->notices);
}

// The job actor owns itself while it runs: a caller that keeps only the facade (whose reference
// is weak), or drops the handle altogether, still has a job that runs to its end, and its
// subscribers hear it end. (The run's actors were taken down with a job actor nobody held, and
// its notices then reached an actor being destroyed.)
TEST_F(caller_system, a_job_whose_handle_is_dropped_runs_to_its_end) {
  caf::scoped_actor listener{system_};
  std::shared_ptr<herd::job> facade;
  {
    const auto handle = herd::spawn_job(system_, short_run(), synthetic(960), quick("dropped"),
                                        {caf::actor_cast<caf::actor>(listener)});
    facade = handle.facade;
  }
  const auto summary = facade->wait_for(60s);
  ASSERT_TRUE(summary) << "the job did not end";
  EXPECT_EQ(summary->stop_reason, stop_cause::epochs) << summary->error;
  EXPECT_EQ(summary->rounds, 60u);
  bool finished = false;
  while (!finished) {
    bool empty = false;
    listener->receive(
        [&](const herd::job_finished& event) {
          finished = true;
          EXPECT_EQ(event.status.state, herd::job_state::finished);
        },
        [](const herd::job_evaluation&) {}, [](const herd::job_notice&) {},
        [](const herd::job_progress&) {}, caf::after(10s) >> [&] { empty = true; });
    ASSERT_FALSE(empty) << "the subscriber heard no job_finished";
  }
  // Nothing kept at all: the run still ends by its epochs, as its subscriber hears.
  facade.reset();
  static_cast<void>(herd::spawn_job(system_, short_run(), synthetic(960), quick("forgotten"),
                                    {caf::actor_cast<caf::actor>(listener)}));
  std::optional<herd::job_finished> forgotten;
  while (!forgotten) {
    bool empty = false;
    listener->receive([&](const herd::job_finished& event) { forgotten = event; },
                      [](const herd::job_evaluation&) {}, [](const herd::job_notice&) {},
                      [](const herd::job_progress&) {}, caf::after(60s) >> [&] { empty = true; });
    ASSERT_FALSE(empty) << "the forgotten job's subscriber heard no job_finished";
  }
  EXPECT_EQ(forgotten->status.state, herd::job_state::finished);
  ASSERT_TRUE(forgotten->summary);
  EXPECT_EQ(forgotten->summary->stop_reason, stop_cause::epochs) << forgotten->summary->error;
}

// A service runs job after job in its own system: an ended job whose handle is gone leaves
// nothing behind, neither its data (the evaluator held the test set, so the whole split) nor a
// thread (the evaluator's, a detached actor's, waits until nothing refers to the actor).
TEST_F(caller_system, an_ended_job_leaves_neither_its_data_nor_a_thread_behind) {
  const auto wait_until = [](const std::function<bool()>& done) {
    return herd::testing::eventually(done, std::chrono::seconds(5));
  };
  std::size_t threads_before = 0;
  for (int job = 0; job < 4; ++job) {
    auto data = synthetic(960);
    const std::weak_ptr<const herd::models::train_test_split> watched = data;
    {
      const auto handle = herd::spawn_job(system_, short_run(), std::move(data), quick());
      const auto summary = handle.facade->wait_for(60s);
      ASSERT_TRUE(summary) << "job " << job << " did not end";
    }
    EXPECT_TRUE(wait_until([&] { return watched.expired(); }))
        << "job " << job << "'s dataset is still held, " << watched.use_count();
    if (job == 0) // the scheduler's threads have started by now
      threads_before = threads_of_this_process();
    else
      EXPECT_TRUE(wait_until([&] { return threads_of_this_process() <= threads_before; }))
          << "after job " << job << ": " << threads_of_this_process() << " threads, "
          << threads_before << " after the first";
  }
}

TEST(job_actor, a_system_on_herds_scheduler_runs_a_job_to_its_end) {
  caf::actor_system_config config;
  herd::add_message_types(config);
  herd::use_herd_scheduler(config, 2);
  caf::actor_system system{config};
  const auto job = herd::spawn_job(system, short_run(), synthetic(960), quick("on_herds"));
  const auto summary = job.facade->wait_for(120s);
  ASSERT_TRUE(summary.has_value()) << "the job did not end within 120 s";
  EXPECT_EQ(summary->stop_reason, stop_cause::epochs) << summary->error;
  EXPECT_EQ(summary->rounds, 60u);
  EXPECT_GT(herd::actors::scheduler_wakes(system), 0u);
}

// A spawned job runs on the caller's scheduler: a thread count for it is a mistake, said so.
TEST_F(caller_system, a_scheduler_thread_count_is_refused_naming_whose_scheduler_to_size) {
  auto options = quick("sized");
  options.scheduler_threads = 2;
  try {
    spawn(short_run(), options, synthetic(960));
    FAIL() << "spawn_job accepted job_options.scheduler_threads";
  } catch (const herd::config::invalid_config& refused) {
    ASSERT_EQ(refused.errors().size(), 1u) << refused.what();
    EXPECT_EQ(refused.errors().front().key, "job_options.scheduler_threads");
    EXPECT_NE(std::string(refused.what()).find("use_herd_scheduler"), std::string::npos)
        << refused.what();
  }
}

// A facade job's own system has the scheduler threads it is given: two jobs one after the other,
// alike but for that count, differ in the process's threads by exactly the difference.
TEST(job_facade, scheduler_threads_size_its_own_systems_scheduler) {
  auto threads_while_running = [](std::size_t scheduler_threads) {
    auto options = quick("sized");
    options.scheduler_threads = scheduler_threads;
    auto job = herd::job::start(long_run(), synthetic(960), options);
    const auto deadline = std::chrono::steady_clock::now() + 60s;
    while (job->status().rounds == 0 && std::chrono::steady_clock::now() < deadline)
      std::this_thread::sleep_for(10ms);
    EXPECT_GT(job->status().rounds, 0u) << "the job made no progress";
    const std::size_t threads = threads_of_this_process();
    job->abort();
    EXPECT_TRUE(job->wait_for(60s)) << "the job did not end within 60 s of abort()";
    job.reset(); // its system and every thread of it gone before the next one
    return threads;
  };
  const std::size_t one = threads_while_running(1);
  const std::size_t six = threads_while_running(6);
  EXPECT_EQ(six - one, 5u) << one << " threads with 1 scheduler thread, " << six << " with 6";
}

// ... before anything of the job exists: its series in the service's registry would show workers
// up forever.
TEST(job_actor, a_system_without_herds_message_types_is_refused_clearly) {
  caf::actor_system_config config;
  caf::actor_system system{config};
  auto options = quick("refused");
  options.metrics = std::make_shared<herd::monitoring::registry>();
  try {
    const auto accepted = herd::spawn_job(system, short_run(), synthetic(960), options);
    caf::anon_send_exit(accepted.actor, caf::exit_reason::user_shutdown);
    ADD_FAILURE() << "spawn_job accepted a system without Herd's message types";
  } catch (const std::logic_error& refused) {
    EXPECT_NE(std::string(refused.what()).find("herd::add_message_types"), std::string::npos)
        << refused.what();
  }
  const auto text = herd::monitoring::expose(*options.metrics);
  EXPECT_EQ(text.find("refused"), std::string::npos) << text;
}

TEST(job_facade, waits_stops_and_reports_status_from_plain_threads) {
  std::mutex mutex;
  std::vector<std::string> events; // in the order the callbacks ran
  auto options = quick("facade");
  options.on_progress = [&](const herd::actors::progress&) {
    std::lock_guard<std::mutex> guard(mutex);
    if (events.empty() || events.back() != "progress")
      events.push_back("progress");
  };
  options.on_finished = [&](const herd::actors::run_summary& summary) {
    std::lock_guard<std::mutex> guard(mutex);
    events.push_back("finished " + std::string(to_string(summary.stop_reason)));
  };
  const auto job = herd::job::start(long_run(), synthetic(960), options);
  EXPECT_EQ(job->name(), "facade");
  EXPECT_FALSE(job->summary());
  EXPECT_TRUE(job->final_parameters().empty());

  // One thread watches the status until the run has gone 20 rounds, then stops it.
  std::atomic<bool> stopped{false};
  herd::job_status seen_running;
  std::thread watcher([&] {
    const auto deadline = std::chrono::steady_clock::now() + 30s;
    while (std::chrono::steady_clock::now() < deadline) {
      const auto now = job->status();
      if (now.state == herd::job_state::running && now.rounds >= 20) {
        seen_running = now;
        job->stop();
        stopped = true;
        return;
      }
      std::this_thread::sleep_for(5ms);
    }
    job->stop(); // it failed: the waiter need not wait for a forgotten run
  });
  // Another waits for the end with timeouts, as a service's thread would.
  std::optional<herd::actors::run_summary> waited;
  std::thread waiter([&] {
    for (int i = 0; i < 120 && !waited; ++i)
      waited = job->wait_for(1s);
  });
  watcher.join();
  waiter.join();
  ASSERT_TRUE(stopped) << "the job did not reach 20 rounds within 30 s";
  ASSERT_TRUE(waited) << "the job did not end within 2 minutes of the stop";

  EXPECT_EQ(seen_running.name, "facade");
  EXPECT_GT(seen_running.elapsed_seconds, 0.0);
  EXPECT_GT(seen_running.steps, 0u);
  EXPECT_EQ(waited->stop_reason, stop_cause::interrupted);
  EXPECT_GE(waited->rounds, seen_running.rounds);
  const auto ended = job->status();
  EXPECT_EQ(ended.state, herd::job_state::finished);
  EXPECT_EQ(ended.rounds, waited->rounds);
  ASSERT_TRUE(ended.test_accuracy);
  EXPECT_EQ(*ended.test_accuracy, *waited->final_test_accuracy);
  ASSERT_TRUE(job->summary());
  EXPECT_EQ(job->summary()->rounds, waited->rounds);
  EXPECT_EQ(job->final_parameters().size(), job->model()->parameter_count());
  EXPECT_EQ(job->wait().rounds, waited->rounds); // wait() after the end returns at once
  job->stop();                                   // nothing happens to an ended job

  std::lock_guard<std::mutex> guard(mutex);
  ASSERT_EQ(events.size(), 2u);
  EXPECT_EQ(events[0], "progress");
  EXPECT_EQ(events[1], "finished interrupted"); // before wait_for() returned
}

// The process's BLAS thread count: a job sets it as herd train does unless told to leave it.
class blas_threads : public ::testing::Test {
protected:
  void TearDown() override { herd::kernels::set_blas_threads(before_); }
  int before_ = herd::kernels::blas_threads();
};

TEST_F(blas_threads, a_job_sets_them_as_herd_train_does_unless_told_to_leave_them) {
  const auto data = synthetic(960);
  // Two workers: one thread a GEMM each, or their pools of every core fight for the cores.
  herd::kernels::set_blas_threads(2);
  ASSERT_EQ(herd::kernels::blas_threads(), 2);
  {
    const auto job = herd::job::start(short_run(), data, quick());
    EXPECT_EQ(herd::kernels::blas_threads(), 1);
    ASSERT_EQ(job->wait().stop_reason, stop_cause::epochs);
  }
  // train.blas-threads, as in herd train.
  herd::kernels::set_blas_threads(1);
  auto configured = short_run();
  configured.train.blas_threads = 2;
  {
    const auto job = herd::job::start(configured, data, quick());
    EXPECT_EQ(herd::kernels::blas_threads(), 2);
    ASSERT_EQ(job->wait().stop_reason, stop_cause::epochs);
  }
  // Negative: left as the host set them.
  herd::kernels::set_blas_threads(2);
  auto leaving = quick();
  leaving.blas_threads = -1;
  {
    const auto job = herd::job::start(short_run(), data, leaving);
    ASSERT_EQ(job->wait().stop_reason, stop_cause::epochs);
  }
  EXPECT_EQ(herd::kernels::blas_threads(), 2);
}

// A job whose BLAS count Herd chooses never raises it under another job's workers: a one-worker
// job (every core) beside a two-worker job (one thread a GEMM) leaves it at one.
TEST_F(blas_threads, a_job_does_not_raise_them_while_another_job_runs) {
  const auto data = synthetic(960);
  herd::kernels::set_blas_threads(2);
  const auto running = herd::job::start(long_run(), data, quick("running"));
  ASSERT_EQ(herd::kernels::blas_threads(), 1);
  auto alone = short_run();
  alone.train.workers = 1;
  {
    const auto job = herd::job::start(alone, data, quick("alone"));
    EXPECT_EQ(herd::kernels::blas_threads(), 1) << "raised under the running job's workers";
    ASSERT_EQ(job->wait().stop_reason, stop_cause::epochs);
  }
  // Asked for by the caller, it is set as asked.
  auto asking = quick("asking");
  asking.blas_threads = 2;
  {
    const auto job = herd::job::start(alone, data, asking);
    EXPECT_EQ(herd::kernels::blas_threads(), 2);
    ASSERT_EQ(job->wait().stop_reason, stop_cause::epochs);
  }
  running->stop();
  EXPECT_EQ(running->wait().stop_reason, stop_cause::interrupted);
}

// herd_learning_rate is the rate updates use: under async the parameter server's (train.lr / P
// without async.lr), not the workers' train.lr, which no update applies.
TEST(job_facade, the_learning_rate_metric_under_async_is_the_servers) {
  for (const double async_lr : {0.0, 0.02}) {
    auto config = long_run(); // 2 workers at train.lr = 0.05
    config.train.algorithm = "async";
    config.async.lr = async_lr;
    auto options = quick("rate");
    const auto registry = std::make_shared<herd::monitoring::registry>();
    options.metrics = registry;
    std::mutex mutex;
    std::string exposed; // once the gauge is set, while the job runs
    options.on_progress = [&](const herd::actors::progress&) {
      const auto now = herd::monitoring::expose(*registry);
      std::lock_guard<std::mutex> guard(mutex);
      if (exposed.empty() && now.find("herd_learning_rate{") != std::string::npos)
        exposed = now;
    };
    const auto job = herd::job::start(config, synthetic(960), options);
    ASSERT_TRUE(herd::testing::eventually([&] {
      std::lock_guard<std::mutex> guard(mutex);
      return !exposed.empty();
    }, 60s));
    job->stop();
    ASSERT_EQ(job->wait().stop_reason, stop_cause::interrupted);
    EXPECT_THAT(exposed, HasSubstr(async_lr > 0.0 ? "herd_learning_rate{job=\"rate\"} 0.02\n"
                                                  : "herd_learning_rate{job=\"rate\"} 0.025\n"))
        << exposed;
  }
}

// A split given without a validation set is held out from as load_dataset would; a fraction
// that holds out no sample is refused by its key, as every other refusal at the start.
TEST(job_facade, a_validation_fraction_that_holds_out_no_sample_is_refused_by_its_key) {
  auto config = short_run();
  config.data.validation_fraction = 0.001; // of 192 samples a class: none
  try {
    herd::job::start(config, synthetic(960), quick())->wait();
    FAIL() << "the job started";
  } catch (const herd::config::invalid_config& refused) {
    ASSERT_EQ(refused.errors().size(), 1u);
    EXPECT_EQ(refused.errors()[0].key, "data.validation-fraction");
    EXPECT_THAT(refused.errors()[0].message, HasSubstr("holds out no sample"));
  }
}

// A callback that throws stops the job, and both status() and the summary say it failed and why.
// abort() ends a job at once, as an exit message does: no final evaluation, interrupted.
TEST(job_facade, abort_ends_the_job_at_once_without_a_final_evaluation) {
  const auto job = herd::job::start(long_run(), synthetic(960), quick("aborted"));
  const auto deadline = std::chrono::steady_clock::now() + 60s;
  while (job->status().rounds == 0 && std::chrono::steady_clock::now() < deadline)
    std::this_thread::sleep_for(10ms);
  ASSERT_GT(job->status().rounds, 0u) << "the job made no progress";
  job->abort();
  EXPECT_NE(job->status().state, herd::job_state::running);
  const auto summary = job->wait_for(60s);
  ASSERT_TRUE(summary) << "the job did not end within 60 s of abort()";
  EXPECT_EQ(summary->stop_reason, stop_cause::interrupted) << summary->error;
  EXPECT_FALSE(summary->final_test_accuracy);
  EXPECT_EQ(job->status().state, herd::job_state::finished);
  EXPECT_TRUE(job->final_parameters().empty());
  job->abort(); // an ended job: nothing happens
}

TEST(job_facade, a_callback_that_throws_fails_the_job_in_its_status_and_its_summary) {
  auto options = quick();
  options.on_progress = [](const herd::actors::progress&) { throw std::runtime_error("boom"); };
  const auto job = herd::job::start(long_run(), synthetic(960), options);
  const auto summary = job->wait_for(60s);
  ASSERT_TRUE(summary.has_value());
  EXPECT_EQ(summary->stop_reason, stop_cause::error);
  EXPECT_EQ(summary->error, "job_options.on_progress threw: boom");
  const auto status = job->status();
  EXPECT_EQ(status.state, herd::job_state::failed);
  EXPECT_EQ(status.error, summary->error);
}

// After a callback threw, only on_finished comes: the job is ending, and a service's logging that
// broke must not be called again and again. An on_finished that throws fails nothing (the run
// ended), but the summary wait() returns says so.
TEST(job_facade, after_a_callback_threw_only_on_finished_comes_and_its_own_throw_is_noted) {
  auto options = quick();
  std::atomic<int> progress_calls{0};
  std::atomic<int> finished_calls{0};
  options.on_progress = [&progress_calls](const herd::actors::progress&) {
    ++progress_calls;
    throw std::runtime_error("boom");
  };
  options.on_finished = [&finished_calls](const herd::actors::run_summary&) { ++finished_calls; };
  const auto failed = herd::job::start(long_run(), synthetic(960), options);
  ASSERT_TRUE(failed->wait_for(60s).has_value());
  EXPECT_EQ(progress_calls.load(), 1);
  EXPECT_EQ(finished_calls.load(), 1);

  auto throwing_end = quick();
  throwing_end.on_finished = [](const herd::actors::run_summary&) {
    throw std::runtime_error("cannot record it");
  };
  const auto ended = herd::job::start(short_run(), synthetic(960), throwing_end);
  const auto summary = ended->wait_for(60s);
  ASSERT_TRUE(summary.has_value());
  EXPECT_EQ(summary->stop_reason, stop_cause::epochs);
  EXPECT_EQ(summary->error, "job_options.on_finished threw: cannot record it");
  EXPECT_EQ(ended->status().state, herd::job_state::finished);
}

// While on_finished runs, the results it was promised are there for every thread: a service that
// polls status() and reads them once it says finished must not find them empty.
TEST(job_facade, the_results_are_visible_before_on_finished_is_called) {
  auto options = quick();
  std::atomic<bool> in_callback{false};
  std::atomic<bool> leave{false};
  options.on_finished = [&](const herd::actors::run_summary&) {
    in_callback = true;
    while (!leave)
      std::this_thread::sleep_for(1ms);
  };
  const auto job = herd::job::start(short_run(), synthetic(960), options);
  const auto deadline = std::chrono::steady_clock::now() + 60s;
  while (!in_callback && std::chrono::steady_clock::now() < deadline)
    std::this_thread::sleep_for(1ms);
  ASSERT_TRUE(in_callback.load());
  EXPECT_EQ(job->status().state, herd::job_state::finished);
  EXPECT_TRUE(job->summary().has_value());
  EXPECT_EQ(job->final_parameters().size(), job->model()->parameter_count());
  EXPECT_FALSE(job->wait_for(0ms).has_value()) << "wait() returns after on_finished";
  leave = true;
  EXPECT_TRUE(job->wait_for(60s).has_value());
}

// Checkpoints where another run keeps its own would be pruned by this job: refused, as herd train
// refuses them, naming the key; resuming that run from there is what the directory is for.
// A short run that writes its checkpoints into `dir`/ckpt.
herd::config::run_config checkpointed_run(const herd::testing::temp_directory& dir) {
  auto config = short_run();
  config.checkpoint.dir = dir.file("ckpt");
  return config;
}

TEST(job_facade, a_checkpoint_directory_of_another_run_is_refused) {
  herd::testing::temp_directory dir;
  const auto data = synthetic(960);
  auto config = checkpointed_run(dir);
  {
    const auto first = herd::job::start(config, data, quick());
    ASSERT_EQ(first->wait().stop_reason, stop_cause::epochs);
  }
  try {
    static_cast<void>(herd::job::start(config, data, quick()));
    ADD_FAILURE() << "a job started among another run's checkpoints";
  } catch (const herd::config::invalid_config& refused) {
    ASSERT_EQ(refused.errors().size(), 1u);
    EXPECT_EQ(refused.errors()[0].key, "checkpoint.dir");
    EXPECT_NE(refused.errors()[0].message.find("resume that run with job_options.resume_from"),
              std::string::npos)
        << refused.errors()[0].message;
  }
  auto resuming = quick();
  resuming.resume_from = config.checkpoint.dir;
  config.train.epochs = 2;
  const auto resumed = herd::job::start(config, data, resuming);
  EXPECT_EQ(resumed->wait().stop_reason, stop_cause::epochs);
}

// A service drops a finished job from its table in on_finished: the job (and its actor system)
// goes without waiting for the callback that destroys it, which would wait forever.
TEST(job_facade, a_job_destroyed_from_its_own_on_finished_goes_without_hanging) {
  const auto data = synthetic(960);
  // A job run to its end first: the threads that stay (OpenBLAS's) are started by then.
  herd::job::start(short_run(), data, quick())->wait();
  const std::size_t threads_before = threads_of_this_process();
  std::mutex mutex;
  std::condition_variable changed;
  std::unique_ptr<herd::job> held;
  bool started = false;
  bool dropped = false;
  auto options = quick("dropped");
  options.on_finished = [&](const herd::actors::run_summary&) {
    std::unique_lock<std::mutex> lock(mutex);
    changed.wait(lock, [&] { return started; }); // held is set
    auto mine = std::move(held);
    lock.unlock();
    mine.reset(); // the service lets the job go
    lock.lock();
    dropped = true;
    changed.notify_all();
  };
  {
    auto job = herd::job::start(short_run(), data, options);
    std::lock_guard<std::mutex> guard(mutex);
    held = std::move(job);
    started = true;
  }
  changed.notify_all();
  std::unique_lock<std::mutex> lock(mutex);
  EXPECT_TRUE(changed.wait_for(lock, 60s, [&] { return dropped; }))
      << "destroying the job from its on_finished did not return";
  lock.unlock();
  // Its actor system goes too, on a thread of its own. That thread used to wait, in the system's
  // destructor, for the thread that started the job to let go of the system's logger (made its
  // current one when the system was made), which happened only when it made another system.
  EXPECT_TRUE(herd::job::await_detached_shutdowns(30s))
      << "the dropped job's actor system was not shut down within 30 s";
  // After its last statement the thread itself takes a moment to end.
  const auto deadline = std::chrono::steady_clock::now() + 5s;
  while (threads_of_this_process() > threads_before && std::chrono::steady_clock::now() < deadline)
    std::this_thread::sleep_for(10ms);
  EXPECT_LE(threads_of_this_process(), threads_before)
      << "a thread of the dropped job's actor system is left";
}

// Two running jobs of one process writing to one directory would prune each other's checkpoints
// before either had written one: the second is refused while the first runs.
TEST(job_facade, a_checkpoint_directory_a_running_job_writes_to_is_refused) {
  herd::testing::temp_directory dir;
  const auto data = synthetic(960);
  auto running = long_run();
  running.checkpoint.dir = dir.file("ckpt");
  const auto first = herd::job::start(running, data, quick("first"));
  auto second = checkpointed_run(dir);
  second.train.seed = 7;
  try {
    static_cast<void>(herd::job::start(second, data, quick("second")));
    ADD_FAILURE() << "a second running job writes to the first one's checkpoint.dir";
  } catch (const herd::config::invalid_config& refused) {
    ASSERT_EQ(refused.errors().size(), 1u);
    EXPECT_EQ(refused.errors()[0].key, "checkpoint.dir");
    EXPECT_NE(refused.errors()[0].message.find("a running job in this process writes its "
                                               "checkpoints there"),
              std::string::npos)
        << refused.errors()[0].message;
  }
  // The same directory by another name is the same directory.
  second.checkpoint.dir = dir.file("ckpt") + "/../ckpt";
  EXPECT_THROW(static_cast<void>(herd::job::start(second, data, quick("third"))),
               herd::config::invalid_config);
  first->stop();
  first->wait();
}

// A service serves predictions from a job's checkpoint through the public API alone: the
// settings it was taken with, the model they build, and the parameters the run ended with.
TEST(job_facade, a_checkpoints_model_is_read_back_for_serving) {
  herd::testing::temp_directory dir;
  // A normalisation of its own (data prepared as pixels are), which the checkpoint must keep.
  auto prepared = std::make_shared<herd::models::train_test_split>(*synthetic(960));
  prepared->train.input_normalisation = prepared->test.input_normalisation = {0.25f, 2.0f};
  const std::shared_ptr<const herd::models::train_test_split> data = prepared;
  const auto config = checkpointed_run(dir);
  const auto trained = herd::job::start(config, data, quick());
  const auto summary = trained->wait();
  ASSERT_EQ(summary.stop_reason, stop_cause::epochs) << summary.error;

  const auto settings = herd::checkpoint::saved_settings(config.checkpoint.dir);
  EXPECT_EQ(herd::config::to_ini(settings), herd::config::to_ini(config));
  // The checkpoint says what the model takes: the data are not needed to rebuild it.
  const auto inputs = herd::checkpoint::saved_inputs(config.checkpoint.dir);
  EXPECT_EQ(inputs.sample_shape, data->train.input_shape());
  EXPECT_EQ(inputs.classes, static_cast<std::size_t>(data->train.classes));
  EXPECT_EQ(inputs.normalisation.mean, data->train.input_normalisation.mean);
  EXPECT_EQ(inputs.normalisation.stddev, data->train.input_normalisation.stddev);
  const auto model = herd::models::build_model(
      {settings.model.preset, settings.model.layers, settings.model.hidden}, inputs.sample_shape,
      inputs.classes);
  const auto saved = herd::checkpoint::read_model(config.checkpoint.dir, *model);
  EXPECT_EQ(saved.file, herd::checkpoint::list(config.checkpoint.dir).back());
  EXPECT_EQ(saved.rounds, summary.rounds);
  ASSERT_EQ(saved.parameters.size(), model->parameter_count());
  EXPECT_EQ(saved.parameters, trained->final_parameters());
  EXPECT_EQ(saved.parameters_origin,
            "the workers' last parameters (round " + std::to_string(summary.rounds) + ")");

  // Another model's parameters are not served: both descriptions are named.
  auto other_choice = herd::models::model_choice{};
  other_choice.hidden = {4};
  const auto other = herd::models::build_model(other_choice, data->train.input_shape(),
                                                static_cast<std::size_t>(data->train.classes));
  try {
    herd::checkpoint::read_model(config.checkpoint.dir, *other);
    ADD_FAILURE() << "a checkpoint was read for another model";
  } catch (const herd::checkpoint::checkpoint_error& refused) {
    EXPECT_NE(std::string(refused.what()).find(other->describe()), std::string::npos)
        << refused.what();
    EXPECT_NE(std::string(refused.what()).find(model->describe()), std::string::npos)
        << refused.what();
  }
  EXPECT_THROW(herd::checkpoint::saved_settings(dir.file("none")),
               herd::checkpoint::checkpoint_error);
}

// The facade's constructor is public for spawn_job's sake; given no state (all a caller outside
// Herd can give it), it used to make a job whose first call crashed.
TEST(job_facade, a_facade_made_without_a_jobs_state_is_refused_at_once) {
  try {
    herd::job facade(nullptr);
    ADD_FAILURE() << "a facade was made of nothing";
  } catch (const std::invalid_argument& refused) {
    EXPECT_THAT(refused.what(), HasSubstr("herd::job::start"));
  }
}

TEST(job_facade, a_null_dataset_is_refused_naming_it) {
  try {
    static_cast<void>(herd::job::start(short_run(), nullptr, quick()));
    ADD_FAILURE() << "a job started without data";
  } catch (const herd::config::invalid_config& refused) {
    ASSERT_EQ(refused.errors().size(), 1u);
    EXPECT_EQ(refused.errors()[0].key, "data");
  }
}

// A callback that waits for its own job waited forever (and the job's destructor with it): wait()
// there throws instead, and the job runs to its end.
TEST(job_facade, wait_called_from_the_jobs_own_callback_throws_instead_of_hanging) {
  std::mutex mutex;
  herd::job* self = nullptr;
  std::string refusal;
  auto options = quick("waits_on_itself");
  options.on_progress = [&](const herd::actors::progress&) {
    std::lock_guard<std::mutex> guard(mutex);
    if (self == nullptr || !refusal.empty())
      return;
    try {
      self->wait();
      refusal = "(wait returned)";
    } catch (const std::logic_error& refused) {
      refusal = refused.what();
    }
  };
  auto job = herd::job::start(long_run(), synthetic(960), options);
  {
    std::lock_guard<std::mutex> guard(mutex);
    self = job.get();
  }
  const auto deadline = std::chrono::steady_clock::now() + 30s;
  for (;;) {
    {
      std::lock_guard<std::mutex> guard(mutex);
      if (!refusal.empty() || std::chrono::steady_clock::now() > deadline)
        break;
    }
    std::this_thread::sleep_for(10ms);
  }
  job->stop();
  if (!job->wait_for(30s).has_value()) {
    // Its callback still waits in it, and would hold its destructor as long: the job is left to
    // the process's end, so that the test fails rather than hangs.
    static_cast<void>(job.release());
    FAIL() << "the job did not end after its callback waited";
  }
  std::lock_guard<std::mutex> guard(mutex);
  EXPECT_THAT(refusal, HasSubstr("herd::job::wait() called from one of the job's own callbacks"));
}

// A split's structs are public: one built by hand is checked before anything runs, as
// dataset_from_memory checks its input. Labels of more samples than there are rows were read past
// the features' end; a label outside the classes lost a worker and the job still "finished"; a
// test set the model built from [model] cannot read failed every evaluation of a whole run.
TEST(job_facade, a_split_no_run_can_read_is_refused_naming_the_set_and_the_fault) {
  const auto message_of_refusal =
      [](const std::function<void(herd::models::train_test_split&)>& spoil) -> std::string {
    auto data = std::make_shared<herd::models::train_test_split>(*synthetic(960));
    data->train.name = "mine/train";
    data->test.name = "mine/test";
    spoil(*data);
    try {
      herd::job::start(short_run(), data, quick())->wait();
    } catch (const herd::config::invalid_config& refused) {
      EXPECT_EQ(refused.errors().size(), 1u);
      EXPECT_EQ(refused.errors()[0].key, "data");
      return refused.errors()[0].message;
    }
    return "(started)";
  };
  EXPECT_THAT(message_of_refusal([](auto& data) { data.train.labels.resize(1500, 1); }),
              HasSubstr("data: mine/train: 960 rows of features for 1500 labels"));
  EXPECT_THAT(message_of_refusal([](auto& data) { data.train.labels[5] = 42; }),
              HasSubstr("data: mine/train: sample 5 has label 42, outside [0, 5)"));
  EXPECT_THAT(message_of_refusal([](auto& data) { data.test.images.data()[30] = NAN; }),
              HasSubstr("data: mine/test: sample 1, value 6 is NaN"));
  EXPECT_THAT(message_of_refusal([](auto& data) {
                data.test = herd::models::dataset_from_memory(std::vector<float>(200), {0, 1, 2, 3},
                                                              {50}, 5, "mine/test");
              }),
              HasSubstr("but the dataset \"mine/test\" has samples of 50 floats"));
  EXPECT_THAT(message_of_refusal([](auto& data) {
                data.test.classes = 7;
                data.test.labels[0] = 6;
              }),
              HasSubstr("scores 5 classes, but the dataset \"mine/test\" has 7"));
  EXPECT_EQ(message_of_refusal([](auto&) {}), "(started)");
}

// What a job_options field holds that no job can use is refused before anything runs, naming the
// field as the caller wrote it (not an internal name).
TEST(job_facade, options_no_job_can_use_are_refused_naming_them) {
  auto key_of_refusal = [](std::shared_ptr<const herd::models::train_test_split> data,
                           const herd::job_options& options) -> std::string {
    try {
      static_cast<void>(herd::job::start(short_run(), std::move(data), options));
    } catch (const herd::config::invalid_config& refused) {
      EXPECT_EQ(refused.errors().size(), 1u) << refused.what();
      return refused.errors().front().key + " | " + refused.what();
    }
    return "accepted";
  };
  for (auto interval : {0ms, -5ms}) {
    auto options = quick();
    options.progress_interval = interval;
    EXPECT_EQ(key_of_refusal(synthetic(960), options).rfind("job_options.progress_interval | ", 0),
              0u)
        << interval.count();
  }

  auto crowded = quick();
  crowded.scheduler_threads = 257;
  const auto threads = key_of_refusal(synthetic(960), crowded);
  EXPECT_EQ(threads.rfind("job_options.scheduler_threads | ", 0), 0u) << threads;

  auto without_test = std::make_shared<herd::models::train_test_split>(*synthetic(960));
  without_test->test = herd::models::dataset{};
  const auto empty = key_of_refusal(without_test, quick());
  EXPECT_EQ(empty.rfind("data | ", 0), 0u) << empty;
  EXPECT_NE(empty.find("the test set is empty"), std::string::npos) << empty;

  // The model takes 10 floats a sample; the data has 24.
  auto options = quick();
  herd::models::model_choice choice;
  choice.hidden = {8};
  options.model = herd::models::build_model(choice, {10}, 5);
  const auto unfit = key_of_refusal(synthetic(960), options);
  EXPECT_EQ(unfit.rfind("job_options.model | job_options.model: the model", 0), 0u) << unfit;
}

} // namespace

namespace {

TEST(job_facade, starts_from_given_parameters) {
  const auto data = synthetic(960);
  const auto first = herd::job::start(short_run(), data, quick());
  ASSERT_EQ(first->wait().stop_reason, stop_cause::epochs);
  const auto trained = std::make_shared<const std::vector<float>>(first->final_parameters());
  ASSERT_EQ(trained->size(), first->model()->parameter_count());

  // A second run that barely moves: it ends where it started, at the first one's parameters.
  auto config = short_run();
  config.train.lr = 1e-9;
  config.train.momentum = 0.0;
  config.train.weight_decay = 0.0;
  auto options = quick();
  options.initial_parameters = trained;
  const auto second = herd::job::start(config, data, options);
  ASSERT_EQ(second->wait().stop_reason, stop_cause::epochs);
  const auto ended = second->final_parameters();
  ASSERT_EQ(ended.size(), trained->size());
  for (std::size_t i = 0; i < ended.size(); ++i)
    ASSERT_NEAR(ended[i], (*trained)[i], 1e-4) << "parameter " << i;

  // Parameters of another model are refused, naming the option.
  options.initial_parameters = std::make_shared<const std::vector<float>>(std::vector<float>(7));
  try {
    static_cast<void>(herd::job::start(config, data, options));
    ADD_FAILURE() << "7 starting parameters were accepted";
  } catch (const herd::config::invalid_config& refused) {
    ASSERT_EQ(refused.errors().size(), 1u);
    EXPECT_EQ(refused.errors()[0].key, "job_options.initial_parameters");
  }
}

} // namespace
