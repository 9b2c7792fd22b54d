// The in-process data plane: group reductions read the workers' send buffers in place.
#include "comm/backend.hpp"

#include <mutex>
#include <shared_mutex>
#include <unordered_map>

namespace herd::comm {

namespace {

// A local reduction finishes before group_reduce returns.
class completed_work final : public work {
public:
  explicit completed_work(std::string error) : error_(std::move(error)) {}
  bool wait(std::chrono::milliseconds) override { return true; }
  bool is_completed() const override { return true; }
  std::string error() const override { return error_; }

private:
  std::string error_;
};

class local_backend final : public backend {
public:
  explicit local_backend(const kernels::ops& ops) : ops_(ops) {}

  std::string_view name() const override { return "local"; }

  void attach(int rank, const float* send_buffer, std::size_t count) override {
    std::unique_lock<std::shared_mutex> exclusive(mutex_);
    buffers_[rank] = {send_buffer, count};
  }

  // Waits for reductions in flight: they may be reading the buffer its owner is about to free.
  void detach(int rank) override {
    std::unique_lock<std::shared_mutex> exclusive(mutex_);
    buffers_.erase(rank);
  }

  std::shared_ptr<work> group_reduce(const std::vector<weighted_input>& inputs, float* out,
                                     std::size_t count) override {
    if (inputs.empty())
      return std::make_shared<completed_work>("group_reduce with no inputs");
    std::vector<const float*> sources;
    std::vector<float> weights;
    sources.reserve(inputs.size());
    weights.reserve(inputs.size());
    // Shared for the whole reduction: reductions run side by side, detach() waits for them.
    std::shared_lock<std::shared_mutex> reading(mutex_);
    for (const auto& input : inputs) {
      auto found = buffers_.find(input.rank);
      if (found == buffers_.end())
        return std::make_shared<completed_work>("rank " + std::to_string(input.rank) +
                                                " has no attached buffer");
      if (found->second.count != count)
        return std::make_shared<completed_work>("rank " + std::to_string(input.rank) +
                                                " attached " + std::to_string(found->second.count) +
                                                " floats, the reduction wants " +
                                                std::to_string(count));
      sources.push_back(found->second.data);
      weights.push_back(input.weight);
    }
    try {
      ops_.weighted_sum(out, sources.data(), weights.data(), static_cast<int>(sources.size()),
                        count);
      ops_.synchronize(); // on a GPU: done before the caller hands `out` on
    } catch (const std::exception& failure) {
      return std::make_shared<completed_work>(std::string("weighted sum failed: ") +
                                              failure.what());
    }
    return std::make_shared<completed_work>(std::string{});
  }

private:
  struct attached_buffer {
    const float* data = nullptr;
    std::size_t count = 0;
  };

  const kernels::ops& ops_;
  std::shared_mutex mutex_;
  std::unordered_map<int, attached_buffer> buffers_;
};

} // namespace

std::unique_ptr<backend> make_local_backend(const kernels::ops& ops) {
  return std::make_unique<local_backend>(ops);
}

} // namespace herd::comm
