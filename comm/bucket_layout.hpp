// Where a gradient buffer is cut into buckets (comm.bucket-mb): the parts a reduction reads, from
// the end of the buffer, each as soon as the backward pass writing it has made it final. Every
// member of a reduction cuts the same buffer at the same places, so a layout is a value that all of
// them compute alike from the model and the settings.
#pragma once

#include <cstddef>
#include <memory>
#include <vector>

namespace herd::comm {

class bucket_layout {
public:
  /// Cuts lie on multiples of this many floats (4 KiB), where the kernels' vector loops over the
  /// whole buffer would begin a block, so that a bucket's sums are those of the whole.
  static constexpr std::size_t alignment = 1024;

  /// No buckets: a reduction reads its part at once, once all of it is final.
  bucket_layout() = default;
  /// Buckets of a buffer of `count` floats (> 0) beginning at 0 and at each of `cuts`, which
  /// ascend strictly and lie within (0, count). Throws std::invalid_argument otherwise.
  bucket_layout(std::size_t count, std::vector<std::size_t> cuts);

  /// The buckets for a buffer of `count` floats whose backward pass makes the parts from
  /// `final_points` on final one after another (the offsets model::gradient_final_points gives):
  /// from the end, each bucket reaches down to the highest of those points, rounded up to a
  /// multiple of `alignment`, that leaves it at least `floats` floats (the first bucket takes what
  /// remains). A bucket is then final as soon as the layers it holds are, instead of waiting for
  /// a layer that a fixed cut falls into. Points that round to 0 or to `count` or beyond cut
  /// nothing; without points the buffer is one bucket. `floats` > 0.
  static bucket_layout for_backward(std::size_t count, std::size_t floats,
                                    const std::vector<std::size_t>& final_points);

  /// Whether there are buckets at all (a default layout has none).
  bool empty() const { return count_ == 0; }
  /// The floats of the buffer cut (0 without buckets).
  std::size_t count() const { return count_; }
  /// How many buckets: the cuts and one (0 without buckets).
  std::size_t size() const { return empty() ? 0 : cuts().size() + 1; }
  /// The cuts, ascending, without 0.
  const std::vector<std::size_t>& cuts() const;
  /// Where the bucket that holds float `end - 1` begins: the highest cut below `end`, or 0 (also
  /// without buckets). `end` > 0.
  std::size_t begin_before(std::size_t end) const;

  friend bool operator==(const bucket_layout& a, const bucket_layout& b) {
    return a.count_ == b.count_ && a.cuts() == b.cuts();
  }

private:
  std::size_t count_ = 0;
  std::shared_ptr<const std::vector<std::size_t>> cuts_; // shared: operations copy the layout
};

} // namespace herd::comm
