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
  checkpoint_error(const std::string& file, const std::string& problem);
  const std::string& file() const { return file_; }
  const std::string& problem() const { return problem_; }

private:
  std::string file_;
  std::string problem_;
};

} // namespace herd::checkpoint
