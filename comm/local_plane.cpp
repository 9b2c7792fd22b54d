// The in-process data plane: group reductions read the workers' send buffers in place.
#include "comm/data_plane.hpp"

#include <algorithm>
#include <chrono>
#include <mutex>
#include <shared_mutex>
#include <string>
#include <unordered_map>
#include <utility>

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
    buffers_[rank] = {send_buffer, count, nullptr};
    return {};
  }

  // Waits for reductions in flight: they may be reading the buffer its owner is about to free.
  status detach(int rank) override {
    std::unique_lock<std::shared_mutex> exclusive(mutex_);
    buffers_.erase(rank);
    return {};
  }

  status attach_marks(int rank, std::shared_ptr<const gradient_marks> marks) override {
    std::unique_lock<std::shared_mutex> exclusive(mutex_);
    auto found = buffers_.find(rank);
    if (found == buffers_.end())
      return {outcome::invalid_argument,
              "rank " + std::to_string(rank) + " has no attached buffer"};
    if (marks && marks->count() != found->second.count)
      return {outcome::invalid_argument, "marks for " + std::to_string(marks->count()) +
                                             " floats on rank " + std::to_string(rank) +
                                             "'s buffer of " + std::to_string(found->second.count)};
    found->second.marks = std::move(marks);
    return {};
  }

  // It ends before it returns. The deadline bounds only the waits for buffers a backward pass
  // still writes.
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
    std::vector<const float*> sources; // each from the start of the whole buffer
    std::vector<float> weights;
    std::vector<std::pair<int, const gradient_marks*>> writing; // ranks a backward pass writes
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
      sources.push_back(found->second.data);
      weights.push_back(input.weight);
      if (found->second.marks && found->second.marks->writing())
        writing.emplace_back(input.rank, found->second.marks.get());
    }
    try {
      if (writing.empty())
        reduce_part(sources, weights, out, options.part_offset, options.part_offset + count,
                    options);
      else if (auto waited = reduce_in_buckets(sources, weights, writing, out, count, options);
               !waited.ok())
        return ended_work(waited);
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
    std::shared_ptr<const gradient_marks> marks; // null: nothing writes it while it is attached
  };

  // Floats [begin, end) of the whole buffers into `out`, which holds the part from
  // options.part_offset on.
  void reduce_part(std::vector<const float*> sources, const std::vector<float>& weights, float* out,
                   std::size_t begin, std::size_t end, const operation_options& options) const {
    for (auto& source : sources)
      source += begin;
    ops_.weighted_sum(out + (begin - options.part_offset), sources.data(), weights.data(),
                      static_cast<int>(sources.size()), end - begin);
  }

  // Some inputs are still being written by backward, which finishes them from the end: the part
  // is reduced bucket by bucket from its end, each once every input has it final. Buckets are cut
  // where options.buckets says in the whole buffer (on the kernels' block boundaries), and each
  // element's sum is the one a single pass computes (the kernel sums an element's inputs in one
  // order, wherever it starts).
  status reduce_in_buckets(const std::vector<const float*>& sources,
                           const std::vector<float>& weights,
                           const std::vector<std::pair<int, const gradient_marks*>>& writing,
                           float* out, std::size_t count, const operation_options& options) const {
    const auto wait = options.timeout.count() > 0 ? options.timeout : std::chrono::minutes(5);
    const auto deadline = gradient_marks::clock_type::now() + wait;
    const std::size_t first = options.part_offset;
    for (std::size_t end = first + count; end > first;) {
      const std::size_t begin = std::max(first, options.buckets.begin_before(end));
      for (const auto& [rank, marks] : writing)
        if (auto final_now = marks->wait_final_from(begin, deadline); !final_now.ok())
          return {final_now.kind(), "rank " + std::to_string(rank) + ": " + final_now.message()};
      reduce_part(sources, weights, out, begin, end, options);
      end = begin;
    }
    return {};
  }

  const kernels::ops& ops_;
  std::shared_mutex mutex_;
  std::unordered_map<int, attached_buffer> buffers_;
};

} // namespace

std::unique_ptr<data_plane> make_local_plane(const kernels::ops& ops) {
  return std::make_unique<local_plane>(ops);
}

} // namespace herd::comm
