// The parameter server of `async` (docs/algorithms.md, "Asynchronous parameter server"): it holds
// the parameters and the optimizer, applies each worker's gradient as it arrives, one at a time in
// the order they reach it, and hands the worker its parameters after that. `parameter_store` is
// the state and its rules, a plain class tested without an actor system; the actor
// (parameter_server.cpp) only carries messages to it.
//
// Messages the actor answers:
//   server_update   -> server_applied   apply a round's gradient (in the round's result buffer)
//                                       and overwrite that buffer with the parameters after it
//   snapshot_atom   -> parameter_snapshot   a copy of the parameters (what an evaluation reads)
#pragma once

#include "herd/model.hpp"
#include "herd/ops.hpp"
#include "herd/tensor.hpp"
#include "models/optimizer.hpp"

#include <caf/fwd.hpp>

#include <cstddef>
#include <cstdint>
#include <memory>
#include <vector>

namespace herd::actors {

class parameter_store {
public:
  /// The parameters start as every worker's do (starting_parameters: `initial` where set, else
  /// model.initial_parameters(init_seed)), and the optimizer is the workers' (the same kind and
  /// settings, its learning rate the server's), its state the server's alone. Everything lives in
  /// ops.memory().
  parameter_store(const models::model& model, std::uint64_t init_seed,
                  const models::optimizer_settings& optimizer, const kernels::ops& ops, int workers,
                  const std::shared_ptr<const std::vector<float>>& initial = nullptr);

  struct update {
    std::uint64_t version = 0;   // gradients applied so far, this one included
    std::uint64_t staleness = 0; // gradients others had applied since this worker last took the
                                 // parameters its gradient was computed on
  };

  /// One optimizer step with `gradient` from `worker` at the server's learning rate times
  /// `lr_scale` (train.lr-schedule's factor), then the parameters after it into `out` (which may
  /// be `gradient` itself: it is read before it is written).
  update apply(int worker, const float* gradient, float* out, float lr_scale);
  /// The parameters into `out`, applying nothing (a round whose member had nothing to give); the
  /// worker has them as of now.
  void hand_out(int worker, float* out);

  std::uint64_t version() const { return version_; }
  std::size_t parameter_count() const { return parameters_.size(); }
  /// A host copy of the parameters.
  std::vector<float> snapshot() const;

private:
  const kernels::ops* ops_;
  models::tensor parameters_;
  models::optimizer optimizer_;
  std::uint64_t version_ = 0;
  std::vector<std::uint64_t> handed_out_; // by worker: the version it last took (0: the initial)
};

struct parameter_server_setup {
  std::shared_ptr<const models::model> model;
  std::uint64_t init_seed = 1;
  std::shared_ptr<const std::vector<float>> initial_parameters; // null: from init_seed
  models::optimizer_settings optimizer;
  const kernels::ops* ops = nullptr; // borrowed; its memory must be the round results' pool's
  int workers = 1;
};

caf::actor spawn_parameter_server(caf::actor_system& system, parameter_server_setup setup);

} // namespace herd::actors
