// The parameter server; see parameter_server.hpp.
#include "actors/parameter_server.hpp"

#include "actors/messages.hpp"
#include "actors/worker.hpp"
#include "kernels/check.hpp"

#include <algorithm>

namespace herd::actors {

parameter_store::parameter_store(const models::model& model, std::uint64_t init_seed,
                                 const models::optimizer_settings& optimizer,
                                 const kernels::ops& ops, int workers,
                                 const std::shared_ptr<const std::vector<float>>& initial)
    : ops_(&ops), parameters_(starting_parameters(model, init_seed, initial), ops.memory()),
      optimizer_(model.parameter_count(), optimizer, ops.memory()),
      handed_out_(static_cast<std::size_t>(std::max(workers, 0)), 0) {}

parameter_store::update parameter_store::apply(int worker, const float* gradient, float* out,
                                               float lr_scale) {
  HERD_CHECK(worker >= 0 && static_cast<std::size_t>(worker) < handed_out_.size(),
             "a gradient from worker " << worker << " of " << handed_out_.size());
  auto& taken = handed_out_[static_cast<std::size_t>(worker)];
  update applied;
  applied.staleness = version_ - taken;
  optimizer_.scale_learning_rate(lr_scale);
  optimizer_.step(*ops_, parameters_.data(), gradient);
  applied.version = ++version_;
  ops_->copy(out, parameters_.data(), parameters_.size());
  ops_->synchronize(); // the worker reads `out` on its own stream once the answer is out
  taken = version_;
  return applied;
}

void parameter_store::hand_out(int worker, float* out) {
  HERD_CHECK(worker >= 0 && static_cast<std::size_t>(worker) < handed_out_.size(),
             "parameters for worker " << worker << " of " << handed_out_.size());
  ops_->copy(out, parameters_.data(), parameters_.size());
  ops_->synchronize();
  handed_out_[static_cast<std::size_t>(worker)] = version_;
}

std::vector<float> parameter_store::snapshot() const {
  std::vector<float> copy(parameters_.size());
  ops_->download(copy.data(), parameters_.data(), copy.size() * sizeof(float));
  return copy;
}

namespace {

// One message at a time, in mailbox order: that is what makes the server apply the gradients one
// by one in the order they reach it.
class parameter_server_actor : public caf::event_based_actor {
public:
  parameter_server_actor(caf::actor_config& config, parameter_server_setup setup)
      : caf::event_based_actor(config), model_(std::move(setup.model)),
        store_(*model_, setup.init_seed, setup.optimizer, *setup.ops, setup.workers,
               setup.initial_parameters) {}

  const char* name() const override { return "herd.parameter_server"; }

  caf::behavior make_behavior() override {
    return {
        [this](const server_update& update) { return on_update(update); },
        [this](snapshot_atom) { return on_snapshot(); },
    };
  }

private:
  caf::result<server_applied> on_update(const server_update& update) {
    if (!update.buffer || update.buffer->size() != store_.parameter_count())
      return caf::make_error(caf::sec::invalid_argument,
                             "parameter server: a buffer of " +
                                 std::to_string(update.buffer ? update.buffer->size() : 0) +
                                 " floats for " + std::to_string(store_.parameter_count()) +
                                 " parameters");
    try {
      server_applied answer;
      if (update.apply) {
        const auto applied = store_.apply(update.worker, update.buffer->data(),
                                          update.buffer->data(), update.lr_scale);
        answer = {applied.version, applied.staleness, true};
      } else {
        store_.hand_out(update.worker, update.buffer->data());
        answer = {store_.version(), 0, false};
      }
      return answer;
    } catch (const std::exception& failure) {
      return caf::make_error(caf::sec::runtime_error,
                             std::string("parameter server: ") + failure.what());
    }
  }

  parameter_snapshot on_snapshot() const {
    return parameter_snapshot{-1, store_.version(),
                              std::make_shared<const std::vector<float>>(store_.snapshot())};
  }

  std::shared_ptr<const models::model> model_;
  parameter_store store_;
};

} // namespace

caf::actor spawn_parameter_server(caf::actor_system& system, parameter_server_setup setup) {
  HERD_CHECK(setup.model && setup.ops, "a parameter server needs a model and ops");
  return system.spawn<parameter_server_actor>(std::move(setup));
}

} // namespace herd::actors
