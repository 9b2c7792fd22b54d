// What reading a checkpoint throws: job::start and spawn_job throw it for an unusable
// job_options::resume_from, and checkpoint::read_model and saved_settings (herd/saved_model.hpp)
// for any file that is not a usable checkpoint (docs/checkpoints.md).
#pragma once

#include <stdexcept>
#include <string>

namespace herd::checkpoint {

/// A file that is not a usable checkpoint: what() names the file and the problem.
class checkpoint_error : public std::runtime_error {
public:
  /// What kind of problem, for code to act on; the text is for people.
  enum class kind {
    unusable,    // not a checkpoint, damaged, or not one this run can take
    other_shape, // a sound checkpoint of a run of another structure: another model, algorithm,
                 // worker count, batch size, seed or data size (its parameters may still serve
                 // as a new run's start)
  };

  checkpoint_error(const std::string& file, const std::string& problem, kind what = kind::unusable);
  const std::string& file() const { return file_; }
  const std::string& problem() const { return problem_; }
  kind problem_kind() const { return kind_; }

private:
  std::string file_;
  std::string problem_;
  kind kind_;
};

} // namespace herd::checkpoint
