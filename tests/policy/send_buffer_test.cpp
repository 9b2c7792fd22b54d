// The worker's send-buffer rules without an actor: each test plays a table of what the worker
// reports (requests, steps, results) against one family and checks every answer, as text.
#include <gtest/gtest.h>
#include <set>
#include <string>
#include <vector>

#include "policy/send_buffer.hpp"

namespace {

using herd::policy::buffer_write;
using herd::policy::freshness;
using herd::policy::late_gradients;
using herd::policy::loan;
using herd::policy::result_use;
using herd::policy::send_buffer;
using herd::policy::send_buffer_family;
using herd::policy::send_buffer_family_of;

constexpr auto accumulating = send_buffer_family::accumulating_gradients;
constexpr auto discarding = send_buffer_family::discarding_gradients;
constexpr auto scaling = send_buffer_family::scaling_gradients;
constexpr auto accumulate = late_gradients::accumulate;
constexpr auto discard = late_gradients::discard;
constexpr auto averaging = send_buffer_family::averaging_models;
constexpr auto blending = send_buffer_family::blending_models;
constexpr auto blending_every = send_buffer_family::blending_every_model;
constexpr auto serving = send_buffer_family::server_gradients;

enum class event_kind { request, begin, announce, end, result, apply, due, unsent };

struct event {
  event_kind kind;
  std::uint64_t round = 0;
  std::uint64_t step = 0;
  std::uint32_t samples = 0;
};

/// A contribution request for `round`, which averages local step `step` (wagma).
event request(std::uint64_t round, std::uint64_t step = 0) {
  return {event_kind::request, round, step};
}
event begin_step() {
  return {event_kind::begin};
}
/// Gradient buckets: backward has begun to make the running step's gradient final.
event announce(std::uint32_t samples) {
  return {event_kind::announce, 0, 0, samples};
}
event end_step(std::uint32_t samples) {
  return {event_kind::end, 0, 0, samples};
}
/// The round's result arrives: the release's write, and the waiting requests it lets through.
event result(std::uint64_t round) {
  return {event_kind::result, round};
}
/// Every round that is due and whose result is here is applied, as the worker does.
event apply() {
  return {event_kind::apply};
}
event due() {
  return {event_kind::due};
}
event unsent() {
  return {event_kind::unsent};
}

struct row {
  event happens;
  std::string answer;
};

std::string text(buffer_write write) {
  switch (write) {
  case buffer_write::none:
    return "nothing";
  case buffer_write::copy_gradient:
    return "copy gradient";
  case buffer_write::add_gradient:
    return "add gradient";
  case buffer_write::copy_model:
    return "copy model";
  }
  return "?";
}

std::string text(result_use use) {
  switch (use) {
  case result_use::optimizer_step:
    return "optimizer step";
  case result_use::replace_model:
    return "replace model";
  case result_use::blend_model:
    return "blend model";
  }
  return "?";
}

std::string text(const loan& given) {
  if (given.kind == freshness::none)
    return "none";
  return std::string(given.kind == freshness::fresh ? "fresh" : "stale") + ", " +
         std::to_string(given.samples) + " samples, version " + std::to_string(given.version);
}

// Plays tables against one machine, keeping the results that arrived as the worker does.
class script {
public:
  explicit script(send_buffer_family family, std::uint64_t global_every = 0)
      : buffer_(family, global_every) {}

  void play(const std::vector<row>& table) {
    for (std::size_t i = 0; i < table.size(); ++i)
      EXPECT_EQ(answer(table[i].happens), table[i].answer) << "row " << i + 1;
  }

  send_buffer& buffer() { return buffer_; }

private:
  std::string answer(const event& happens) {
    switch (happens.kind) {
    case event_kind::request: {
      const auto given = buffer_.on_request(happens.round, happens.step);
      return given ? text(*given) : "waits";
    }
    case event_kind::begin:
      return buffer_.begin_step() ? "into the buffer" : "into scratch";
    case event_kind::announce:
      return buffer_.announce(happens.samples) ? "announced" : "not announced";
    case event_kind::end: {
      const auto end = buffer_.end_step(happens.samples);
      std::string said = end.late ? "late" : "fresh";
      if (end.scale != 1.0f)
        said += ", scaled by " + std::to_string(end.scale).substr(0, 4);
      return end.write == buffer_write::none ? said : said + ", " + text(end.write);
    }
    case event_kind::result: {
      arrived_.insert(happens.round);
      std::string said = text(buffer_.on_result(happens.round));
      while (const auto given = buffer_.answer_waiting())
        said += "; round " + std::to_string(given->round) + " gets " + text(*given);
      return said;
    }
    case event_kind::apply: {
      std::string said;
      bool model_changed = false;
      while (const auto next = buffer_.next_application()) {
        if (arrived_.erase(next->round) == 0)
          break;
        said += (said.empty() ? "round " : ", round ") + std::to_string(next->round) + " by " +
                text(next->use);
        model_changed = model_changed || next->use != result_use::optimizer_step;
        buffer_.applied(next->round);
      }
      const auto write = model_changed ? buffer_.after_model_changed() : buffer_write::none;
      if (write != buffer_write::none)
        said += ", then " + text(write);
      return said.empty() ? "nothing due" : said;
    }
    case event_kind::due:
      return buffer_.step_due() ? "due" : "not due";
    case event_kind::unsent: {
      const bool held = buffer_.unsent_in_buffer();
      const bool waiting = buffer_.unsent_in_scratch();
      if (held && waiting)
        return "buffer and scratch";
      return held ? "buffer" : waiting ? "scratch" : "nothing";
    }
    }
    return "?";
  }

  send_buffer buffer_;
  std::set<std::uint64_t> arrived_;
};

// -- choosing the family ---------------------------------------------------------------------

TEST(send_buffer, the_family_follows_the_worker_setup_switches) {
  //                          exchange_models, blend_late_models, late gradients
  EXPECT_EQ(send_buffer_family_of(false, false, accumulate), accumulating);
  EXPECT_EQ(send_buffer_family_of(false, false, discard), discarding);
  EXPECT_EQ(send_buffer_family_of(false, false, late_gradients::scale), scaling);
  EXPECT_EQ(send_buffer_family_of(true, false, accumulate), averaging);
  EXPECT_EQ(send_buffer_family_of(true, false, discard), averaging) << "models are never dropped";
  EXPECT_EQ(send_buffer_family_of(true, false, late_gradients::scale), averaging);
  EXPECT_EQ(send_buffer_family_of(true, true, accumulate), blending);
  EXPECT_EQ(send_buffer_family_of(true, true, discard), blending);
  EXPECT_EQ(send_buffer_family_of(false, true, accumulate), blending) << "blending needs models";
  EXPECT_FALSE(send_buffer(accumulating).exchanges_models());
  EXPECT_FALSE(send_buffer(discarding).exchanges_models());
  EXPECT_TRUE(send_buffer(averaging).exchanges_models());
  EXPECT_TRUE(send_buffer(blending).exchanges_models());
  // wagma.blend = reference: blend_on_time_models, which only blending models can do.
  EXPECT_EQ(send_buffer_family_of(true, true, accumulate, true), blending_every);
  EXPECT_EQ(send_buffer_family_of(true, true, accumulate, false), blending);
  EXPECT_EQ(send_buffer_family_of(true, false, accumulate, true), averaging);
  EXPECT_TRUE(send_buffer(blending_every).exchanges_models());
  EXPECT_TRUE(send_buffer(blending_every).blends_late_models());
  // async: the parameter server's parameters come back, whatever the other switches say.
  EXPECT_EQ(send_buffer_family_of(false, false, accumulate, false, true), serving);
  EXPECT_FALSE(send_buffer(serving).exchanges_models());
  EXPECT_TRUE(send_buffer(serving).takes_server_parameters());
}

// -- gradients ---------------------------------------------------------------------------------

TEST(send_buffer,
     a_fresh_gradient_goes_into_the_empty_buffer_and_the_next_step_waits_for_its_round) {
  script worker(accumulating);
  worker.play({
      {due(), "due"},
      {request(1), "none"}, // nothing yet: the round adds nothing from it
      {begin_step(), "into the buffer"},
      {end_step(32), "fresh"},
      {due(), "not due"},
      {request(2), "fresh, 32 samples, version 0"},
      {result(2), "nothing"},
      {apply(), "nothing due"}, // round 1 first
      {due(), "not due"},
      {result(1), "nothing"},
      {apply(), "round 1 by optimizer step, round 2 by optimizer step"},
      {due(), "due"},
      {begin_step(), "into the buffer"},
  });
}

// async: the gradient goes out as under the gradient algorithms, and what comes back is the
// parameter server's parameters, which replace the model.
TEST(send_buffer,
     under_async_a_fresh_gradient_goes_out_and_the_servers_parameters_replace_the_model) {
  script worker(serving);
  worker.play({
      {begin_step(), "into the buffer"},
      {end_step(32), "fresh"},
      {due(), "not due"},
      {request(1), "fresh, 32 samples, version 0"},
      {result(1), "nothing"},
      {apply(), "round 1 by replace model"},
      {due(), "due"},
      {begin_step(), "into the buffer"},
  });
}

TEST(send_buffer, a_request_while_the_step_writes_into_the_buffer_gets_nothing_and_makes_it_late) {
  script worker(accumulating);
  worker.play({
      {begin_step(), "into the buffer"},
      {request(1), "none"},
      {end_step(32), "late"},
      {due(), "due"}, // a late worker goes on at once
      {unsent(), "buffer"},
      {request(2), "stale, 32 samples, version 0"},
  });
}

// Gradient buckets (sync): the round of an announced step takes its gradient while backward
// still writes it, as the step's own, fresh contribution: the step is on time, and its result is
// applied once it ends.
TEST(send_buffer, an_announced_step_goes_out_fresh_while_it_runs_and_is_not_late) {
  script worker(accumulating);
  worker.play({
      {begin_step(), "into the buffer"},
      {announce(32), "announced"},
      {due(), "not due"},
      {request(1), "fresh, 32 samples, version 0"},
      {result(1), "nothing"},
      {apply(), "nothing due"}, // the compute thread reads the parameters
      {end_step(32), "fresh"},
      {due(), "not due"}, // until its round is applied
      {unsent(), "nothing"},
      {apply(), "round 1 by optimizer step"},
      {due(), "due"},
      {begin_step(), "into the buffer"},
      {announce(16), "announced"},
      {request(2), "fresh, 16 samples, version 1"},
      {request(3), "waits"}, // one round at a time, as ever
      {end_step(16), "fresh"},
      {result(2), "nothing; round 3 gets none"},
  });
}

TEST(send_buffer, an_announced_contribution_names_the_running_step) {
  send_buffer buffer(accumulating);
  buffer.adopt(41, 41);
  ASSERT_TRUE(buffer.begin_step());
  ASSERT_TRUE(buffer.announce(8));
  EXPECT_TRUE(buffer.announced());
  const auto given = buffer.on_request(7, 0);
  ASSERT_TRUE(given.has_value());
  EXPECT_EQ(given->step, 42u); // the step it belongs to, not the 41 finished
  EXPECT_EQ(given->version, 41u);
  EXPECT_TRUE(given->in_backward);
  EXPECT_FALSE(buffer.end_step(8).late);
  EXPECT_FALSE(buffer.announced());
  EXPECT_EQ(buffer.steps(), 42u);
}

// An announced step no round asked for ends as any step does; a step that writes into scratch,
// and the families that exchange models or take the server's parameters, announce nothing.
TEST(send_buffer, only_a_step_writing_into_an_empty_buffer_of_gradients_is_announced) {
  script worker(accumulating);
  worker.play({
      {begin_step(), "into the buffer"},
      {announce(32), "announced"},
      {end_step(32), "fresh"},
      {unsent(), "buffer"},
      {request(1), "fresh, 32 samples, version 0"},
      {begin_step(), "into scratch"}, // solo: round 1 still reads the buffer
      {announce(16), "not announced"},
      {request(2), "waits"},
  });
  for (const auto family : {averaging, blending, blending_every, serving}) {
    send_buffer buffer(family);
    buffer.begin_step();
    EXPECT_FALSE(buffer.announce(8)) << static_cast<int>(family);
  }
}

// solo, majority, quorum: a round may ask while a step runs, before backward has made any of
// its gradient final. The step is then late, so its announcement would be a false arrival: it
// is refused, and the step ends late, its gradient left for the next round.
TEST(send_buffer, a_step_a_round_asked_for_before_its_announcement_is_not_announced) {
  script worker(accumulating);
  worker.play({
      {begin_step(), "into the buffer"},
      {request(1), "none"},
      {announce(32), "not announced"},
      {end_step(32), "late"},
      {unsent(), "buffer"},
      {result(1), "nothing"},
      {apply(), "round 1 by optimizer step"},
      {request(2), "stale, 32 samples, version 0"},
  });
}

TEST(send_buffer, a_request_mid_step_lends_the_accumulated_late_gradient) {
  script worker(accumulating);
  worker.play({
      {begin_step(), "into the buffer"},
      {request(1), "none"},
      {end_step(32), "late"},
      {result(1), "nothing"},
      {apply(), "round 1 by optimizer step"},
      {begin_step(), "into scratch"}, // the late gradient holds the buffer
      {request(2), "stale, 32 samples, version 0"},
      {end_step(16), "late"}, // it waits: round 2 still reads the buffer
      {due(), "not due"},
      {unsent(), "scratch"},
      {result(2), "copy gradient"},
      {apply(), "round 2 by optimizer step"},
      {due(), "due"},
      {request(3), "stale, 16 samples, version 1"},
  });
}

TEST(send_buffer, a_fresh_gradient_is_added_to_the_late_ones_held_and_they_go_out_fresh) {
  script worker(accumulating);
  worker.play({
      {begin_step(), "into the buffer"},
      {request(1), "none"},
      {end_step(32), "late"},
      {result(1), "nothing"},
      {apply(), "round 1 by optimizer step"},
      {begin_step(), "into scratch"},
      {end_step(16), "fresh, add gradient"},
      {due(), "not due"},
      // The version is that of the oldest gradient in the sum.
      {request(2), "fresh, 48 samples, version 0"},
  });
}

TEST(send_buffer, results_wait_while_a_step_runs_and_apply_in_round_order) {
  script worker(accumulating);
  worker.play({
      {begin_step(), "into the buffer"},
      {request(1), "none"},
      {request(2), "none"},
      {result(2), "nothing"},
      {result(1), "nothing"},
      {apply(), "nothing due"}, // the compute thread reads the parameters
      {end_step(32), "late"},
      {apply(), "round 1 by optimizer step, round 2 by optimizer step"},
  });
}

TEST(send_buffer, a_request_while_the_buffer_is_lent_to_another_round_waits_for_its_result) {
  script worker(accumulating);
  worker.play({
      {begin_step(), "into the buffer"},
      {request(1), "none"},
      {end_step(32), "late"},
      {begin_step(), "into scratch"},
      {request(2), "stale, 32 samples, version 0"},
      {end_step(16), "late"},
      {request(3), "waits"},
      {request(4), "waits"},
      // The gradient finished meanwhile goes with round 3; round 4 waits on.
      {result(2), "copy gradient; round 3 gets stale, 16 samples, version 0"},
      {request(5), "waits"},
      {result(3), "nothing; round 4 gets none; round 5 gets none"},
  });
}

TEST(send_buffer, a_late_gradient_is_dropped_when_late_gradients_are_discarded) {
  script worker(discarding);
  worker.play({
      {begin_step(), "into the buffer"},
      {request(1), "none"},
      {end_step(32), "late"},
      {unsent(), "nothing"},
      {due(), "due"},
      {request(2), "none"},
      // Nothing is ever held back, so every step writes into the buffer.
      {begin_step(), "into the buffer"},
      {end_step(32), "fresh"},
      {unsent(), "buffer"},
      {request(3), "fresh, 32 samples, version 0"},
  });
}

TEST(send_buffer, a_late_gradient_is_scaled_by_the_rounds_it_missed_when_late_gradients_scale) {
  script worker(scaling);
  worker.play({
      // One round missed: half its weight, where it lies (the step wrote into the buffer). A
      // request that waits for the buffer is not missed: the late gradient goes with it.
      {begin_step(), "into the buffer"},
      {request(1), "none"},
      {end_step(32), "late, scaled by 0.50"},
      {result(1), "nothing"},
      {due(), "due"},
      {begin_step(), "into scratch"},               // the late gradient holds the buffer
      {request(2), "stale, 32 samples, version 0"}, // missed: 1
      {request(3), "waits"},                        // the buffer is lent to round 2
      {result(2), "nothing; round 3 gets none"},    // missed: 2
      {request(4), "none"},                         // missed: 3
      // Three rounds took a contribution while this step ran: a quarter, in the scratch buffer
      // before it is copied into the send buffer.
      {end_step(16), "late, scaled by 0.25, copy gradient"},
      {result(3), "nothing"},
      {result(4), "nothing"},
      {apply(), "round 1 by optimizer step, round 2 by optimizer step, round 3 by optimizer step, "
                "round 4 by optimizer step"},
      // A step no round asked for while it ran is fresh and keeps its weight; it is added to the
      // late gradient held.
      {begin_step(), "into scratch"},
      {end_step(32), "fresh, add gradient"},
      {request(5), "fresh, 48 samples, version 0"},
  });
}

TEST(send_buffer, a_late_gradient_weighs_one_over_one_plus_the_rounds_it_missed) {
  using herd::policy::late_gradient_weight;
  EXPECT_FLOAT_EQ(late_gradient_weight(1), 0.5f);
  EXPECT_FLOAT_EQ(late_gradient_weight(4), 0.2f);
  for (std::uint32_t missed = 1; missed < 64; ++missed)
    EXPECT_LT(late_gradient_weight(missed + 1), late_gradient_weight(missed));
  EXPECT_EQ(herd::policy::late_gradients_of(std::string("scale")), late_gradients::scale);
  EXPECT_EQ(herd::policy::late_gradients_of(std::string("discard")), late_gradients::discard);
  EXPECT_EQ(herd::policy::late_gradients_of(std::string("accumulate")), accumulate);
  EXPECT_THROW(herd::policy::late_gradients_of(std::string("drop")), std::invalid_argument);
}

// -- models (preduce) --------------------------------------------------------------------------

TEST(send_buffer, a_request_before_the_first_step_lends_the_initial_model_as_stale) {
  script worker(averaging);
  worker.play({
      {request(1), "stale, 0 samples, version 0"},
      {request(2), "waits"}, // one round at a time, as with gradients
      {result(1), "copy model; round 2 gets stale, 0 samples, version 0"},
      {apply(), "round 1 by replace model"}, // round 2 still reads the buffer
      {result(2), "copy model"},
      {apply(), "round 2 by replace model, then copy model"},
      {unsent(), "nothing"},
  });
}

TEST(send_buffer, a_finished_model_goes_out_fresh_and_stays_in_the_buffer_as_stale) {
  script worker(averaging);
  worker.play({
      {begin_step(), "into scratch"}, // a model step never writes the buffer
      {end_step(32), "fresh, copy model"},
      {due(), "not due"},
      {request(1), "fresh, 32 samples, version 0"},
      {request(2), "waits"},
      {result(1), "copy model; round 2 gets stale, 0 samples, version 0"},
      {apply(), "round 1 by replace model"},
      {due(), "due"},
      {result(2), "copy model"},
      {apply(), "round 2 by replace model, then copy model"},
      // Its version stays the step's: model exchange measures staleness in
      // steps, not in rounds applied.
      {request(3), "stale, 0 samples, version 0"},
  });
}

// -- models with late rounds blended in (wagma) ------------------------------------------------

TEST(send_buffer, a_wagma_member_that_finished_the_step_lends_its_model_fresh_and_waits) {
  script worker(blending);
  worker.play({
      {begin_step(), "into scratch"},
      {end_step(32), "fresh, copy model"},
      {due(), "not due"},
      {request(1, 1), "fresh, 32 samples, version 0"},
      {result(1), "copy model"},
      {apply(), "round 1 by replace model, then copy model"},
      {due(), "due"},
  });
}

// wagma.blend = reference: an on-time member blends its group's average into its own model,
// (sum + own) / (S + 1), where the herd blend replaces the model by sum / S.
TEST(send_buffer, under_the_reference_blend_an_on_time_member_blends_its_rounds_result_in) {
  script worker(blending_every, 10);
  worker.play({
      {begin_step(), "into scratch"},
      {end_step(32), "fresh, copy model"},
      {due(), "not due"},
      {request(1, 1), "fresh, 32 samples, version 0"},
      {result(1), "copy model"},
      {due(), "not due"}, // it waits for the round it was on time for, as under herd
      {apply(), "round 1 by blend model, then copy model"},
      {due(), "due"},
  });
}

TEST(send_buffer, under_the_reference_blend_a_late_member_blends_as_under_herd) {
  script worker(blending_every, 10);
  worker.play({
      {begin_step(), "into scratch"},
      {request(1, 1), "stale, 0 samples, version 0"},
      {result(1), "copy model"},
      {apply(), "nothing due"}, // blended in when step 1 finishes
      {end_step(32), "late, copy model"},
      {due(), "not due"},
      {apply(), "round 1 by blend model, then copy model"},
      {due(), "due"},
  });
}

// A global average (every wagma.sync-every-th step) is the plain mean under both blends: every
// replica leaves it with one model.
TEST(send_buffer, under_the_reference_blend_a_global_average_replaces_the_model) {
  script worker(blending_every, 2);
  worker.play({
      {begin_step(), "into scratch"},
      {end_step(32), "fresh, copy model"},
      {request(1, 1), "fresh, 32 samples, version 0"},
      {result(1), "copy model"},
      {apply(), "round 1 by blend model, then copy model"},
      {begin_step(), "into scratch"},
      {end_step(32), "fresh, copy model"},
      {request(2, 2), "fresh, 32 samples, version 1"}, // step 2: a global average
      {result(2), "copy model"},
      {apply(), "round 2 by replace model, then copy model"},
  });
}

TEST(send_buffer, a_wagma_round_of_an_unfinished_step_gets_the_stored_model_and_is_blended_later) {
  script worker(blending);
  worker.play({
      {begin_step(), "into scratch"},
      {request(1, 1), "stale, 0 samples, version 0"},
      {result(1), "copy model"},
      {apply(), "nothing due"}, // blended in when step 1 finishes
      {end_step(32), "late, copy model"},
      {apply(), "round 1 by blend model, then copy model"},
      {due(), "due"},
  });
}

TEST(send_buffer, the_next_wagma_step_waits_for_the_result_of_a_round_it_was_late_for) {
  script worker(blending);
  worker.play({
      {begin_step(), "into scratch"},
      {request(1, 1), "stale, 0 samples, version 0"},
      {end_step(32), "late"},
      {due(), "not due"},
      {result(1), "copy model"},
      {apply(), "round 1 by blend model, then copy model"},
      {due(), "due"},
  });
}

TEST(send_buffer, a_wagma_member_further_behind_blends_each_round_when_its_step_finishes) {
  script worker(blending);
  worker.play({
      {begin_step(), "into scratch"},
      {request(1, 1), "stale, 0 samples, version 0"},
      {request(2, 2), "stale, 0 samples, version 0"}, // lent to both at once
      {end_step(32), "late"},
      {result(1), "nothing"},
      {apply(), "round 1 by blend model"},
      {result(2), "copy model"},
      {apply(), "nothing due"},
      {due(), "due"}, // step 2 is what round 2 waits for
      {begin_step(), "into scratch"},
      {end_step(32), "late, copy model"},
      {apply(), "round 2 by blend model, then copy model"},
  });
}

TEST(send_buffer,
     the_round_of_the_step_just_finished_gets_the_model_fresh_after_a_later_round_read_it) {
  script worker(blending);
  worker.play({
      {begin_step(), "into scratch"},
      {end_step(32), "fresh, copy model"},
      {request(2, 2), "stale, 32 samples, version 0"},
      {request(1, 1), "fresh, 0 samples, version 0"},
      {request(3, 3), "stale, 0 samples, version 0"},
  });
}

// The deadlock rule: a wagma request waits only for the model of the step just finished, while a
// later step's round holds the buffer; it is answered fresh once that round has read it.
TEST(send_buffer,
     a_wagma_request_for_the_step_just_finished_waits_until_its_model_is_in_the_buffer) {
  script worker(blending);
  worker.play({
      {begin_step(), "into scratch"},
      {request(2, 2), "stale, 0 samples, version 0"},
      {end_step(32), "fresh"}, // step 1 was not late: round 2 averages step 2
      {request(1, 1), "waits"},
      {request(3, 3), "stale, 0 samples, version 0"}, // a later step: at once
      {result(2), "nothing"},
      {result(3), "copy model; round 1 gets fresh, 32 samples, version 0"},
      {apply(), "nothing due"},
      {result(1), "copy model"},
      {apply(), "round 1 by replace model, then copy model"},
      {due(), "due"},
      {begin_step(), "into scratch"},
      {end_step(32), "late, copy model"},
      {apply(), "round 2 by blend model, then copy model"},
  });
}

// Why wagma shares the buffer: two members of two overlapping rounds, asked in opposite orders.
// Lending to one round at a time, each holds back the round the other lent to, and neither round
// ever finishes (the other policies never put a worker in two rounds at once, so there the wait
// ends); shared, both answer both.
TEST(send_buffer, rounds_asked_in_opposite_orders_would_deadlock_unless_the_buffer_is_shared) {
  for (const auto family : {accumulating, discarding, averaging, blending}) {
    SCOPED_TRACE("family " + std::to_string(static_cast<int>(family)));
    const bool models = send_buffer(family).exchanges_models();
    std::vector<row> holding; // something to lend, and no step running
    if (!models)
      holding = {{begin_step(), "into the buffer"}, {end_step(32), "fresh"}};
    const std::string lent =
        models ? "stale, 0 samples, version 0" : "fresh, 32 samples, version 0";
    const std::string other = family == blending ? "stale, 0 samples, version 0" : "waits";
    script first(family);
    script second(family);
    first.play(holding);
    second.play(holding);
    first.play({{request(1, 1), lent}, {request(2, 2), other}});
    second.play({{request(2, 2), lent}, {request(1, 1), other}});
  }
}

// -- bookkeeping -------------------------------------------------------------------------------

TEST(send_buffer, a_contribution_names_the_workers_step_counter_and_an_adopted_state_continues) {
  send_buffer buffer(accumulating);
  buffer.adopt(5, 7);
  EXPECT_TRUE(buffer.begin_step());
  EXPECT_TRUE(buffer.computing());
  buffer.end_step(32);
  EXPECT_EQ(buffer.steps(), 6u);
  const auto given = buffer.on_request(1, 0);
  ASSERT_TRUE(given.has_value());
  EXPECT_EQ(given->step, 6u);
  EXPECT_EQ(given->version, 7u) << "computed on the parameters after 7 rounds";
  EXPECT_TRUE(buffer.owes_rounds());
  buffer.on_result(1);
  buffer.applied(1);
  EXPECT_FALSE(buffer.owes_rounds());
  EXPECT_EQ(buffer.rounds_applied(), 8u);
}

} // namespace
