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
#include <optional>
#include <gtest/gtest.h>
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

} // namespace
