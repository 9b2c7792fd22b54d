// The in-process data plane: group reductions read the workers' send buffers in place.
#include "comm/data_plane.hpp"

#include <mutex>
#include <shared_mutex>
#include <string>
#include <unordered_map>

namespace herd::comm {

namespace {

class local_plane final : public data_plane {
public:
  explicit local_plane(const kernels::ops& ops) : ops_(ops) {}

  std::string_view name() const override { return "local"; }
  bool supports(operation op) const override { return op != operation::broadcast; }
  const kernels::memory& memory() const override { return ops_.memory(); }

  status attach(int rank, const float* send_buffer, std::size_t count) override {
    std::unique_lock<std::shared_mutex> exclusive(mutex_);
    buffers_[rank] = {send_buffer, count};
    return {};
  }

  // Waits for reductions in flight: they may be reading the buffer its owner is about to free.
  status detach(int rank) override {
    std::unique_lock<std::shared_mutex> exclusive(mutex_);
    buffers_.erase(rank);
    return {};
  }

  // It ends before it returns, so the deadline has nothing to bound.
  std::shared_ptr<work> group_reduce(const std::vector<weighted_input>& inputs, const float* send,
                                     float* out, std::size_t count,
                                     const operation_options& options) override {
    auto bad_call = [](std::string why) {
      return ended_work({outcome::invalid_argument, std::move(why)});
    };
    if (inputs.empty())
      return bad_call("group_reduce with no inputs");
    if (send != nullptr)
      return bad_call("the local plane reads the attached send buffers; send must be null");
    if (const auto bad_part = part_error(count, options); !bad_part.empty())
      return bad_call(bad_part);
    const std::size_t whole = options.whole_count == 0 ? count : options.whole_count;
    std::vector<const float*> sources;
    std::vector<float> weights;
    sources.reserve(inputs.size());
    weights.reserve(inputs.size());
    // Shared for the whole reduction: reductions run side by side, detach() waits for them.
    std::shared_lock<std::shared_mutex> reading(mutex_);
    for (const auto& input : inputs) {
      auto found = buffers_.find(input.rank);
      if (found == buffers_.end())
        return bad_call("rank " + std::to_string(input.rank) + " has no attached buffer");
      if (found->second.count != whole)
        return bad_call("rank " + std::to_string(input.rank) + " attached " +
                        std::to_string(found->second.count) + " floats, the reduction wants " +
                        std::to_string(whole));
      sources.push_back(found->second.data + options.part_offset);
      weights.push_back(input.weight);
    }
    try {
      ops_.weighted_sum(out, sources.data(), weights.data(), static_cast<int>(sources.size()),
                        count);
      ops_.synchronize(); // on a GPU: done before the caller hands `out` on
    } catch (const std::invalid_argument& failure) { // a precondition of the kernel
      return bad_call(std::string("weighted sum failed: ") + failure.what());
    } catch (const std::exception& failure) {
      return ended_work({outcome::failed, std::string("weighted sum failed: ") + failure.what()});
    }
    return ended_work({});
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

std::unique_ptr<data_plane> make_local_plane(const kernels::ops& ops) {
  return std::make_unique<local_plane>(ops);
}

} // namespace herd::comm
