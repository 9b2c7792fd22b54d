// The service's record of its jobs; see job_book.hpp.
#include "job_book.hpp"

#include <caf/all.hpp>

#include <algorithm>
#include <nlohmann/json.hpp>

namespace job_service {

namespace {

constexpr std::size_t max_curve_points = 1000; // an accuracy curve's points, at most

nlohmann::json optional_number(const std::optional<double>& value) {
  return value ? nlohmann::json(*value) : nlohmann::json(nullptr);
}

} // namespace

job_book::job_book(caf::actor_config& config, int keep_finished)
    : caf::event_based_actor(config), keep_finished_(keep_finished) {}

caf::behavior job_book::make_behavior() {
  // A job actor exits once its subscribers have heard job_finished; nothing else to do then.
  set_down_handler([](const caf::down_msg&) {});
  return {
      [this](add_atom, int id, herd::job_handle& handle) { return add(id, std::move(handle)); },
      [this](list_atom) { return list(); },
      [this](show_atom, int id) { return show(id); },
      [this](cancel_atom, int id) { return cancel(id); },
      [this](cancel_all_atom) { return cancel_all(); },
      [this](const herd::job_evaluation& event) { evaluated(event); },
      [this](const herd::job_notice& event) { noticed(event); },
      [this](const herd::job_finished& event) { finished(event); },
      // Progress events are not kept: status() reads the job's latest on request.
      [](const herd::job_progress&) {},
  };
}

bool job_book::add(int id, herd::job_handle handle) {
  if (jobs_.count(id) != 0)
    return false;
  monitor(handle.actor);
  // Subscribed by spawn_job (main.cpp): its first events may have come before it was added.
  auto& job = jobs_[id];
  if (auto early = early_.find(handle.facade->name()); early != early_.end()) {
    job = std::move(early->second);
    early_.erase(early);
  }
  job.handle = std::move(handle);
  forget_finished(); // it may have finished before it was added
  return true;
}

std::tuple<int, std::string> job_book::list() const {
  nlohmann::json all = nlohmann::json::array();
  for (const auto& [id, job] : jobs_)
    all.push_back(nlohmann::json::parse(status_json(id, job)));
  return {200, all.dump()};
}

std::tuple<int, std::string> job_book::show(int id) const {
  const auto found = jobs_.find(id);
  if (found == jobs_.end())
    return not_found(id);
  return {200, status_json(id, found->second)};
}

std::tuple<int, std::string> job_book::cancel(int id) {
  const auto found = jobs_.find(id);
  if (found == jobs_.end())
    return not_found(id);
  // By message, as any actor of the service would; a job that has ended ignores it.
  send(found->second.handle.actor, herd::stop_job_atom::value);
  return {202, status_json(id, found->second)};
}

int job_book::cancel_all() {
  int running = 0;
  for (auto& [id, job] : jobs_) {
    const auto state = job.handle.facade->status().state;
    if (state == herd::job_state::finished || state == herd::job_state::failed)
      continue;
    send(job.handle.actor, herd::stop_job_atom::value);
    ++running;
  }
  return running;
}

void job_book::evaluated(const herd::job_evaluation& event) {
  auto& curve = heard(event.job).accuracy;
  // A long job evaluates without end: at its bound the curve keeps its first point and every
  // other one after it, so that it still spans the whole run (the older part the sparser).
  if (curve.size() == max_curve_points) {
    for (std::size_t kept = 1; kept < curve.size() / 2; ++kept)
      curve[kept] = curve[2 * kept];
    curve.resize(curve.size() / 2);
  }
  curve.emplace_back(event.evaluation.elapsed_seconds, event.evaluation.test_accuracy);
}

void job_book::noticed(const herd::job_notice& event) {
  heard(event.job).notices.push_back(event.text);
}

void job_book::finished(const herd::job_finished& event) {
  caf::aout(this) << "job_service: " << event.job << " " << herd::to_string(event.status.state)
                  << (event.summary
                          ? " (" +
                                std::string(herd::actors::to_string(event.summary->stop_reason)) +
                                ")"
                          : std::string())
                  << "\n"; // a string: CAF's actor_ostream prints a char as its number
  heard(event.job).finished_as = ++jobs_finished_;
  forget_finished();
}

void job_book::forget_finished() {
  std::vector<std::pair<std::uint64_t, int>> finished; // (finished_as, id), earliest first
  for (const auto& [id, job] : jobs_)
    if (job.finished_as)
      finished.emplace_back(*job.finished_as, id);
  if (finished.size() <= static_cast<std::size_t>(keep_finished_))
    return;
  std::sort(finished.begin(), finished.end());
  finished.resize(finished.size() - static_cast<std::size_t>(keep_finished_));
  for (const auto& [order, id] : finished) {
    demonitor(jobs_[id].handle.actor);
    jobs_.erase(id);
  }
}

std::tuple<int, std::string> job_book::not_found(int id) const {
  return {404,
          nlohmann::json({{"error", "no job " + std::to_string(id) + " (the service keeps its " +
                                        std::to_string(keep_finished_) +
                                        " latest finished jobs: --keep-finished)"}})
              .dump()};
}

job_book::entry& job_book::heard(const std::string& name) {
  for (auto& [id, job] : jobs_)
    if (job.handle.facade->name() == name)
      return job;
  return early_[name];
}

std::string job_book::status_json(int id, const entry& job) const {
  const herd::job_status status = job.handle.facade->status();
  nlohmann::json out = {
      {"id", id},
      {"name", status.name},
      {"state", herd::to_string(status.state)},
      {"rounds", status.rounds},
      {"steps", status.steps},
      {"epochs_done", status.epochs_done},
      {"epochs_total", status.epochs_total},
      {"progress", status.epochs_total > 0.0 ? std::min(1.0, status.epochs_done / status.epochs_total)
                                             : 0.0},
      {"elapsed_seconds", status.elapsed_seconds},
      {"test_accuracy", optional_number(status.test_accuracy)},
      {"straggler", status.straggler ? nlohmann::json({{"worker", status.straggler->worker},
                                                      {"score", status.straggler->score}})
                                     : nlohmann::json(nullptr)},
  };
  if (!status.error.empty())
    out["error"] = status.error;
  nlohmann::json curve = nlohmann::json::array();
  for (const auto& [seconds, accuracy] : job.accuracy)
    curve.push_back({seconds, accuracy});
  out["accuracy_over_time"] = curve;
  out["notices"] = job.notices;
  if (const auto summary = job.handle.facade->summary()) {
    out["stop_reason"] = herd::actors::to_string(summary->stop_reason);
    out["final_test_accuracy"] = optional_number(summary->final_test_accuracy);
    out["wall_seconds"] = summary->wall_seconds;
    out["samples_per_second"] = summary->samples_per_second;
  }
  return out.dump();
}

} // namespace job_service
