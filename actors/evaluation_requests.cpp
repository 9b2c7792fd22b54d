// The requests behind an evaluation; see evaluation_requests.hpp.
#include "actors/evaluation_requests.hpp"

#include "actors/evaluation_schedule.hpp"
#include "actors/messages.hpp"

#include <chrono>

namespace herd::actors {

namespace {

// Test evaluations of 10k samples take well under a minute even on one slow core.
constexpr std::chrono::minutes evaluation_timeout{10};
constexpr std::chrono::seconds snapshot_timeout{30};

} // namespace

void request_snapshot(caf::event_based_actor& self, const std::vector<caf::actor>& sources,
                      const evaluation_point& point, snapshot_taken then, snapshot_failed failed) {
  if (sources.empty()) {
    failed("no live worker to evaluate");
    return;
  }
  auto gathered = std::make_shared<replica_mean>(sources.size());
  auto answered = [gathered, point, then, failed](bool last) {
    if (last && gathered->any())
      then(point, gathered->mean());
    else if (last)
      failed(gathered->failure());
  };
  for (const auto& source : sources)
    self.request(source, snapshot_timeout, snapshot_atom::value)
        .then(
            [gathered, answered](const parameter_snapshot& snapshot) {
              answered(gathered->add(*snapshot.parameters));
            },
            [&self, gathered, answered](caf::error& failure) {
              answered(gathered->fail(self.system().render(failure)));
            });
}

void request_evaluation(caf::event_based_actor& self, const caf::actor& evaluator,
                        evaluation_point point, parameters_ptr parameters, evaluated on_result,
                        measured_set set) {
  auto answered = [&self, point, parameters, on_result](auto&& response) {
    response.then(
        [point, parameters, on_result](const evaluation_result& result) mutable {
          point.test_accuracy = result.test_accuracy;
          point.test_loss = result.test_loss;
          on_result(point, parameters, std::string{});
        },
        [&self, on_result](caf::error& failure) {
          on_result(std::nullopt, nullptr, self.system().render(failure));
        });
  };
  const parameter_snapshot snapshot{-1, 0, parameters};
  if (set == measured_set::test)
    answered(self.request(evaluator, evaluation_timeout, evaluate_atom::value, test_set_atom::value,
                          snapshot));
  else
    answered(self.request(evaluator, evaluation_timeout, evaluate_atom::value, snapshot));
}

} // namespace herd::actors
