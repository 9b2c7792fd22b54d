// The WAGMA-SGD butterfly schedule (docs/algorithms.md, "WAGMA-SGD"; Li et al., "Breaking
// (Global) Barriers in Parallel Stochastic Optimization with Wait-Avoiding Group Averaging", IEEE
// TPDS 2021, arXiv 2005.00124): which workers average their models together at each step. A plain
// class, no actors.
#pragma once

#include <cstdint>
#include <optional>
#include <vector>

namespace herd::policy {

/// Groups P workers (indices 0..P-1) into groups of S = 2^g members per step. With P' = P rounded
/// up to a power of two and L = log2 P', step t groups the workers whose indices agree on every
/// bit outside D_t = {(t*g + r) mod L : r = 0..g-1}; the varying bits walk round the index, so
/// consecutive steps mix every worker's model into every other's.
///
/// When P is not a power of two, the indices P..P'-1 are absent members: a group is its
/// power-of-two group with those removed, so it can be smaller than S, down to one worker (a
/// group of one is reported as it is; averaging it is a no-op). No group is empty: its index with
/// every varying bit clear is at most any of its members', so it is present.
class butterfly_schedule {
public:
  /// `group_size` must be a power of two with 1 <= group_size <= P'; 0 picks
  /// default_group_size(workers). Throws std::invalid_argument on a bad value.
  butterfly_schedule(int workers, int group_size);

  /// sqrt(P') rounded down to a power of two, i.e. 2^floor(L/2) (for odd L the two candidates are
  /// equally far from sqrt(P') on a log scale; the smaller group waits less), but at least 2 when
  /// workers >= 2 so that models mix; 1 for one worker. 4 -> 2, 8 -> 2, 16 -> 4, 64 -> 8.
  static int default_group_size(int workers);

  int workers() const { return workers_; }
  int group_size() const { return group_size_; }
  /// L = log2 P'.
  int bits() const { return bits_; }
  /// g = log2 S.
  int group_bits() const { return group_bits_; }

  /// The index bits that vary within step t's groups (D_t), ascending; g of them.
  std::vector<int> varying_bits(std::uint64_t step) const;

  /// Step t's groups: a partition of 0..P-1, each group ascending, the groups ordered by their
  /// smallest member.
  std::vector<std::vector<int>> groups(std::uint64_t step) const;

  /// The group of `worker` (0 <= worker < P) at step t, ascending.
  std::vector<int> group_of(int worker, std::uint64_t step) const;

  /// The number of consecutive steps within which an update made at any worker reaches every
  /// worker, whichever step it starts at; nullopt when it never does (S = 1 with P >= 2), 0 for
  /// one worker. For P a power of two this is ceil(L/g), and no fewer steps suffice. Otherwise
  /// absent members can cut the shortest path, and ceil(L/g) steps are not always enough (P = 3,
  /// S = 2: from worker 2 at step 0, {2} then {0,2}); it is then 2*ceil(L/g) - 1, an upper bound
  /// that is reached for P = P'/2 + 1 (see butterfly.cpp for why it holds).
  std::optional<int> mixing_steps() const;

private:
  // The index bits in D_t, as a mask.
  std::uint32_t varying_mask(std::uint64_t step) const;
  // The members of the group whose indices agree with `base` outside `mask`, ascending.
  std::vector<int> members(std::uint32_t base, std::uint32_t mask) const;

  int workers_;
  int group_size_;
  int bits_;       // L
  int group_bits_; // g
};

} // namespace herd::policy
