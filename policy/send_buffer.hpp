// A worker's send buffer as a plain state machine: what it holds, which rounds it is lent to,
// what a contribution request gets and whether it waits, and when a step or a round's result is
// due (docs/algorithms.md). It keeps flags, counters and round numbers; the worker keeps the
// tensors and writes them as it is told.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <set>

#include "policy/policy.hpp"

namespace herd::policy {

/// How a run's algorithm uses the send buffer; chosen once, for the whole run. A step's result
/// is late when a round asked for a contribution while the step ran (wagma: when a round of that
/// step asked before it finished); a fresh one waits in the buffer, and the next step waits for
/// the round that takes it.
enum class send_buffer_family : std::uint8_t {
  accumulating_gradients, // sync, solo, majority, quorum: a late gradient goes with the next round
  discarding_gradients,   // the same with late-gradients = discard: a late gradient is dropped
  scaling_gradients,      // the same with late-gradients = scale: a late gradient goes with the
                          // next round weighted late_gradient_weight(rounds it missed)
  averaging_models,       // preduce: the model stays in the buffer (stale); a result replaces it
  blending_models,        // wagma: a late member blends its round's result into its new model
  blending_every_model,   // wagma.blend = reference: as blending_models, and an on-time member
                          // blends the result into its own model too, (sum + own) / (S + 1)
  server_gradients,       // async: gradients as accumulating_gradients, but a round's result is
                          // the parameter server's parameters, which replace the model
};

/// The family of actors::worker_setup's switches.
send_buffer_family send_buffer_family_of(bool exchange_models, bool blend_late_models,
                                         late_gradients late, bool blend_on_time_models = false,
                                         bool server_parameters = false);

/// What the worker writes into its send buffer.
enum class buffer_write : std::uint8_t { none, copy_gradient, add_gradient, copy_model };

/// How a round's result changes the model (blend: wagma's late member, or under the reference
/// blend every member, (sum + own) / (S + 1) with own its model when it applies the result).
enum class result_use : std::uint8_t { optimizer_step, replace_model, blend_model };

/// A contribution request's answer. Unless `kind` is none, the buffer is lent to `round` until
/// that round's result arrives (the data plane reads it in place).
struct loan {
  std::uint64_t round = 0;
  freshness kind = freshness::none;
  std::uint32_t samples = 0; // samples behind the gradients lent
  std::uint64_t version = 0; // rounds applied to the parameters the oldest of them was computed on
  std::uint64_t step = 0;    // the worker's step counter
  bool in_backward = false;  // an announced step's gradient, which backward still writes
};

class send_buffer {
public:
  /// `global_every` (blending_every_model): the steps whose rounds are global averages
  /// (wagma.sync-every), whose result every member takes as it is, so all leave with one model.
  explicit send_buffer(send_buffer_family family, std::uint64_t global_every = 0);
  /// A buffer to load a checkpointed one into (serialize()).
  send_buffer() : send_buffer(send_buffer_family::accumulating_gradients) {}

  /// A request for `round`, which averages local step `step` (wagma; 0 otherwise). Empty: it
  /// waits, and answer_waiting() answers it after a release.
  std::optional<loan> on_request(std::uint64_t round, std::uint64_t step);
  /// The deadlock rule. Gradients and preduce lend the buffer to one round at a time: a request
  /// for another round waits for the release, so that a result finished meanwhile goes with it
  /// (their policies never put a worker in two rounds at once, so the earlier one has finished).
  /// wagma cannot: rounds of consecutive steps overlap, come from different aggregators in any
  /// order and share members, so two members each lending to a different round and holding the
  /// other's request would wait for each other for ever. There the buffer is lent to several
  /// rounds at once (reductions only read it), and only the request for the step just finished
  /// waits while that step's model is not in the buffer yet; such waits climb to later steps,
  /// whose rounds are answered at once, so they end.
  bool must_wait(std::uint64_t round, std::uint64_t step) const;
  /// The first waiting request, answered, once the rule lets it through.
  std::optional<loan> answer_waiting();

  /// No step runs, no fresh result waits for its round or for the buffer, no blend is missing.
  bool step_due() const;
  /// True: the step writes its gradient straight into the buffer (empty, not lent), else into
  /// the scratch buffer.
  bool begin_step();
  /// Gradient buckets: the running step, which writes its gradient straight into the buffer, is
  /// announced with its batch's `samples` once backward has begun to make the gradient final.
  /// The next round that asks before the step ends takes that gradient, fresh, while the pass
  /// still writes it (the data plane reads each part once it is final, comm::gradient_marks),
  /// and the step is not late. False, nothing announced: the step writes into the scratch
  /// buffer, a round already asked while it ran (a partial algorithm's: the step is late), or
  /// the family exchanges models or takes the server's parameters.
  bool announce(std::uint32_t samples);
  /// The running step was announced (and its report must say so).
  bool announced() const { return announced_; }
  struct step_end {
    bool late = false;
    buffer_write write = buffer_write::none; // a model: after the worker's own optimizer step
    /// scaling_gradients' late gradient: multiply it by this where it lies (the send buffer when
    /// begin_step() said so, else the scratch buffer) before the write.
    float scale = 1.0f;
  };
  step_end end_step(std::uint32_t samples);

  /// What to write once the last round reading the buffer has sent its result.
  buffer_write on_result(std::uint64_t round);
  struct application {
    std::uint64_t round = 0;
    result_use use = result_use::optimizer_step;
  };
  /// The round to apply next once its result is here: in round order, between steps, and a
  /// round this worker was late for once that step finished.
  std::optional<application> next_application() const;
  void applied(std::uint64_t round);
  /// After results changed the model: the stored model a round gets during the next step.
  buffer_write after_model_changed() const {
    const bool stored = exchanges_models() && lent_to_.empty() && held_ != freshness::fresh;
    return stored ? buffer_write::copy_model : buffer_write::none;
  }

  /// Before the first step: continue from a peer's step counter and rounds applied.
  void adopt(std::uint64_t steps, std::uint64_t rounds_applied) {
    steps_ = steps;
    rounds_applied_ = rounds_applied;
  }
  bool exchanges_models() const {
    return family_ == send_buffer_family::averaging_models || blends_late_models();
  }
  /// wagma's families: a late member blends its round's result in once its step finishes.
  bool blends_late_models() const {
    return family_ == send_buffer_family::blending_models ||
           family_ == send_buffer_family::blending_every_model;
  }
  /// async: a round's result is the parameter server's parameters, not a gradient to apply.
  bool takes_server_parameters() const { return family_ == send_buffer_family::server_gradients; }
  bool computing() const { return computing_; }
  std::uint64_t steps() const { return steps_; }
  std::uint64_t rounds_applied() const { return rounds_applied_; }
  bool owes_rounds() const { return !member_of_.empty(); } // answered, not applied yet
  /// Gradients no round took, in the buffer and in the scratch buffer (models: none).
  bool unsent_in_buffer() const {
    return !exchanges_models() && !computing_into_buffer_ && held_ != freshness::none;
  }
  bool unsent_in_scratch() const { return !exchanges_models() && waiting_fold_.has_value(); }
  send_buffer_family family() const { return family_; }
  /// Nothing lent, requested or half-done, and every round answered applied but those a wagma
  /// worker blends in after a step it has not begun: the state a checkpoint of the worker may
  /// take (the coordinator starts no round while it waits for one).
  bool at_rest() const;
  /// Rounds answered and not applied yet.
  const std::set<std::uint64_t>& owed_rounds() const { return member_of_; }

  /// Every field, for checkpoints (a cereal archive; the caller includes cereal's types).
  template <class Archive>
  void serialize(Archive& archive) {
    archive(family_, steps_, rounds_applied_, computing_, computing_into_buffer_, rounds_missed_,
            fresh_outstanding_, held_, held_samples_, held_version_, step_version_, waiting_fold_,
            lent_to_, waiting_, late_rounds_, awaiting_round_, member_of_, global_every_,
            on_time_blends_);
  }

private:
  struct finished_result {
    bool fresh = false;
    std::uint32_t samples = 0;
    std::uint64_t version = 0;

    template <class Archive>
    void serialize(Archive& archive) {
      archive(fresh, samples, version);
    }
  };

  loan lend(std::uint64_t round, std::uint64_t step);
  buffer_write fold();

  send_buffer_family family_;
  std::uint64_t steps_ = 0;          // local steps finished
  std::uint64_t rounds_applied_ = 0; // the parameters' version
  bool computing_ = false;
  bool computing_into_buffer_ = false;
  std::uint32_t rounds_missed_ = 0;  // rounds that asked while the running step ran: it is late
  bool fresh_outstanding_ = false;   // a fresh result whose round has not been applied yet
  freshness held_ = freshness::none; // what a contribution gets now
  std::uint32_t held_samples_ = 0;
  std::uint64_t held_version_ = 0;
  std::uint64_t step_version_ = 0;                 // the running (or last) step's parameters
  std::optional<finished_result> waiting_fold_;    // in the scratch buffer (models: the parameters)
  std::set<std::uint64_t> lent_to_;                // rounds whose reduction may still read it
  std::map<std::uint64_t, std::uint64_t> waiting_; // requests held back: round -> step
  std::map<std::uint64_t, std::uint64_t> late_rounds_; // wagma: round -> step it blends into
  std::optional<std::uint64_t> awaiting_round_;        // the round that took the fresh result
  std::set<std::uint64_t> member_of_;                  // rounds answered, not applied yet
  std::uint64_t global_every_ = 0;         // blending_every_model: steps of the global averages
  std::set<std::uint64_t> on_time_blends_; // blending_every_model: rounds answered on time (or
                                           // ahead) whose result is blended in at once
  // announce(): only while a step runs, so never in a checkpoint (taken at rest) and not saved.
  bool announced_ = false;
  bool announced_lent_ = false; // a round took the announced step's gradient
  std::uint32_t announced_samples_ = 0;
};

} // namespace herd::policy
