// One training run across processes, coordinator side; see cluster_session.hpp.
#include "cluster/cluster_session.hpp"

#include "actors/checkpoint_state.hpp"
#include "actors/checkpoint_writer.hpp"
#include "actors/messages.hpp"
#include "actors/train_session.hpp"
#include "herd/config.hpp"

#include <caf/io/all.hpp>

#include <cstdio>
#include <iomanip>
#include <mutex>
#include <random>
#include <sstream>

#include "cluster/control_gate.hpp"
#include "cluster/end_of_run_waits.hpp"
#include "cluster/pause_watch.hpp"
#include "cluster/registry.hpp"
#include "cluster/remoting.hpp"

namespace herd::cluster {

// The actors of one process, which a cluster connects across processes.
using namespace herd::actors;

namespace {

// How a run ended, for the nodes' last line: "stopped by max-seconds after 0.62 epochs, 812
// rounds in 60.0 s; test accuracy 0.8531; final checkpoint ckpt/herd-...ckpt (on the
// coordinator)".
std::string ending_of(const run_summary& summary) {
  // "stopped by interrupted" and "stopped by error" would not read.
  const std::string how = summary.stop_reason == stop_cause::interrupted ? "interrupted"
                          : summary.stop_reason == stop_cause::error
                              ? "failed"
                              : std::string("stopped by ") + to_string(summary.stop_reason);
  char text[160];
  std::snprintf(text, sizeof text, " after %.2f epochs, %llu rounds in %.1f s", summary.epochs,
                static_cast<unsigned long long>(summary.rounds), summary.wall_seconds);
  std::string ending = how + text;
  if (const auto& accuracy = summary.final_validation_accuracy;
      summary.validation_samples > 0 && accuracy) {
    std::snprintf(text, sizeof text, "; validation accuracy %.4f", *accuracy);
    ending += text;
  }
  if (const auto& accuracy = summary.final_test_accuracy) {
    std::snprintf(text, sizeof text, "; test accuracy %.4f", *accuracy);
    ending += text;
  }
  if (!summary.final_checkpoint.empty())
    ending += "; final checkpoint " + summary.final_checkpoint + " (on the coordinator)";
  else if (!summary.final_checkpoint_error.empty())
    ending += "; final checkpoint NOT WRITTEN: " + summary.final_checkpoint_error;
  return ending;
}

std::string make_job_name() {
  std::random_device entropy;
  const auto value = (static_cast<std::uint64_t>(entropy()) << 32) ^ entropy();
  char text[32];
  std::snprintf(text, sizeof text, "herd-%016llx", static_cast<unsigned long long>(value));
  return text;
}

} // namespace

struct cluster_session::impl {
  std::shared_ptr<registry_context> context = std::make_shared<registry_context>();
  caf::actor_system_config system_config;
  std::unique_ptr<caf::actor_system> system;
  caf::actor registry;
  std::mutex server_mutex;                   // the gate's threads read `server`
  std::unique_ptr<connection_server> server; // hands CAF the connections the gate admits
  std::unique_ptr<gate_listener> gate;
  std::unique_ptr<pause_watch> watch; // says when this process stood still past the node timeout
  bool shut_down = false;

  // `failure`: why the run failed, which the nodes hear; empty where it ended well. `ending`: how
  // it ended, in words (empty where it never started).
  void shutdown(const std::string& failure, const std::string& ending = {}) {
    if (shut_down || !system)
      return;
    shut_down = true;
    watch.reset();
    if (registry) {
      {
        caf::scoped_actor self{*system};
        self->request(registry, job_over_round, job_over_atom::value, failure, ending)
            .receive([](bool) {}, [](caf::error&) {});
      }
      // Refusals and the job's end are on their way through the gate: let the nodes read them
      // and leave before the connections go.
      if (gate)
        gate->drain(gate_drain);
      gate.reset();
      // The published registry must go before the system, or its destructor waits forever.
      server.reset();
      caf::anon_send_exit(registry, caf::exit_reason::user_shutdown);
      registry = nullptr;
    }
    system->await_all_actors_done();
  }
};

std::vector<config::config_error> cluster_refusals(const config::run_config& config) {
  std::vector<config::config_error> refused;
  if (config.train.backend != "cpu")
    refused.push_back(
        {"train.backend",
         "train.backend = " + config.train.backend +
             ": across processes (herd coordinator / herd node) workers compute on the CPU; the "
             "GPU data plane (NCCL) is not part of the cluster yet. Run `herd train` for a GPU"});
  if (config.train.algorithm == "async")
    refused.push_back(
        {"train.algorithm",
         std::string("train.algorithm = async: its parameter server lives in one process, and a "
                     "round's gradient cannot reach it from another node yet; run async with "
                     "`herd train`")});
  return refused;
}

cluster_session::cluster_session(config::run_config config,
                                 std::shared_ptr<const models::train_test_split> data,
                                 cluster_options options)
    : impl_(std::make_unique<impl>()) {
  if (auto errors = config::validate_run(config); !errors.empty())
    throw config::invalid_config(std::move(errors));
  if (auto refused = cluster_refusals(config); !refused.empty())
    throw config::invalid_config(std::move(refused));
  auto& context = *impl_->context;
  context.config = std::move(config);
  context.data = std::move(data);
  context.options = std::move(options);
  context.result = std::make_shared<run_outcome>();
  context.job = make_job_name();
  context.resume = context.options.resume;
  context.resume_file = context.options.resume_file;
  if (context.config.checkpoint.enabled())
    context.checkpoint_lock = // throws naming the holder
        lock_checkpoint_dir(context.config, context.resume_file, "--resume");
  configure_remoting(impl_->system_config, context.config.cluster);
  impl_->system = std::make_unique<caf::actor_system>(impl_->system_config);
  impl_->registry = spawn_registry(*impl_->system, impl_->context);
  // CAF listens on nothing: the gate owns the public address and hands CAF each connection it
  // admitted (control_gate.hpp). The registry is published once the gate's port is known.
  const auto& listen = context.options.listen_host;
  try {
    auto* observer = context.options.observer;
    impl_->gate = std::make_unique<gate_listener>(
        listen, context.options.port, gate_settings_of(context.config.cluster),
        [this](admitted_connection connection) {
          std::lock_guard<std::mutex> guard(impl_->server_mutex);
          return impl_->server && impl_->server->serve(std::move(connection));
        },
        [observer](const std::string& why) {
          if (observer != nullptr)
            observer->on_notice(why);
        });
    std::lock_guard<std::mutex> guard(impl_->server_mutex);
    impl_->server =
        std::make_unique<connection_server>(*impl_->system, impl_->registry, impl_->gate->port());
    // Nodes count a silent coordinator lost after their timeout, and it counts them lost as it
    // resumes: its log must say whose silence it was.
    const auto timeout_ms = context.config.cluster.node_timeout_ms;
    if (observer != nullptr)
      impl_->watch = std::make_unique<pause_watch>(
          std::chrono::milliseconds(timeout_ms), [observer, timeout_ms](double seconds) {
            std::ostringstream text;
            text << std::fixed << std::setprecision(1) << "this coordinator stood still for "
                 << seconds << " s (stopped, paused or starved of CPU), past "
                 << "cluster.node-timeout-ms = " << timeout_ms
                 << ": the nodes it counts lost now were likely healthy; those with "
                    "cluster.rejoin-s join again";
            observer->on_notice(text.str());
          });
  } catch (const std::exception& failure) {
    impl_->gate.reset();
    caf::anon_send_exit(impl_->registry, caf::exit_reason::user_shutdown);
    impl_->registry = nullptr;
    impl_->system->await_all_actors_done();
    if (dynamic_cast<const config::invalid_config*>(&failure) != nullptr)
      throw; // a TLS file: its key names it, not the address
    throw std::runtime_error("cannot listen on " + listen + ":" +
                             std::to_string(context.options.port) + ": " + failure.what());
  }
}

cluster_session::~cluster_session() {
  if (!impl_->shut_down) {
    request_stop();
    wait_for(std::chrono::seconds(60));
  }
  impl_->shutdown("the coordinator ended before its run did");
}

std::uint16_t cluster_session::port() const {
  return impl_->gate ? impl_->gate->port() : 0;
}

int cluster_session::connections() const {
  return impl_->gate ? impl_->gate->connections() : 0;
}

void cluster_session::request_stop() {
  if (impl_->registry && !impl_->shut_down)
    caf::anon_send(impl_->registry, stop_atom::value);
}

std::optional<run_summary> cluster_session::wait_for(std::chrono::milliseconds timeout) {
  auto& result = *impl_->context->result;
  if (!result.wait_for(timeout))
    return std::nullopt;
  auto summary = result.summary();
  if (summary && summary->started)
    impl_->shutdown(summary->error, ending_of(*summary));
  else
    impl_->shutdown({});
  return summary;
}

bool cluster_session::started() const {
  return impl_->context->started.load();
}

config::run_config cluster_session::effective_config() const {
  std::lock_guard<std::mutex> guard(impl_->context->config_mutex);
  return impl_->context->config;
}

} // namespace herd::cluster

namespace herd::cluster {

loaded_cluster_checkpoint load_cluster_checkpoint(const config::run_config& config,
                                                  const models::train_test_split& data,
                                                  const std::string& path) {
  loaded_cluster_checkpoint loaded;
  loaded.file = checkpoint::resolve(path);
  // The nodes bring the workers; their number is the checkpoint's, everything else must agree.
  auto shaped = config;
  shaped.train.workers = checkpoint::read_file(loaded.file).head.shape.workers;
  const auto model = actors::make_model(shaped, data.train);
  auto state = std::make_shared<actors::run_checkpoint>(
      actors::load_for_resume(loaded.file, actors::structure_of(shaped, *model, data.train.size()),
                              model->parameter_count()));
  actors::check_same_optimizer(loaded.file, *state, config);
  actors::check_policy_state(loaded.file, *state, shaped);
  actors::check_same_evaluation_set(loaded.file, *state, config, data);
  if (!state->across_processes())
    throw checkpoint::checkpoint_error(loaded.file,
                                       "was written by herd train (one process): resume it with "
                                       "herd train --resume");
  loaded.workers = shaped.train.workers;
  loaded.state = std::move(state);
  return loaded;
}

} // namespace herd::cluster
