// Gradient bucket layouts; see bucket_layout.hpp.
#include "comm/bucket_layout.hpp"

#include <algorithm>
#include <stdexcept>
#include <string>

namespace herd::comm {

bucket_layout::bucket_layout(std::size_t count, std::vector<std::size_t> cuts) : count_(count) {
  if (count == 0)
    throw std::invalid_argument("gradient buckets of an empty buffer");
  for (std::size_t i = 0; i < cuts.size(); ++i)
    if (cuts[i] == 0 || cuts[i] >= count || (i > 0 && cuts[i] <= cuts[i - 1]))
      throw std::invalid_argument("gradient bucket cut " + std::to_string(i) + " at float " +
                                  std::to_string(cuts[i]) + ": cuts ascend strictly within (0, " +
                                  std::to_string(count) + ")");
  cuts_ = std::make_shared<const std::vector<std::size_t>>(std::move(cuts));
}

bucket_layout bucket_layout::for_backward(std::size_t count, std::size_t floats,
                                          const std::vector<std::size_t>& final_points) {
  if (floats == 0)
    throw std::invalid_argument("gradient buckets of 0 floats");
  std::vector<std::size_t> candidates; // ascending, within (0, count)
  for (const std::size_t point : final_points) {
    const std::size_t rounded = (point + alignment - 1) / alignment * alignment;
    if (rounded > 0 && rounded < count)
      candidates.push_back(rounded);
  }
  std::sort(candidates.begin(), candidates.end());
  candidates.erase(std::unique(candidates.begin(), candidates.end()), candidates.end());

  std::vector<std::size_t> cuts; // descending while found
  for (std::size_t end = count; end > floats;) {
    // The highest candidate at or below end - floats.
    const auto above = std::upper_bound(candidates.begin(), candidates.end(), end - floats);
    if (above == candidates.begin())
      break;
    end = *std::prev(above);
    cuts.push_back(end);
  }
  std::reverse(cuts.begin(), cuts.end());
  return bucket_layout(count, std::move(cuts));
}

const std::vector<std::size_t>& bucket_layout::cuts() const {
  static const std::vector<std::size_t> none;
  return cuts_ ? *cuts_ : none;
}

std::size_t bucket_layout::begin_before(std::size_t end) const {
  const auto& all = cuts();
  const auto at_or_above = std::lower_bound(all.begin(), all.end(), end);
  return at_or_above == all.begin() ? 0 : *std::prev(at_or_above);
}

} // namespace herd::comm
