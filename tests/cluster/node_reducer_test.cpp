// The node reducer alone, with a Gloo plane of two ranks on this process: a reducer that is shut
// down while one of its reductions waits for a peer ends that reduction at once, so the process
// of a node that leaves in the middle of a round exits without waiting out the data timeout; and
// an order it refuses still tells its members to skip the round.
#include "actors/messages.hpp"
#include "comm/gloo_plane.hpp"
#include "comm/rendezvous_store.hpp"
#include "herd/ops.hpp"

#include <caf/all.hpp>

#include <chrono>
#include <future>
#include <gtest/gtest.h>
#include <map>
#include <optional>
#include <string>
#include <thread>

#include "cluster/node_reducer.hpp"

namespace {

using namespace std::chrono_literals;

TEST(node_reducer, shut_down_in_the_middle_of_a_reduction_it_ends_the_reduction_at_once) {
  constexpr std::size_t count = 1000;
  const auto data_timeout = 60s; // twice what the test waits
  // Two ranks; rank 1 (the peer node) connects and then never takes part in the round.
  auto store = herd::comm::make_memory_store();
  herd::comm::gloo_plane_options options;
  options.prefix = "node_reducer_test";
  options.timeout = data_timeout;
  auto peer_plane = std::async(std::launch::async,
                               [&] { return herd::comm::make_gloo_plane(1, 2, store, options); });
  std::shared_ptr<herd::comm::data_plane> plane = herd::comm::make_gloo_plane(0, 2, store, options);
  const auto peer = peer_plane.get();

  auto finished = std::async(std::launch::async, [&] {
    caf::actor_system_config config;
    herd::actors::add_message_types(config);
    caf::actor_system system{config};
    herd::cluster::node_reducer_setup setup;
    setup.node = 0;
    setup.local = herd::comm::make_local_plane(herd::kernels::cpu_ops());
    setup.plane = plane;
    setup.plane_nodes = {0, 1};
    setup.results = herd::comm::buffer_pool::create(count);
    setup.data_timeout = std::chrono::duration_cast<std::chrono::milliseconds>(data_timeout);
    auto reducer = herd::cluster::spawn_node_reducer(system, std::move(setup));
    herd::actors::reduce_order order;
    order.round = 1;
    order.nodes = {0, 1}; // no local inputs: this node's part is zeros
    caf::anon_send(reducer, std::move(order));
    // The reduction is on its thread, waiting for rank 1, by now (and cancelled before it starts
    // if not: either way it must end).
    std::this_thread::sleep_for(300ms);
    caf::anon_send_exit(reducer, caf::exit_reason::user_shutdown);
    reducer = nullptr;
    system.await_all_actors_done();
  });
  EXPECT_EQ(finished.wait_for(30s), std::future_status::ready)
      << "the reducer's shutdown waited for the reduction's data timeout";
  finished.wait(); // before the planes go
}

// An order this node cannot carry out (a data plane generation it never connected) fails the
// round, and the aggregator's commit to skip it finds no round here: the node's members are told
// to skip it at once, so a worker's stop, which waits for every round's result, is answered.
TEST(node_reducer, an_order_it_refuses_tells_its_members_to_skip_the_round) {
  caf::actor_system_config config;
  herd::actors::add_message_types(config);
  caf::actor_system system{config};
  {
    caf::scoped_actor worker{system};
    herd::cluster::node_reducer_setup setup;
    setup.node = 0;
    setup.local = herd::comm::make_local_plane(herd::kernels::cpu_ops());
    setup.results = herd::comm::buffer_pool::create(10);
    setup.workers[4] = caf::actor_cast<caf::actor>(worker);
    auto reducer = herd::cluster::spawn_node_reducer(system, std::move(setup));
    herd::actors::reduce_order order;
    order.round = 3;
    order.nodes = {0, 1};
    order.generation = 9; // never connected here
    order.deliver_to = {4};
    order.members = 2;
    std::optional<herd::actors::reduce_done> answer;
    std::optional<herd::actors::round_result> skipped;
    worker->send(reducer, order);
    for (int message = 0; message < 2; ++message)
      worker->receive([&](const herd::actors::reduce_done& done) { answer = done; },
                      [&](const herd::actors::round_result& result) { skipped = result; },
                      caf::after(10s) >> [] { ADD_FAILURE() << "no answer"; });
    ASSERT_TRUE(answer);
    EXPECT_FALSE(answer->result.ok());
    ASSERT_TRUE(skipped) << "the member was not told to skip the round";
    EXPECT_EQ(skipped->round, 3u);
    EXPECT_EQ(skipped->data, nullptr);
    caf::anon_send_exit(reducer, caf::exit_reason::user_shutdown);
  }
  system.await_all_actors_done();
}

// A committed round reaches the node's members with the learning-rate factor its order carried
// (train.lr-schedule), which they step at.
TEST(node_reducer, a_committed_result_carries_the_orders_learning_rate_factor) {
  caf::actor_system_config config;
  herd::actors::add_message_types(config);
  caf::actor_system system{config};
  {
    caf::scoped_actor worker{system};
    herd::cluster::node_reducer_setup setup;
    setup.node = 0;
    setup.local = herd::comm::make_local_plane(herd::kernels::cpu_ops());
    setup.results = herd::comm::buffer_pool::create(10);
    setup.workers[4] = caf::actor_cast<caf::actor>(worker);
    auto reducer = herd::cluster::spawn_node_reducer(system, std::move(setup));
    herd::actors::reduce_order order;
    order.round = 5;
    order.nodes = {0}; // the group is this node, with no inputs: a zero result
    order.deliver_to = {4};
    order.members = 1;
    order.lr_scale = 0.375f;
    std::optional<herd::actors::round_result> delivered;
    worker->request(reducer, 10s, order)
        .receive([](const herd::actors::reduce_done& done) { EXPECT_TRUE(done.result.ok()); },
                 [](caf::error&) { ADD_FAILURE() << "the order failed"; });
    worker->send(reducer, herd::actors::commit_atom::value, std::uint64_t{5}, true);
    worker->receive([&](const herd::actors::round_result& result) { delivered = result; },
                    caf::after(10s) >> [] { ADD_FAILURE() << "no result"; });
    ASSERT_TRUE(delivered);
    EXPECT_EQ(delivered->round, 5u);
    EXPECT_NE(delivered->data, nullptr);
    EXPECT_EQ(delivered->lr_scale, 0.375f);
    caf::anon_send_exit(reducer, caf::exit_reason::user_shutdown);
  }
  system.await_all_actors_done();
}

// The aggregator asks a node once for all its members' contributions to a round: the node
// reducer asks each local worker and answers with every worker accounted for, the answers of
// those that answered, and by name those it could not ask (not on this node) or whose request
// failed (a worker gone).
TEST(node_reducer, asked_for_its_members_contributions_it_answers_for_every_one) {
  caf::actor_system_config config;
  herd::actors::add_message_types(config);
  caf::actor_system system{config};
  {
    using herd::actors::contribute_atom;
    using herd::actors::contribution;
    auto member = [](std::int32_t index) {
      return [index](caf::event_based_actor*) -> caf::behavior {
        return {[index](contribute_atom, std::uint64_t round, std::uint64_t step) {
          contribution answer;
          answer.worker = index;
          answer.round = round;
          answer.step = step;
          answer.samples = 32;
          return answer;
        }};
      };
    };
    herd::cluster::node_reducer_setup setup;
    setup.node = 1;
    setup.local = herd::comm::make_local_plane(herd::kernels::cpu_ops());
    setup.results = herd::comm::buffer_pool::create(10);
    setup.workers[2] = system.spawn(member(2));
    setup.workers[5] = system.spawn(member(5));
    auto gone = system.spawn(member(6));
    caf::anon_send_exit(gone, caf::exit_reason::user_shutdown);
    setup.workers[6] = gone;
    auto reducer = herd::cluster::spawn_node_reducer(system, setup);
    caf::scoped_actor aggregator{system};
    std::optional<herd::actors::contribution_answers> got;
    aggregator->request(reducer, 10s, herd::actors::contribution_asks{7, 3, {5, 2, 9, 6}})
        .receive([&](const herd::actors::contribution_answers& answers) { got = answers; },
                 [&](caf::error& failure) { ADD_FAILURE() << system.render(failure); });
    ASSERT_TRUE(got);
    std::map<std::int32_t, contribution> answered;
    for (const auto& answer : got->answers)
      answered[answer.worker] = answer;
    ASSERT_EQ(answered.size(), 2u);
    for (std::int32_t worker : {2, 5}) {
      EXPECT_EQ(answered[worker].round, 7u) << worker;
      EXPECT_EQ(answered[worker].step, 3u) << worker;
      EXPECT_EQ(answered[worker].samples, 32u) << worker;
    }
    ASSERT_EQ(got->failed.size(), 2u);
    ASSERT_EQ(got->reasons.size(), 2u);
    std::map<std::int32_t, std::string> failed;
    for (std::size_t i = 0; i < got->failed.size(); ++i)
      failed[got->failed[i]] = got->reasons[i];
    EXPECT_EQ(failed[9], "worker 9 is not on node 1");
    EXPECT_FALSE(failed[6].empty()); // CAF's words for a request to an actor that is gone
    EXPECT_EQ(failed.count(2) + failed.count(5), 0u);
    for (auto& [index, worker] : setup.workers)
      caf::anon_send_exit(worker, caf::exit_reason::user_shutdown);
    caf::anon_send_exit(reducer, caf::exit_reason::user_shutdown);
  }
  system.await_all_actors_done();
}

} // namespace
