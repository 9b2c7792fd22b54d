// Spawning the run a job actor supervises; see job_parts.hpp.
#include "actors/job_parts.hpp"

#include "actors/aggregator.hpp"
#include "actors/control_costs.hpp"
#include "actors/evaluator.hpp"
#include "actors/group_coordinator.hpp"
#include "actors/job_plan.hpp"
#include "actors/parameter_server.hpp"
#include "actors/run_parts.hpp"
#include "actors/step_inbox.hpp"
#include "actors/worker.hpp"
#include "comm/buffer_pool.hpp"

#include <initializer_list>

namespace herd::actors {

namespace {

/// Hands the coordinator's events (its thread) to the job actor as messages. Holds the job
/// actor weakly: the coordinator must not keep the job alive.
class forwarding_observer : public run_observer {
public:
  forwarding_observer(caf::actor_addr job, std::string name)
      : job_(std::move(job)), name_(std::move(name)) {}

  void on_progress(const progress& now) override { tell(job_progress{name_, now}); }
  void on_evaluation(const evaluation_point& point) override { tell(job_evaluation{name_, point}); }
  void on_notice(std::string_view text) override { tell(job_notice{name_, std::string(text)}); }

  template <class Message>
  void tell(Message message) const {
    if (auto job = caf::actor_cast<caf::actor>(job_))
      caf::anon_send(job, std::move(message));
  }

private:
  caf::actor_addr job_;
  std::string name_;
};

} // namespace

void spawn_parts(caf::actor_system& system, const std::shared_ptr<job_plan>& plan,
                 const caf::actor& job) {
  job_parts parts;
  auto shut_down = [&] {
    plan->shared->abandoned.store(true);
    for (const auto& part : parts.run.workers)
      caf::anon_send_exit(part, caf::exit_reason::user_shutdown);
    for (const auto& part : parts.run.aggregators)
      caf::anon_send_exit(part, caf::exit_reason::user_shutdown);
    for (const caf::actor* part : std::initializer_list<const caf::actor*>{
             &parts.run.evaluator, &parts.run.parameter_server, &parts.coordinator, &job})
      if (*part)
        caf::anon_send_exit(*part, caf::exit_reason::user_shutdown);
  };
  // Every part holds the plan until its cleanup: what it borrows outlives the job actor.
  auto hold_plan = [&plan](const caf::actor& part) {
    part->attach_functor([plan] {});
    return part;
  };
  try {
    const auto& config = plan->config;
    const auto& options = plan->setup.session;
    const auto& train = config.train;

    auto observer = std::make_shared<forwarding_observer>(job.address(), plan->name);
    coordinator_setup coordination = plan->coordination(observer.get());
    const auto costs = std::make_shared<control_costs>(options.control_costs_in_cpu_time
                                                           ? control_costs::clock_kind::thread_cpu
                                                           : control_costs::clock_kind::wall);
    coordination.costs = costs;
    const auto inbox = std::make_shared<step_inbox>(); // the workers' reports, posted
    coordination.inbox = inbox;
    // The coordinator keeps the observer (its raw pointer above) alive through this function.
    coordination.on_finished = [observer](run_summary summary, auto kept) {
      observer->tell(run_ended{std::make_shared<const run_summary>(std::move(summary)), kept});
    };
    parts.coordinator = hold_plan(spawn_group_coordinator(system, std::move(coordination)));

    // One copy of the starting parameters, shared by every replica's setup.
    const auto initial =
        options.initial_parameters.empty()
            ? nullptr
            : std::make_shared<const std::vector<float>>(options.initial_parameters);
    if (policy::make_policy(config)->applies_at_server()) {
      parameter_server_setup serving;
      serving.model = plan->model;
      serving.init_seed = train.seed;
      serving.initial_parameters = initial;
      serving.optimizer = server_optimizer_of(config);
      serving.ops = plan->compute.serve;
      serving.workers = train.workers;
      parts.run.parameter_server = hold_plan(spawn_parameter_server(system, std::move(serving)));
    }
    aggregator_setup aggregation;
    aggregation.costs = costs;
    aggregation.buckets = gradient_buckets(config, *plan->model);
    aggregation.parameter_server = parts.run.parameter_server;
    aggregation.plane = plan->plane;
    aggregation.results =
        comm::buffer_pool::create(plan->model->parameter_count(), plan->compute.reduce->memory());
    for (int i = 0; i < aggregator_count(config); ++i)
      parts.run.aggregators.push_back(
          hold_plan(spawn_aggregator(system, aggregation, parts.coordinator)));

    parts.run.evaluator = hold_plan(
        spawn_evaluator(system, evaluator_of(plan->model, plan->data, *plan->compute.evaluate)));

    const auto train_data = std::shared_ptr<const models::dataset>(plan->data, &plan->data->train);
    auto imbalance = std::make_shared<const imbalance_model>(config.imbalance, train.workers);
    for (int index = 0; index < train.workers; ++index) {
      const auto slot = static_cast<std::size_t>(index);
      auto setup =
          make_worker_setup(config, index, plan->model, train_data, plan->compute.step[slot],
                            plan->plane, imbalance, options.probe);
      setup.apply_ops = plan->compute.apply[slot];
      setup.initial_parameters = initial;
      setup.inbox = inbox;
      if (options.resume)
        setup.resume =
            std::shared_ptr<const worker_record>(options.resume, &options.resume->workers[slot]);
      parts.run.workers.push_back(
          hold_plan(spawn_worker(system, std::move(setup), parts.coordinator)));
    }
  } catch (...) {
    shut_down();
    throw;
  }
  caf::anon_send(job, std::move(parts));
}

} // namespace herd::actors
