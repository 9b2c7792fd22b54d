// The service's record of its jobs: an actor that holds the jobs it was handed, hears their
// events (spawn_job subscribes it to each job actor), stops one when asked, and answers the HTTP
// threads' questions with JSON. The HTTP threads talk to it only by message. It keeps every running
// job and the latest finished ones (a finished job holds its final parameters: a service that kept
// them all would grow without end).
#pragma once

#include "herd/job_actor.hpp"

#include <caf/event_based_actor.hpp>
#include <caf/fwd.hpp>

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <tuple>
#include <utility>
#include <vector>

namespace job_service {

/// (add_atom, int id, herd::job_handle) -> bool: keep and follow a job just spawned.
using add_atom = caf::atom_constant<caf::atom("add")>;
/// (list_atom) -> (int http_status, std::string json): every job's status as a JSON array.
using list_atom = caf::atom_constant<caf::atom("list")>;
/// (show_atom, int id) -> (int http_status, std::string json)
using show_atom = caf::atom_constant<caf::atom("show")>;
/// (cancel_atom, int id) -> (int http_status, std::string json): stop a job early.
using cancel_atom = caf::atom_constant<caf::atom("cancel")>;
/// (cancel_all_atom) -> int: stop every running job (on shutdown); replies how many were running.
using cancel_all_atom = caf::atom_constant<caf::atom("cancelall")>;

class job_book : public caf::event_based_actor {
public:
  /// keep_finished: how many finished (or failed) jobs the book still answers for; older ones
  /// are forgotten, in the order they finished.
  job_book(caf::actor_config& config, int keep_finished);

  caf::behavior make_behavior() override;

private:
  struct entry {
    herd::job_handle handle;
    std::vector<std::pair<double, double>> accuracy; // (elapsed seconds, test accuracy)
    std::vector<std::string> notices;
    std::optional<std::uint64_t> finished_as; // the how-manieth job to finish, once it has
  };

  bool add(int id, herd::job_handle handle);
  std::tuple<int, std::string> list() const;
  std::tuple<int, std::string> show(int id) const;
  std::tuple<int, std::string> cancel(int id);
  int cancel_all();
  void evaluated(const herd::job_evaluation& event);
  void noticed(const herd::job_notice& event);
  void finished(const herd::job_finished& event);
  // Forgets the earliest finished jobs beyond keep_finished_.
  void forget_finished();
  std::tuple<int, std::string> not_found(int id) const;

  // The job named `name`, or the events of a job spawned but not added yet.
  entry& heard(const std::string& name);
  std::string status_json(int id, const entry& job) const;

  int keep_finished_;
  std::uint64_t jobs_finished_ = 0;
  std::map<int, entry> jobs_;
  std::map<std::string, entry> early_; // by job name, without a handle until it is added
};

} // namespace job_service
