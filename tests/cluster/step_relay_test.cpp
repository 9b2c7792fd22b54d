// A node's step relay (cluster/step_relay.hpp): the reports of its workers reach the coordinator
// whole and in order, those that came meanwhile as one step_batch, a report alone at once; and a
// worker's flush is answered only once what the relay holds is on its way.
#include "actors/messages.hpp"

#include <caf/all.hpp>

#include <chrono>
#include <cstdint>
#include <gtest/gtest.h>
#include <string>
#include <vector>

#include "cluster/step_relay.hpp"

namespace {

using namespace std::chrono_literals;
using herd::actors::flush_atom;
using herd::actors::step_batch;
using herd::actors::step_ready;

step_ready report(std::int32_t worker, std::uint64_t step) {
  step_ready ready;
  ready.worker = worker;
  ready.step = step;
  return ready;
}

// The batches `coordinator` holds, until none comes within `quiet`.
std::vector<step_batch> batches_at(caf::scoped_actor& coordinator,
                                   std::chrono::milliseconds quiet) {
  std::vector<step_batch> got;
  for (bool more = true; more;)
    coordinator->receive([&](const step_batch& batch) { got.push_back(batch); },
                         caf::after(quiet) >> [&] { more = false; });
  return got;
}

// With one scheduler thread, five reports sent from one handler are all in the relay's mailbox
// before it runs: they go on as one batch, in the order sent. Then one more, alone, goes on by
// itself without waiting for company.
TEST(step_relay, reports_that_came_meanwhile_go_as_one_batch_in_order_and_one_alone_at_once) {
  caf::actor_system_config config;
  herd::actors::add_message_types(config);
  config.set("scheduler.max-threads", std::size_t{1});
  caf::actor_system system{config};
  {
    caf::scoped_actor coordinator{system};
    auto relay = herd::cluster::spawn_step_relay(system, coordinator);
    auto workers = system.spawn([relay](caf::event_based_actor* self) -> caf::behavior {
      return {[self, relay](std::uint64_t step) {
        for (std::int32_t worker = 0; worker < 5; ++worker)
          self->send(relay, report(worker, step));
      }};
    });
    caf::anon_send(workers, std::uint64_t{1});
    auto first = batches_at(coordinator, 500ms);
    ASSERT_EQ(first.size(), 1u);
    ASSERT_EQ(first[0].reports.size(), 5u);
    for (std::int32_t worker = 0; worker < 5; ++worker)
      EXPECT_EQ(first[0].reports[static_cast<std::size_t>(worker)].worker, worker);
    caf::anon_send(relay, report(9, 2));
    auto alone = batches_at(coordinator, 500ms);
    ASSERT_EQ(alone.size(), 1u);
    ASSERT_EQ(alone[0].reports.size(), 1u);
    EXPECT_EQ(alone[0].reports[0].worker, 9);
    EXPECT_EQ(alone[0].reports[0].step, 2u);
    caf::anon_send_exit(workers, caf::exit_reason::user_shutdown);
    caf::anon_send_exit(relay, caf::exit_reason::user_shutdown);
  }
  system.await_all_actors_done();
}

// A worker's flush is answered after the relay has sent what it holds. With one scheduler
// thread, a worker sends twenty reports and then its flush from one handler, all in the relay's
// mailbox before it runs, and tells the coordinator "flushed" once the answer comes: the
// coordinator has every report before that word, in order. (Each actor handles one message at a
// time before the next actor's turn, so the worker hears the answer before the relay handles
// the flush it sent itself, which comes after the worker's.)
TEST(step_relay, a_flush_is_answered_once_every_report_held_is_on_its_way) {
  caf::actor_system_config config;
  herd::actors::add_message_types(config);
  config.set("scheduler.max-threads", std::size_t{1});
  config.set("scheduler.max-throughput", std::size_t{1});
  caf::actor_system system{config};
  {
    caf::scoped_actor coordinator{system};
    auto relay = herd::cluster::spawn_step_relay(system, coordinator);
    caf::actor told = coordinator;
    auto worker = system.spawn([relay, told](caf::event_based_actor* self) -> caf::behavior {
      return {[self, relay, told](std::uint64_t steps) {
        for (std::uint64_t step = 1; step <= steps; ++step)
          self->send(relay, report(3, step));
        self->request(relay, caf::infinite, flush_atom::value).then([self, told] {
          self->send(told, std::string("flushed"));
        });
      }};
    });
    caf::anon_send(worker, std::uint64_t{20});
    std::vector<std::uint64_t> steps;
    bool flushed = false;
    while (!flushed)
      coordinator->receive(
          [&](const step_batch& batch) {
            for (const auto& ready : batch.reports)
              steps.push_back(ready.step);
          },
          [&](const std::string&) { flushed = true; },
          caf::after(std::chrono::seconds(10)) >>
              [&] {
                ADD_FAILURE() << "no answer to the flush";
                flushed = true;
              });
    ASSERT_EQ(steps.size(), 20u) << "reports came after the flush's answer";
    for (std::uint64_t step = 1; step <= 20; ++step)
      EXPECT_EQ(steps[step - 1], step);
    caf::anon_send_exit(worker, caf::exit_reason::user_shutdown);
    caf::anon_send_exit(relay, caf::exit_reason::user_shutdown);
  }
  system.await_all_actors_done();
}

} // namespace
